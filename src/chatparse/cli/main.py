"""The ``chatparse`` command: thin subcommands over the library. Exit codes: 0 ok, 1 some inputs failed,
2 usage or setup errors. No input ends in a traceback: an unexpected exception is one line on stderr."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from chatparse.cli.io import EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE, eprint, safe_text

SUBCOMMANDS = ("parse_cmd", "stream_cmd", "detect_cmd", "demo_cmd", "templates_cmd", "answers_cmd", "bench_cmd",
               "grammar_cmd")
DEBUG_ENV = "CHATPARSE_DEBUG"


class _Formatter(argparse.HelpFormatter):
    """Text written on several lines (tables, examples) stays as written; one-line text is wrapped."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text.strip():
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class _Parser(argparse.ArgumentParser):
    """argparse with the exit-code table under every command's help."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        epilog = kwargs.get("epilog")
        if not epilog:
            kwargs["epilog"] = EXIT_CODES_HELP
        elif EXIT_CODES_HELP not in str(epilog):
            kwargs["epilog"] = f"{epilog}\n\n{EXIT_CODES_HELP}"
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="chatparse",
        description="Turn raw LLM output into structured messages, tool calls and verified answers.",
    )
    from chatparse import __version__

    parser.add_argument("--version", "-V", action="version", version=f"chatparse {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"chatparse.cli.{name}")
        except ImportError as exc:
            if exc.name and exc.name.startswith("chatparse.cli."):
                continue  # a subcommand not shipped in this build
            raise
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        code = int(args.func(args))
    except BrokenPipeError:  # e.g. `chatparse parse ... | head`
        _silence_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug, not the input's fault: one line, the traceback only on request
        if os.environ.get(DEBUG_ENV):
            raise
        eprint(f"chatparse {args.command}: error [internal_error]: unexpected {type(exc).__name__}: "
               f"{safe_text(str(exc))[:300]} (a bug: please report it; {DEBUG_ENV}=1 shows the traceback)")
        return EXIT_USAGE
    if argv is None and (code in (EXIT_INTERRUPTED, EXIT_TERMINATED) or _pool_stopped()):
        _exit_now(code)
    return code


def _pool_stopped() -> bool:
    """A worker pool was stopped mid-run (its outputs already dropped and the error said)."""
    run = sys.modules.get("chatparse.cli.parse_run")
    return bool(getattr(run, "POOL_STOPPED", False))


def _exit_now(code: int) -> None:
    """An interrupted run (its outputs already dropped) ends here and now: no wait at exit for the threads
    of a process pool whose workers were stopped."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _silence_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so the interpreter's final flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
