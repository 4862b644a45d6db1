"""The scopes an API key may hold, by kind (CONTRACT §2): the words both sides of the API use.
engine/scopes.py builds the route table on them; the CLI offers them as choices."""
from __future__ import annotations

PLATFORM_SCOPES = ("vault:read", "vault:token", "vault:connect", "vault:manage", "docs:read")
PERSONAL_SCOPES = ("projects:manage", "memory:manage", "skills:manage", "triggers:manage")
KIND_SCOPES = {"platform": PLATFORM_SCOPES, "personal": PERSONAL_SCOPES}
