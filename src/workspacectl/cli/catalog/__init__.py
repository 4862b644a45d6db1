"""`wsctl catalog`: integrations and operations the workspace can use. commands.py holds its Typer app and commands."""
