"""`wsctl vault`: connected accounts: list, connect, issue audited tokens, run with secrets.

commands.py holds the group's Typer app and most commands; the bigger ones live in their own
modules, imported when the command runs: connect.py (`vault connect`), env.py (the variables of
`vault env` and `vault run`), inject.py (`vault inject`), proxy.py (`vault proxy`), run.py
(`vault run`), watch.py (`vault run --watch`); requests.py is the token request they share.
"""
