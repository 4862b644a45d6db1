"""`wsctl skill`: skills: SKILL.md bundles, versions, publishing.

commands.py holds the group's Typer app; publish.py registers `skill validate | publish | pull`
on it, over transfer.py (packing a folder, uploads and downloads with progress).
"""
