"""Placeholder: filled in by the engineer who owns this area."""


def up(conn):
    pass
