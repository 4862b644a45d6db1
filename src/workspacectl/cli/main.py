"""Entry point: runs the Typer app and turns every failure into one line and an exit code.

0 ok; 1 other error; 2 usage; 3 unauthenticated; 4 forbidden or insufficient scope;
5 not found; 6 conflict; 7 invalid input; 8 server unreachable (CONTRACT §10).
"""
from __future__ import annotations

import os
import sys


def _debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("WSCTL_DEBUG") == "1"


def main(argv: list[str] | None = None) -> None:
    import click
    import typer
    from typer import _click as typer_click  # typer vendors click: its usage errors and Abort are its own

    from workspacectl.cli.app import build_app
    from workspacectl.errors import EXIT_CODES, ApiError

    argv = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(argv)
    app = build_app()
    command = __import__("typer").main.get_command(app)
    try:
        rv = command.main(args=argv, prog_name="wsctl", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except ApiError as e:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"error: {e.message}", file=sys.stderr)
        code = EXIT_CODES.get(e.code, 1)
    except (click.exceptions.Abort, typer.Abort):
        print("Aborted.", file=sys.stderr)
        code = 1
    except click.exceptions.Exit as e:
        code = e.exit_code
    except (click.ClickException, typer_click.ClickException) as e:
        e.show()
        code = e.exit_code  # UsageError -> 2
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
        print(f"error: {type(e).__name__}: {e} (run again with --debug for details)", file=sys.stderr)
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
