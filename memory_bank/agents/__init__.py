"""The agent roles (memorize, readme, ...), one module per role."""
