"""`wsctl memory`: workspace and member memory, changed through proposals. commands.py holds its Typer app and commands."""
