"""Entry point: runs the Typer app and turns every failure into one line and an exit code.

0 ok; 1 other error; 2 usage; 3 unauthenticated; 4 forbidden or insufficient scope;
5 not found; 6 conflict; 7 invalid input; 8 server unreachable (CONTRACT §10).
"""
from __future__ import annotations

import os
import sys

# Not `from typing import TYPE_CHECKING`: the completion path runs this module before anything
# imports typing (cli/common/completion_cache.py), and typing costs more than the rest of it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typer import _click

    from workspacectl.errors import ApiError


def take_root_flags(argv: list[str], command: _click.Command | None = None) -> tuple[list[str], bool]:
    """`--debug` and `--timeout SECONDS` mean the same anywhere on the line (`wsctl vault list
    --debug --timeout 5` is `wsctl --debug --timeout 5 vault list`), up to a `--` (what follows
    belongs to another program), except as the value of an option that takes one (`--name --debug`
    names something "--debug"; `command`, the click tree, says which do). Answers (argv without
    --debug and with each --timeout moved to the front, debug on)."""
    out: list[str] = []
    front: list[str] = []
    debug = os.environ.get("WSCTL_DEBUG") == "1"
    values = _ValueOptions(command)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg == "--debug":
            debug = True
            i += 1
            continue
        if arg == "--timeout" or arg.startswith("--timeout="):
            take = 2 if arg == "--timeout" else 1
            front.extend(argv[i:i + take])
            i += take
            continue
        taken = values.after(arg)
        out.extend(argv[i:i + 1 + taken])
        i += 1 + taken
    return front + out, debug


class _ValueOptions:
    """Walks a command line down the click tree: how many words after each one are an option's
    value (so not a switch). Groups not built yet are built as click would build them to parse."""

    def __init__(self, command: _click.Command | None) -> None:
        self.command = command

    def after(self, arg: str) -> int:
        cmd = self.command
        if cmd is None:
            return 0
        if not arg.startswith("-") or arg == "-":
            from workspacectl.cli.app import LazyGroup  # every group of the tree (cli/app.py)

            if isinstance(cmd, LazyGroup) and arg in cmd.commands:
                self.command = cmd.get_command(None, arg)
            return 0
        if "=" in arg and arg.startswith("--"):
            return 0
        for param in cmd.params:
            if arg in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())):
                if getattr(param, "is_flag", False) or getattr(param, "count", False):
                    return 0
                if getattr(param, "_flag_needs_value", False):
                    return 0  # an optional value: click takes a following word only if it is not an option
                return max(1, getattr(param, "nargs", 1))
        return 0


def main(argv: list[str] | None = None) -> None:
    if _completed_from_cache(sys.argv[1:] if argv is None else argv):
        sys.exit(0)
    import typer
    from typer import _click as click  # typer vendors click; plain click is never on this path

    from workspacectl.cli.app import COMMANDS, GROUPS, LAZY_COMMANDS, build_app
    from workspacectl.cli.common import scripting
    from workspacectl.cli.common.output import visible  # error text may quote a server or another member
    from workspacectl.errors import EXIT_CODES, ApiError, one_line

    app = build_app()
    command = __import__("typer").main.get_command(app)
    argv, debug = take_root_flags(list(sys.argv[1:] if argv is None else argv), command)
    if debug:
        from workspacectl.backend import http_trace

        http_trace.enabled = True  # each HTTP request's method, URL, status and time on stderr
    try:
        try:
            parsed = scripting.take_json_fields(argv, {g[1] for g in GROUPS} | {c[2] for c in COMMANDS} | {c[2] for c in LAZY_COMMANDS})
            rv = command.main(args=parsed, prog_name="wsctl", standalone_mode=False)
        except click.exceptions.MissingParameter:
            if not scripting.FILTERS.consumed:
                raise
            # the word after --json was the command's argument, not a field list: parse it as given
            scripting.reset()
            command = __import__("typer").main.get_command(build_app())
            rv = command.main(args=argv, prog_name="wsctl", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except ApiError as e:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"error: {visible(e.with_hint())}{_secret_source(e)}", file=sys.stderr)
        for line in _candidates(e):  # a name that fits several things: one line each (cli/common/refs.py)
            print(f"  {visible(line)}", file=sys.stderr)
        code = EXIT_CODES.get(e.code, 1)
    except typer.Abort:
        print("Aborted.", file=sys.stderr)
        code = 1
    except typer.Exit as e:
        code = e.exit_code
    except click.exceptions.NoArgsIsHelpError as e:  # a bare `wsctl` or group: its help, as click shows it
        print(e.format_message(), file=sys.stderr)
        code = e.exit_code
    except click.ClickException as e:  # usage errors (exit 2): one line too, naming the help to read
        code = e.exit_code
        ctx = getattr(e, "ctx", None)
        hint = f" See `{ctx.command_path} -h`." if ctx is not None else ""
        print(f"error: {sentence(visible(one_line(e.format_message())))}{hint}", file=sys.stderr)
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        code = 0
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
    except Exception as e:  # a bug: one line, the traceback only with --debug
        if debug:
            import traceback

            traceback.print_exc()
        print(f"error: {type(e).__name__}: {visible(one_line(str(e)))} (run again with --debug for details)", file=sys.stderr)
        code = 1
    if code not in (0, 130) and _prints_for_eval(argv, command) and not _stdout_is_terminal():
        _fail_the_eval()
    _after_command(housekeeping=code != 130)
    _settle_first_use(code == 0)
    sys.exit(code)


