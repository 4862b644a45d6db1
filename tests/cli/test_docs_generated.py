"""completions/ and man/ are generated from the command tree (CONTRACT §10) and kept current.

In-process except one short shell per completion script: no wsctl subprocess, no server.
"""
from __future__ import annotations

import enum
import re
import shutil
import subprocess
from pathlib import Path
from typing import Annotated

import pytest
import typer

from workspacectl import docgen
from workspacectl.docgen.tree import load_tree
from workspacectl.engine import db

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = f"cd {ROOT} && .venv/bin/{docgen.REGENERATE}"


@pytest.fixture(scope="module")
def tree():
    return load_tree()


@pytest.fixture(scope="module")
def files(tree):
    return docgen.render(tree)


def test_committed_completions_and_man_pages_are_current(tree, files):
    changes = docgen.diff(ROOT, files)
    assert not changes, (f"completions/ or man/ is out of date: run `{REGENERATE}` and commit the result.\n  "
                         + "\n  ".join(changes))
    assert docgen.render(tree) == files, "generation is not deterministic"
    # one page per group and per command, and each script names every command
    pages = {f"man/{n.page}.1" for n in tree.walk()}
    assert pages == {f for f in files if f.startswith("man/")}
    assert {"man/wsctl.1", "man/wsctl-vault.1", "man/wsctl-vault-token.1", "man/wsctl-auth-login.1"} <= pages
    for script in docgen.COMPLETION_FILES:
        for node in tree.walk():
            if node.path:
                assert node.path[-1] in files[script], f"{script} lacks `{node.name}`"


def test_every_command_option_and_argument_has_help(tree):
    missing = []
    for node in tree.walk():
        if not node.help.strip():
            missing.append(f"`{node.name}` (its docstring, or help= in add_typer)")
        for p in node.options + node.arguments:
            if not p.help.strip():
                missing.append(f"`{node.name}` {p.names[0] if p.names else p.metavar} (help=...)")
    assert not missing, "commands without help text:\n  " + "\n  ".join(missing)


def test_man_pages_have_every_section(files, tree):
    for node in tree.walk():
        text = files[f"man/{node.page}.1"]
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "SEE ALSO"):
            assert f"\n.SH {section}\n" in text, f"{node.page}.1 lacks {section}"
        for code in range(9):
            assert f"\n.TP\n\\fB{code}\\fR\n" in text
        for var in ("WSCTL_HOME", "WSCTL_PROFILE", "WSCTL_SERVER", "WSCTL_WORKSPACE", "WSCTL_TOKEN",
                    "WSCTL_API_KEY", "WSCTL_MASTER_KEY", "WSCTL_NOW_OFFSET_SECONDS", "WSCTL_BUSY_TIMEOUT_MS"):
            assert f"\\fB{var}\\fR" in text
        assert f'"wsctl {docgen.manpages.__version__}"' in text
    busy = files["man/wsctl.1"].split("\\fBWSCTL_BUSY_TIMEOUT_MS\\fR\n", 1)[1].split("\n.TP", 1)[0]
    assert f"1 to {db.MAX_BUSY_TIMEOUT_MS}, default {db.BUSY_TIMEOUT_MS}" in busy   # the figures db.py uses
    read = set()   # every WSCTL_* setting the code reads is on the pages
    for source in (ROOT / "src" / "workspacectl").rglob("*.py"):
        read |= set(re.findall(r"[\"'](WSCTL_[A-Z0-9_]+)[\"']", source.read_text()))
    assert read and read <= {name for name, _ in docgen.manpages.ENVIRONMENT}, read
    token = files["man/wsctl-vault-token.1"]
    assert "wsctl-vault-token \\- Issue a token" in token
    assert "\\fB\\-r\\fR, \\fB\\-\\-reason\\fR \\fIREASON\\fR" in token
    assert "\\fBwsctl vault token\\fR [\\fIOPTIONS\\fR] \\fICREDENTIAL\\fR" in token
    assert "\\fB\\%wsctl-vault\\fR(1)" in token


# ------------------------------------------------------------------ the scripts themselves

def _shell(name: str):
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed here, so its script cannot be checked")
    return path


