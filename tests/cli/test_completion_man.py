"""`wsctl completion`, completion of ids and names from the workspace in real shells, `wsctl man`,
and the man pages installed by a wheel (`man wsctl` after pip install)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import base_env, run_wsctl
from tests.vault_helpers import install_service, make_credential

ROOT = Path(__file__).resolve().parents[2]
SHELLS = {"bash": "completions/wsctl.bash", "zsh": "completions/_wsctl", "fish": "completions/wsctl.fish"}


def _shell(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed here, so completion in it cannot be run")
    return path


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_completion_prints_the_generated_script(home, shell):
    r = run_wsctl(["completion", shell], base_env(home))
    assert r.out == (ROOT / SHELLS[shell]).read_text()
    assert not (home / "data").exists() and not list(home.glob("**/workspace.db"))  # nothing was made


def test_completion_of_an_unknown_shell_is_a_usage_error(home):
    r = run_wsctl(["completion", "tcsh"], base_env(home), expect=2)
    assert "bash" in r.err and "Traceback" not in r.err


# ------------------------------------------------------------------ values from the workspace

def _shim(tmp_path: Path) -> Path:
    """A `wsctl` on PATH for the shells, running this checkout's code."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "wsctl"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m workspacectl "$@"\n')
    shim.chmod(0o755)
    return bin_dir


@pytest.fixture
def filled(backend, tmp_path):
    """A workspace holding a credential, two specialists (one name with a space) and a skill."""
    install_service(backend.workspace, 'service = "compsvc"\nname = "Comp"\ndescription = "d"\n'
                                       'credentialType = "apiKey"\nenvVars = { apiKey = "COMP_KEY" }\n')
    cred = make_credential(backend.workspace, backend.owner["id"], "compsvc", {"apiKey": "sk-COMP-CANARY"})
    ops = backend.wsctl("specialist", "create", "ops-desk", "--json").json["project"]
    team = backend.wsctl("specialist", "create", "Ops Team", "--json").json["project"]
    # The time limit is behaviour tested on its own below; here the values must come however busy
    # the machine is (a remote completion starts Python and asks a server: seconds under load).
    env = {**backend.env, "PATH": f"{_shim(tmp_path)}{os.pathsep}{os.environ['PATH']}",
           "WSCTL_COMPLETION_SECONDS": "600"}
    return env, cred, ops, team


BASH_DRIVER = r'''
source {script}
c() {{ read -ra COMP_WORDS <<< "$1"; [[ $1 == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1));
      COMPREPLY=(); _wsctl; printf "%s=>%s\n" "$1" "$(printf "%s\n" "${{COMPREPLY[@]}}" | sort | tr "\n" " " | sed "s/ $//")"; }}
'''


