"""Identity: authentication, members, API keys, workspace key rotation."""
