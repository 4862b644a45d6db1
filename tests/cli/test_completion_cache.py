"""Name completion answers from a short-lived local cache (cli/common/completion_cache.py), on every door:
what it answers is the cache's until a command changes something through the CLI or the entry is
a minute old; it is per identity and holds no secret. Speed is measured in bench/completion.py."""
from __future__ import annotations

import os
import stat
import time


def _names(backend, kind="specialist", env=None) -> set[str]:
    out = backend.wsctl("complete-values", kind, env={"WSCTL_COMPLETION_SECONDS": "600", **(env or {})}).out
    return {line.split("\t")[0] for line in out.splitlines() if not line.startswith("proj_")}


def test_completion_cache_is_used_dropped_by_writes_and_ages(backend):
    cache = backend.home / "cache" / "completion"
    backend.ok("POST", "/v1/projects", {"name": "alpha"})
    assert _names(backend) == {"alpha"}
    files = list(cache.iterdir())
    assert [f.name.endswith("-specialist.tsv") for f in files] == [True]
    # made behind the CLI's back (straight through the API): the cached answer stands
    backend.ok("POST", "/v1/projects", {"name": "beta"})
    assert _names(backend) == {"alpha"}
    # a CLI command that changes something drops the cache: the next <TAB> asks again
    backend.wsctl("specialist", "create", "gamma")
    assert not list(cache.iterdir())
    assert _names(backend) == {"alpha", "beta", "gamma"}
    # an entry older than a minute is not used
    backend.ok("POST", "/v1/projects", {"name": "delta"})
    assert _names(backend) == {"alpha", "beta", "gamma"}
    old = time.time() - 120
    for f in cache.iterdir():
        os.utime(f, (old, old))
    assert _names(backend) == {"alpha", "beta", "gamma", "delta"}
    # reading (GET) commands keep it
    backend.wsctl("specialist", "list")
    assert list(cache.iterdir())
    # it holds ids and names only: no secret, not readable by others
    for f in cache.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600 and stat.S_IMODE(cache.stat().st_mode) == 0o700
        text = f.read_text()
        assert backend.owner_token not in text and backend.owner_token not in f.name
        assert backend.owner_token[len("ws_session_"):][:12] not in text


def test_completion_cache_is_per_identity(backend):
    """Another member's completion is never answered from the owner's entry: each sees its own."""
    pid = backend.ok("POST", "/v1/projects", {"name": "owners-only"})["project"]["id"]
    assert _names(backend) == {"owners-only"}
    bob = backend.add_member("bob@example.com")
    bob_key = backend.key("personal", ["projects:manage"], bob["id"])
    env = {"WSCTL_TOKEN": "", "WSCTL_API_KEY": bob_key}
    assert _names(backend, env=env) == set()
    backend.ok("PUT", f"/v1/projects/{pid}/grants", {"membershipId": bob["id"], "role": "viewer"})
    backend.wsctl("specialist", "list", "--json")   # a read: both entries stay
    assert _names(backend, env=env) == set()        # bob's own (cached) entry
    backend.wsctl("specialist", "edit", pid, "--description", "shared now")   # a write drops both
    assert _names(backend, env=env) == {"owners-only"}