# `eval "$(wsctl vault env …)"` runs what `vault env` prints, and a failed command substitution
# does not fail the eval: an empty output would let a `set -e` script carry on without its
# variables. So a failed `vault env` printing export lines (its default, for eval) to anything but
# a terminal prints this one line: eval'd, it fails (status 1) and a `set -e` script stops; in an
# interactive shell it only sets $?. Nothing else that could run (never `exit`, which would close
# the shell the user eval'd it in). Read by a program that does not eval it, it is one word.
EVAL_FAILURE_LINE = "false\n"


def _prints_for_eval(argv: list[str], command: _click.Command | None) -> bool:
    """Whether the command line is `vault env` in its export format (no --format dotenv/json, no --json)."""
    values = _ValueOptions(command)
    words: list[str] = []
    form, as_json = "export", False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        if arg == "--json" or arg.startswith("--json="):
            as_json = True
        elif arg == "--format" and i + 1 < len(argv):
            form = argv[i + 1]
        elif arg.startswith("--format="):
            form = arg.split("=", 1)[1]
        elif not arg.startswith("-"):
            words.append(arg)
        i += 1 + values.after(arg)
    return words[:2] == ["vault", "env"] and form == "export" and not as_json


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (OSError, ValueError):
        return False


def _fail_the_eval() -> None:
    try:
        sys.stdout.write(EVAL_FAILURE_LINE)
        sys.stdout.flush()
    except (OSError, ValueError):
        pass


def _secret_source(error: ApiError) -> str:
    """On a 401, when the secret came from WSCTL_TOKEN or WSCTL_API_KEY: signing in again does
    not help while that variable is set (it wins over a stored sign-in), so say so."""
    context = sys.modules.get("workspacectl.cli.common.context")
    var = context.secret_source() if context is not None and error.code == "unauthenticated" else None
    if var not in ("WSCTL_TOKEN", "WSCTL_API_KEY") or var in error.message:
        return ""
    return f" The secret sent was {var}'s, which wins over a stored sign-in: replace or unset {var}."


def sentence(text: str) -> str:
    """A message ending in one full stop, or in its own ? or ! ("Did you mean 'token'?", not "?.")."""
    text = text.rstrip()
    return text if text.endswith(("?", "!")) else text.rstrip(".") + "."


def _candidates(error: ApiError) -> list[str]:
    found = error.detail.get("candidates") if isinstance(error.detail, dict) else None
    return [str(c) for c in found] if isinstance(found, list) else []


def _completed_from_cache(args: list[str]) -> bool:
    """A shell's `complete-values` answered from the completion cache, before Typer is even
    imported (cli/common/completion_cache.py): the whole run then takes about as long as Python starts."""
    if "complete-values" not in args[:3]:
        return False
    from workspacectl.cli.common import completion_cache

    try:
        return completion_cache.answer_from_cache(list(args))
    except Exception:   # a completion never fails: the usual path answers
        return False


def _after_command(housekeeping: bool) -> None:
    """Housekeeping of the local workspaces the command opened (not after an interrupt), after its
    output, then they are closed (cli/common/context.py after_command)."""
    context = sys.modules.get("workspacectl.cli.common.context")
    if context is not None:
        context.after_command(housekeeping)


def _settle_first_use(ok: bool) -> None:
    """An embedded workspace this command made is kept only if it succeeded (cli/common/first_use.py)."""
    first_use = sys.modules.get("workspacectl.cli.common.first_use")
    if first_use is not None:
        first_use.settle(ok)


if __name__ == "__main__":
    main()
