"""workspacectl: the `wsctl` command and the workspace platform engine behind it."""

__version__ = "0.1.0"
