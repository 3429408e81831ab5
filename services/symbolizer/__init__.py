"""The symbolizer: debug information by build ID, and addresses turned into frames."""
