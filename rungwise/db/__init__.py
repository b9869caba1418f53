"""Database backends of the project (see rungwise/db/postgresql)."""
