"""`wsctl workflow`: workflows and apps. commands.py holds its Typer app and commands."""
