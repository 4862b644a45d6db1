"""What every command group shares: the backend a command talks to (context, state), output,
name lookup (refs), option types and the command class (choices, usage), config, paths and
secrets on the client, --json FIELDS/--jq/--limit (scripting), the first-use workspace, the
completion cache and folder syncing."""
