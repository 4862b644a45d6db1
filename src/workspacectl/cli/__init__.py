"""The `wsctl` command line."""
