"""m006_projects: placeholder, filled by its owner."""


def up(conn):
    pass
