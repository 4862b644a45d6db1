"""`wsctl profile`: profiles: list, show, switch, rename and remove them. commands.py holds its Typer app and commands."""
