"""Tests of `wsctl profile` beside cli/profile/."""
