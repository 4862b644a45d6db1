"""m005_connections: placeholder, filled by its owner."""


def up(conn):
    pass
