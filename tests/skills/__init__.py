"""Tests of skills."""
