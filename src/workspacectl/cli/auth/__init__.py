"""`wsctl auth`: sign in to a server, show who you are, sign out. commands.py holds its Typer app and commands."""
