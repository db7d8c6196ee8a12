"""``chatparse bench``: the engine benchmark (chatparse vs transformers when installed)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="benchmark the engine against transformers' reference parser")
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--full", action="store_true", help="include the slow reference rows")
    p.add_argument("--no-reference", action="store_true", help="chatparse alone")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from chatparse.bench.engine import main

    argv = [flag for flag, on in (("--quick", args.quick), ("--full", args.full),
                                  ("--no-reference", args.no_reference)) if on]
    if args.json:
        argv += ["--json", args.json]
    return main(argv)
