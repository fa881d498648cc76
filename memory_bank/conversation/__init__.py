"""Live conversation memory in three tiers (seed 004): working, episodic and semantic."""
