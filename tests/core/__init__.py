"""Tests of what every area shares (dispatch, scopes, crypto, the test fixtures)."""
