"""`wsctl keys`: personal and platform API keys. commands.py holds its Typer app and commands."""
