"""The vault: credentials, connections, OAuth, token refresh, sharing and probes."""
