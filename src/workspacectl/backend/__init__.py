"""Backends the CLI talks to: local (engine in-process) and remote (HTTP)."""
