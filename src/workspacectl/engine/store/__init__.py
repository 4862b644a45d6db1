"""SQL lives here, one module per area, so another store (PostgreSQL) can follow."""


def name_clause(column: str, named: tuple[str, str] | None) -> tuple[str, dict]:
    """A list's `?name=` filter (engine/pagination.name_filter): the SQL to add after a WHERE, and
    its named parameters. lower() folds ASCII only on both stores (SQLite's own; PostgreSQL's
    under the "C" collation of our text columns), as the ASCII-lowered parameter does."""
    if named is None:
        return "", {}
    return (f" AND ({column} = :name_exact OR lower({column}) = :name_folded)",
            {"name_exact": named[0], "name_folded": named[1]})
