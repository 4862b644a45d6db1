"""`wsctl vault run --watch` on every door: the command restarts (SIGTERM, then the new values)
when its credential's key is replaced, driven by the event feed; a rename of another credential
does not restart it. Waits are for files the command writes (states), never for a time."""
from __future__ import annotations

import hashlib
import signal
import subprocess
import sys

import pytest

from tests.conftest import WAIT_LIMIT, WSCTL, wait_until
from tests.vault_helpers import (
    APIKEY_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
)

pytestmark = pytest.mark.usefixtures("canary_scan")

# The command: writes run-N with the sha256 of its key (never the key: files are scanned for canaries),
# then waits; on SIGTERM it appends "term" to its file and exits 0.
CHILD = """
import hashlib, os, signal, sys, time
out = sys.argv[1]
n = len([f for f in os.listdir(out) if f.startswith("run-")]) + 1
path = os.path.join(out, f"run-{n}")
def term(*_):
    with open(path, "a") as f:
        f.write(" term")
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
with open(path + ".tmp", "w") as f:
    f.write(hashlib.sha256(os.environ["KEYSVC_API_KEY"].encode()).hexdigest())
os.rename(path + ".tmp", path)
while True:
    time.sleep(60)
"""


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def test_watch_restarts_on_a_changed_key(backend, provider, tmp_path):
    install_service(backend.workspace, APIKEY_TOML.format(base=provider.url))
    cred = make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-first"})
    other = make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-other"})
    out = tmp_path / "runs"
    out.mkdir()
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    argv = [*WSCTL, "vault", "run", cred["id"], "--reason", "watch test", "--watch", "--watch-interval", "0.2",
            "--", sys.executable, str(child), str(out)]
    with subprocess.Popen(argv, env=backend.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            def run(n: int) -> str:
                return (out / f"run-{n}").read_text() if (out / f"run-{n}").exists() else ""

            wait_until(lambda: run(1), "the command started", proc)
            assert run(1) == digest("sk-CANARY-first")
            backend.ok("PATCH", f"/v1/vault/credentials/{other['id']}", {"name": "not-watched"})
            backend.ok("PUT", f"/v1/vault/credentials/{other['id']}/data", {"apiKey": "sk-CANARY-other-2"})
            backend.ok("PUT", f"/v1/vault/credentials/{cred['id']}/data", {"apiKey": "sk-CANARY-second"})
            wait_until(lambda: run(2), "the command restarted", proc)
            assert run(2) == digest("sk-CANARY-second")
            assert run(1) == digest("sk-CANARY-first") + " term"   # the first run was stopped with SIGTERM
            assert not (out / "run-3").exists()   # the other credential's changes restarted nothing
            proc.send_signal(signal.SIGTERM)      # forwarded to the command, which exits 0
            stdout, stderr = proc.communicate(timeout=WAIT_LIMIT)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, stderr
    assert run(2).endswith(" term") and "restarted with its new values" in stderr
    assert "CANARY" not in stdout + stderr
    log = backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
    assert [e["reason"] for e in log if e["outcome"] == "issued"] == ["watch test", "watch test"]

