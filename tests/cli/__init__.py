"""Tests of the CLI as a whole (start-up, exit codes, config, docs); a group's own in tests/cli/<group>/."""
