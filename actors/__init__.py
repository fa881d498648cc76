"""Ray actors holding state, and the Ray Serve application."""
