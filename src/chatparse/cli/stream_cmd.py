"""``chatparse stream``: feed one generation in small chunks and print every event as it happens."""

from __future__ import annotations

import argparse
import json
from typing import Any

from chatparse.cli.io import eprint, load_template_arg
from chatparse.engine.parser import ResponseParser
from chatparse.errors import ChatparseError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("stream", help="show a generation's events live, chunk by chunk")
    p.add_argument("--template", "-t", required=True, help="built-in template name or template file")
    p.add_argument("--output", required=True, help="the generated text, or @FILE to read it from a file")
    p.add_argument("--prefix", default="", help="the prompt (or @FILE)")
    p.add_argument("--chunk", type=int, default=4, help="characters per feed (default 4)")
    p.set_defaults(func=run)


def _text(value: str) -> str:
    if value.startswith("@"):
        with open(value[1:], encoding="utf-8") as f:
            return f.read()
    return value


def run(args: argparse.Namespace) -> int:
    try:
        parser = ResponseParser(load_template_arg(args.template), _text(args.prefix))
        output = _text(args.output)
        for event in parser.initial_events:
            print("initial", json.dumps(event, ensure_ascii=False))
        for i in range(0, len(output), max(1, args.chunk)):
            for event in parser.feed(output[i : i + args.chunk]):
                print(json.dumps(event, ensure_ascii=False))
        message, final = parser.finalize()
    except ChatparseError as exc:
        eprint(f"chatparse stream: [{exc.code}] {exc}")
        return 1
    for event in final:
        print(json.dumps(event, ensure_ascii=False))
    print("message", json.dumps(message, ensure_ascii=False))
    return 0
