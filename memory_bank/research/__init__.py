"""The research loop for multi-hop questions: plan -> search -> integrate -> reflect (seed 003)."""
