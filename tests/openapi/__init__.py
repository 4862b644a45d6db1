"""Tests of the OpenAPI document."""
