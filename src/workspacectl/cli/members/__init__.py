"""`wsctl members`: members of the workspace and their login codes. commands.py holds its Typer app and commands."""
