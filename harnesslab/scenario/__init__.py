"""Scenarios in: the typed schema, the YAML loader, settings layering and session steps."""
