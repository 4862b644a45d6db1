"""`wsctl trigger`: trigger providers that start workflows. commands.py holds its Typer app and commands."""
