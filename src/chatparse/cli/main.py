"""The ``chatparse`` command: thin subcommands over the library. Exit codes: 0 ok, 1 some inputs failed,
2 usage or template errors."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

SUBCOMMANDS = ("parse_cmd", "stream_cmd", "demo_cmd", "templates_cmd", "answers_cmd", "bench_cmd")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chatparse",
        description="Turn raw LLM output into structured messages, tool calls and verified answers.",
    )
    from chatparse import __version__

    parser.add_argument("--version", action="version", version=f"chatparse {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
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
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except BrokenPipeError:  # e.g. `chatparse parse ... | head`
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
