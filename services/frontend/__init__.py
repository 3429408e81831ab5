"""The frontend: the web UI and one address for the whole API."""
