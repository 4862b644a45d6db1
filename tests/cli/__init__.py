"""Tests of the CLI as a whole (start-up, exit codes, config, docs)."""