def test_bash_completes_ids_and_names_from_the_workspace(filled):
    env, cred, ops, team = filled
    cases = {
        "wsctl specialist show ": " ".join(sorted([ops["id"], team["id"], "ops-desk"])),  # "Ops Team": a space
        "wsctl specialist show ops": "ops-desk",
        "wsctl specialist show ops-desk ": "",                        # one ID only
        "wsctl specialist pin x --into proj": " ".join(sorted([ops["id"], team["id"]])),
        "wsctl vault show c": " ".join(sorted([cred["id"], "compsvc"])),  # the id and the credential's name
        "wsctl vault env x ": " ".join(sorted([cred["id"], "compsvc"])),  # ID...: every position; its name too
        "wsctl vault token cred_x --format ": "env json value",
    }
    script = BASH_DRIVER.format(script=ROOT / SHELLS["bash"]) + "".join(f"c '{k}'\n" for k in cases)
    p = subprocess.run([_shell("bash"), "--norc", "--noprofile"], input=script, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert dict(line.split("=>", 1) for line in p.stdout.splitlines()) == cases


def test_fish_completes_ids_and_names_with_what_they_are(filled):
    env, cred, _ops, team = filled
    fish = _shell("fish")
    p = subprocess.run([fish, "--no-config", "-c", f"source {ROOT / SHELLS['fish']}; "
                        "complete -C'wsctl specialist show Ops'; echo ==; complete -C'wsctl vault show '"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    first, second = p.stdout.split("==\n")
    assert first.splitlines() == [f"Ops Team\t{team['id']}"]
    assert sorted(second.splitlines()) == sorted([f"{cred['id']}\tcompsvc", f"compsvc\t{cred['id']}"])


def test_zsh_value_function_describes_ids_and_names(filled):
    env, cred, ops, _team = filled
    zsh = _shell("zsh")
    script = (f"source <(sed '$d' {ROOT / SHELLS['zsh']})\n"  # the functions, without the final call
              "_describe() { print -rl -- \"${(@P)4}\" }\n"    # what would be offered
              "words=(wsctl); PREFIX=ops-; _wsctl_dynamic specialist\n"
              "PREFIX=cred; _wsctl_dynamic credential\n")
    p = subprocess.run([zsh, "-f", "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [f"ops-desk:{ops['id']}", f"{cred['id']}:compsvc"]


def test_complete_values_lists_workflows(backend):
    from tests.project_helpers import make_workflow

    wf = make_workflow(backend, name="triage-flow")
    r = backend.wsctl("complete-values", "workflow", "tri", env={"WSCTL_COMPLETION_SECONDS": "600"})
    assert r.out.splitlines() == [f"triage-flow\t{wf['id']}"]
    r = backend.wsctl("complete-values", "workflow", env={"WSCTL_COMPLETION_SECONDS": "600"})
    assert sorted(r.out.splitlines()) == sorted([f"{wf['id']}\ttriage-flow", f"triage-flow\t{wf['id']}"])


def test_complete_values_never_makes_a_workspace(home):
    env = base_env(home)
    r = run_wsctl(["complete-values", "credential"], env)
    assert r.out == "" and r.err == ""
    assert not [p for p in home.rglob("*") if p.is_file() or p.name == "workspace"]


@pytest.mark.parametrize("limit", [None, "0.5", "not-a-number"])
def test_complete_values_gives_up_on_a_server_that_never_answers(home, limit):
    """A listening socket that accepts nothing: the completion ends (empty, silent) at its time
    limit, the default or WSCTL_COMPLETION_SECONDS (a bad value means the default); it does not
    hang the shell. No clock is read here: the bound is the harness's own timeout."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        env = {**base_env(home), "WSCTL_SERVER": f"http://127.0.0.1:{s.getsockname()[1]}", "WSCTL_TOKEN": "x"}
        if limit is not None:
            env["WSCTL_COMPLETION_SECONDS"] = limit
        r = run_wsctl(["complete-values", "specialist"], env, timeout=120)
    assert r.code == 0 and r.out == "" and r.err == ""


def test_complete_values_waits_as_long_as_it_is_allowed(home):
    """A server that answers only after the default limit has passed: with WSCTL_COMPLETION_SECONDS
    long enough the values still come (the answer is held until the client has certainly waited
    past 2 s of its own clock: the server waits for the request, then for 3 s)."""
    import threading

    body = b'{"projects":[{"id":"proj_late","name":"late-one","description":"d"}],"nextCursor":null}'
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)

        def answer_late():
            conn, _ = s.accept()
            with conn:
                conn.recv(65536)
                threading.Event().wait(3)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)

        t = threading.Thread(target=answer_late, daemon=True)
        t.start()
        env = {**base_env(home), "WSCTL_SERVER": f"http://127.0.0.1:{s.getsockname()[1]}", "WSCTL_TOKEN": "x",
               "WSCTL_COMPLETION_SECONDS": "600"}
        r = run_wsctl(["complete-values", "specialist"], env, timeout=120)
        t.join(30)
    assert r.out.splitlines() == ["proj_late\tlate-one", "late-one\tproj_late"]


# ------------------------------------------------------------------ man

def test_man_shows_a_page_and_its_roff(home):
    env = base_env(home)
    r = run_wsctl(["man", "vault", "inject", "--roff"], env)
    assert r.out.startswith('.\\" Generated') and "wsctl-vault-inject \\- Fill" in r.out
    if shutil.which("man"):
        r = run_wsctl(["man", "vault", "inject"], {**env, "MANPAGER": "cat", "PAGER": "cat"})
        assert "wsctl-vault-inject" in r.out and "--in-file" in r.out.replace("‐", "-")
    r = run_wsctl(["man", "vault", "nope"], env, expect=5)
    assert r.err.startswith("error: No manual page wsctl-vault-nope")


def test_the_wheel_installs_man_pages_and_completions(tmp_path):
    """`man wsctl` works after pip install: the pages are the wheel's data, under share/man/man1."""
    pytest.importorskip("hatchling", reason="building the wheel needs hatchling (a test extra)")
    out = tmp_path / "wheel"
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    wheel = next(out.glob("workspacectl-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    data = [n.split(".data/data/", 1)[1] for n in names if ".data/data/" in n]
    pages = sorted(n for n in data if n.startswith("share/man/man1/"))
    assert "share/man/man1/wsctl.1" in pages and "share/man/man1/wsctl-vault-inject.1" in pages
    assert len(pages) == len(list((ROOT / "man").glob("wsctl*.1")))
    assert {"share/bash-completion/completions/wsctl", "share/zsh/site-functions/_wsctl",
            "share/fish/vendor_completions.d/wsctl.fish"} <= set(data)
    # a throwaway environment of its own: installing with --prefix into a shared one would first
    # uninstall the workspacectl already installed there. It gets no pip of its own (ensurepip is
    # most of this test's time): this pip installs into it (--python).
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=600)
    p = subprocess.run([sys.executable, "-m", "pip", "--python", str(env_dir / "bin" / "python"), "install",
                        "--no-deps", "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    man1 = env_dir / "share" / "man" / "man1"
    assert (man1 / "wsctl.1").read_text() == (ROOT / "man/wsctl.1").read_text()
    assert (env_dir / "share/bash-completion/completions/wsctl").read_text() == (ROOT / SHELLS["bash"]).read_text()
    if shutil.which("man"):
        found = subprocess.run(["man", "-w", "wsctl"], env={**os.environ, "MANPATH": str(env_dir / "share/man")},
                               capture_output=True, text=True, timeout=60)
        assert found.stdout.strip() == str(man1 / "wsctl.1")


# ------------------------------------------------------------------ local files

FILE_CASES = {   # a file may be in a folder: folders are offered too
    "wsctl vault inject -i tp": "tpl.env tpls",                # -i/--in-file: a file
    "wsctl vault inject --in-file tp": "tpl.env tpls",
    "wsctl vault inject -r x -o tp": "tpl.env tpls",           # -o FILE
    "wsctl vault proxy c GET /x --input tp": "tpl.env tpls",
    "wsctl specialist files bundle download x -o tp": "tpl.env tpls",
    "wsctl memory propose me note --file tp": "tpl.env tpls",
    "wsctl specialist memory set ops tp": "tpl.env tpls",      # FILE after a specialist
    "wsctl skill put s SKILL.md tp": "tpl.env tpls",
    "wsctl specialist files bundle upload ops tp": "tpl.env tpls",  # DIR or FILE.tar.gz
    "wsctl admin copy-workspace tp": "tpls",                   # folders only
}


def test_bash_completes_local_files_for_file_options_and_arguments(tmp_path):
    """No workspace is asked: the script knows which options and arguments name local files."""
    (tmp_path / "tpl.env").write_text("X={{ wsctl://a/b }}\n")
    (tmp_path / "tpls").mkdir()
    (tmp_path / "other.txt").write_text("")
    script = BASH_DRIVER.format(script=ROOT / SHELLS["bash"]) + "".join(f"c '{k}'\n" for k in FILE_CASES)
    p = subprocess.run([_shell("bash"), "--norc", "--noprofile"], input=script, cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert dict(line.split("=>", 1) for line in p.stdout.splitlines()) == FILE_CASES


def test_fish_completes_files_for_the_template(tmp_path):
    (tmp_path / "tpl.env").write_text("")
    (tmp_path / "tpls").mkdir()
    p = subprocess.run([_shell("fish"), "--no-config", "-c", f"source {ROOT / SHELLS['fish']}; "
                        "complete -C'wsctl vault inject -i tp'; echo ==; complete -C'wsctl admin copy-workspace tp'"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    files, dirs = p.stdout.split("==\n")
    assert sorted(files.split()) == ["tpl.env", "tpls/"] and dirs.split() == ["tpls/"]


def test_zsh_completes_files_for_the_template():
    """zsh's _arguments specs: _files for a file, `_files -/` for a folder."""
    zsh = (ROOT / SHELLS["zsh"]).read_text()
    assert "'(--in-file -i)-i[The template (default\\: stdin).]:template:_files'" in zsh
    assert "':source:_files -/'" in zsh


def test_a_renamed_credential_completes_by_its_new_name_at_once(backend):
    """The completion cache (cli/common/completion_cache.py) is dropped by `vault rename`, so the new name
    completes on the next <TAB>, not a minute later; the cache holds names and ids, never a secret."""
    install_service(backend.workspace, 'service = "compsvc"\nname = "Comp"\ndescription = "d"\n'
                                       'credentialType = "apiKey"\nenvVars = { apiKey = "COMP_KEY" }\n')
    cred = make_credential(backend.workspace, backend.owner["id"], "compsvc", {"apiKey": "sk-COMP-CANARY"})
    env = {"WSCTL_COMPLETION_SECONDS": "600"}
    r = backend.wsctl("complete-values", "credential", env=env)
    assert sorted(r.out.splitlines()) == sorted([f"{cred['id']}\tcompsvc", f"compsvc\t{cred['id']}"])
    cached = list((backend.home / "cache" / "completion").glob("*-credential.tsv"))
    assert len(cached) == 1 and "compsvc" in cached[0].read_text()
    for f in cached[0].parent.iterdir():
        assert "sk-COMP-CANARY" not in f.read_text()
    backend.wsctl("vault", "rename", "compsvc", "stripe-test")
    assert backend.wsctl("complete-values", "credential", "stripe", env=env).out == f"stripe-test\t{cred['id']}\n"
    assert backend.wsctl("complete-values", "credential", "comp", env=env).out == ""