def _run(argv: list[str], script: str) -> str:
    p = subprocess.run(argv, input=script, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"{argv[0]} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return p.stdout


BASH_CASES = {
    "wsctl va": "vault",
    "wsctl vault t": "token",
    "wsctl -p vault keys l": "list",                           # an option's value is skipped, even a
    "wsctl --profile = vault keys c": "create",                # command name; --opt=value as bash splits it
    "wsctl vault token cred_1 --f": "--format",
    "wsctl keys create -": "--kind --scope -s --name --expires --credential --json --jq --help -h",
    "wsctl keys create --kind ": "personal platform",            # choices complete
    "wsctl members add x --role ": "admin guest member owner",
    "wsctl vault token cred_1 --format ": "env json value",
    "wsctl api ": "DELETE GET PATCH POST PUT",
    "wsctl completion ": "bash fish zsh",
    "wsctl vault list --l": "--limit",
    "wsctl catalog import afile.t": "afile.toml",              # a path argument completes files
    "wsctl init --workspace ad": "adir",
    "wsctl vault show cred_1 ": "",                            # ids are not guessed
}


def _bash_driver(script: Path, cases: dict) -> str:
    lines = [f"source {script}",
             'c() { read -ra COMP_WORDS <<< "$1"; [[ $1 == *" " ]] && COMP_WORDS+=(""); '
             'COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _wsctl; '
             'printf "%s=>%s\\n" "$1" "$(printf "%s\\n" "${COMPREPLY[@]}" | sort | tr "\\n" " " | sed "s/ $//")"; }']
    lines += [f"c '{line}'" for line in cases]
    return "\n".join(lines) + "\n"


def test_completion_scripts_parse_and_bash_completes(tmp_path, monkeypatch):
    bash = _shell("bash")
    _run([bash, "-n", str(ROOT / "completions/wsctl.bash")], "")
    (tmp_path / "afile.toml").write_text("")
    (tmp_path / "adir").mkdir()
    monkeypatch.chdir(tmp_path)
    out = _run([bash, "--norc", "--noprofile"], _bash_driver(ROOT / "completions/wsctl.bash", BASH_CASES))
    got = dict(line.split("=>", 1) for line in out.splitlines())
    want = {k: " ".join(sorted(v.split())) for k, v in BASH_CASES.items()}
    assert got == want


def test_zsh_script_parses():
    _run([_shell("zsh"), "-n", str(ROOT / "completions/_wsctl")], "")


def test_fish_script_parses_and_completes():
    fish = _shell("fish")
    _run([fish, "-n", str(ROOT / "completions/wsctl.fish")], "")
    out = _run([fish, "--no-config", "-c",
                f"source {ROOT / 'completions/wsctl.fish'}; "
                "complete -C'wsctl -p vault keys c'; echo ==; complete -C'wsctl vault token x --f'"], "")
    first, second = out.split("==\n")
    assert [line.split("\t")[0] for line in first.splitlines()] == ["create"]
    assert [line.split("\t")[0] for line in second.splitlines()] == ["--format"]


# ------------------------------------------------------------------ the generator on odd input

class Color(str, enum.Enum):  # noqa: UP042  (a str-valued Enum, as Typer's choices are written)
    red = "red"
    dark_blue = "dark-blue"


def _odd_app() -> typer.Typer:
    app = typer.Typer(help="Odd.")
    sub = typer.Typer(help="A nested group.")

    @sub.command("paint")
    def paint(
        color: Annotated[Color, typer.Option("--color", "-c", help="Paint colour: `red` or dark-blue …")] = Color.red,
        into: Annotated[Path | None, typer.Option("--into", help="A folder.", file_okay=False, dir_okay=True)] = None,
        tag: Annotated[list[str] | None, typer.Option("--tag", help="Repeatable.")] = None,
        files: Annotated[list[Path] | None, typer.Argument(help="Files.")] = None,
    ):
        """.dot at the start, a back\\slash, and it's quoted.

        \b
        kept
          lines
        """

    @sub.command("secret", hidden=True)
    def secret():
        """Hidden."""

    app.add_typer(sub, name="group")

    @app.command("top")
    def top(level: Annotated[int, typer.Option("--level", min=1, max=5, help="Level.")] = 3):
        """Top-level command."""

    return app


def test_generator_handles_choices_paths_hidden_and_roff_escapes(tmp_path, monkeypatch):
    odd = load_tree(typer.main.get_command(_odd_app()))
    files = docgen.render(odd)
    assert "man/wsctl-group-secret.1" not in files and "secret" not in files["completions/wsctl.bash"]
    page = files["man/wsctl-group-paint.1"]
    assert "\n\\&.dot at the start, a back\\eslash, and it's quoted.\n" in page
    assert ".nf\nkept\n  lines\n.fi" in page
    assert "Paint colour: \\fBred\\fR or dark-blue \\[u2026] One of: \\fBred\\fR, \\fBdark-blue\\fR." in page
    assert "Default: \\fBred\\fR." in page and "May be given more than once." in page
    assert "[\\fIFILES...\\fR]" in page
    assert "From 1 to 5. Default: \\fB3\\fR." in files["man/wsctl-top.1"]
    assert "(red dark-blue)" in files["completions/_wsctl"]
    assert "-l 'color' -s 'c' -r -f -a 'red dark-blue'" in files["completions/wsctl.fish"]

    bash = _shell("bash")
    script = tmp_path / "odd.bash"
    script.write_text(files["completions/wsctl.bash"])
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("")
    monkeypatch.chdir(tmp_path)
    cases = {"wsctl group paint --color ": "dark-blue red", "wsctl group paint -c d": "dark-blue",
             "wsctl group paint --color = r": "red", "wsctl group paint --into a": "adir",
             "wsctl group paint --tag x a": "adir afile", "wsctl g": "group"}
    out = _run([bash, "--norc", "--noprofile"], _bash_driver(script, cases))
    assert dict(line.split("=>", 1) for line in out.splitlines()) == cases
    for shell, name in (("zsh", "completions/_wsctl"), ("fish", "completions/wsctl.fish")):
        if shutil.which(shell):
            path = tmp_path / Path(name).name
            path.write_text(files[name])
            _run([shell, "-n", str(path)], "")


def test_write_updates_and_removes_stale_pages(tmp_path):
    odd = docgen.render(load_tree(typer.main.get_command(_odd_app())))
    (tmp_path / "man").mkdir()
    (tmp_path / "man" / "wsctl-gone.1").write_text("old")
    (tmp_path / "man" / "README").write_text("not ours")
    changes = docgen.write(tmp_path, odd)
    assert "stale: man/wsctl-gone.1" in changes and "missing: man/wsctl.1" in changes
    assert not (tmp_path / "man" / "wsctl-gone.1").exists() and (tmp_path / "man" / "README").exists()
    assert docgen.diff(tmp_path, odd) == []
    (tmp_path / "completions" / "_wsctl").write_text("edited")
    assert docgen.diff(tmp_path, odd) == ["changed: completions/_wsctl"]
