"""`wsctl specialist`: specialists (projects): workflows, apps, skills and files.

commands.py holds the group's Typer app; memory.py (`specialist memory`) and files.py
(`specialist files`) are its sub-groups; refs.py turns a specialist's id or name into its route
(also used by `wsctl workflow`).
"""
