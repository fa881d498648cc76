"""The facades a process holds: `MemoryBank` (a store: add, ask, research, sessions) and
`QueryService` (a store's read side, which a Serve replica holds)."""
