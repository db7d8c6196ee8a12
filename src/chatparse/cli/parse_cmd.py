"""``chatparse parse``: JSONL generations in, one JSON message per line out."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from chatparse.cli.io import eprint, error_line, load_template_arg, open_input, read_records
from chatparse.engine.api import parse_response
from chatparse.errors import ChatparseError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("parse", help="parse JSONL generations into messages",
                       description="Each input line is {\"output\": ..., \"prefix\": ...} or a bare JSON string. "
                                   "Writes one JSON message per line; failures become {\"error\": ...} lines.")
    p.add_argument("input", help="JSONL file, or - for stdin")
    p.add_argument("--template", "-t", required=True, help="built-in template name or template/tokenizer_config file")
    p.add_argument("--prefix-key", default="prefix", help="input key holding the prompt (default: prefix)")
    p.add_argument("--on-malformed", choices=("recover", "keep", "raise"), default="recover",
                   help="a tool call that does not parse: 'recover' (default) keeps the calls beside it and lists "
                        "the bad one under \"malformed\" with its raw text; 'keep' sets the whole region aside; "
                        "'raise' fails the line")
    p.add_argument("--keep-malformed", action="store_const", const="keep", dest="on_malformed",
                   help="same as --on-malformed keep")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        template = load_template_arg(args.template)
    except ChatparseError as exc:
        eprint(f"chatparse parse: {exc}")
        return 2
    failures = done = 0
    started = last = time.monotonic()
    with open_input(args.input) as stream:
        for line, record, problem in read_records(stream, prefix_key=args.prefix_key):
            done += 1
            if record is None:
                failures += 1
                print(json.dumps({"line": line, "error": {"code": "bad_input_line", "message": problem}}))
                continue
            try:
                message = parse_response(record["output"], template, prefix=record["prefix"],
                                         tools=record.get("tools"),
                                         on_malformed=args.on_malformed)
                print(json.dumps(message, ensure_ascii=False))
            except ChatparseError as exc:
                failures += 1
                print(json.dumps(error_line(exc, line), ensure_ascii=False))
            now = time.monotonic()
            if not args.quiet and now - last > 1.0:
                eprint(f"\r{done} parsed, {failures} failed, {done / (now - started):.0f}/s", end="")
                last = now
    if not args.quiet:
        eprint(f"{done} parsed, {failures} failed")
    sys.stdout.flush()
    return 1 if failures else 0
