"""Tests of `wsctl vault` beside cli/vault/ (the vault through every door is in tests/vault/)."""
