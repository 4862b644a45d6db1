"""SQL lives here, one module per area, so another store (PostgreSQL) can follow."""
