"""`wsctl admin`: workspace administration (key rotation). commands.py holds its Typer app and commands."""
