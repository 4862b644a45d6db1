"""`wsctl webhooks`: signed webhook subscriptions to the event feed. commands.py holds its Typer app and commands."""
