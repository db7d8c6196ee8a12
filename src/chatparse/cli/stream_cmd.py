"""``chatparse stream``: feed one generation in small chunks and print every event as it happens, one JSON
object per line (prompt-opened regions carry ``"prefill": true``; the last line is the final message)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from chatparse.batch.rows import with_errors
from chatparse.cli.io import EXIT_FAILED, EXIT_OK, is_terminal, report, resolve_template, text_arg, write_json
from chatparse.cli.parse_cmd import positive_int, tools_file
from chatparse.engine.parser import ResponseParser
from chatparse.errors import ChatparseError


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "stream", help="show a generation's events live, chunk by chunk, as JSONL",
        description="Prints one JSON object per line: each event ({'type': 'region_open'|'region_chunk'|"
                    "'region_close'|'region_malformed', ...}; events of regions the prompt opened have "
                    "'prefill': true), then {'type': 'message', 'message': {...}}. Indented and highlighted "
                    "on a terminal.")
    p.add_argument("--template", "-t", required=True,
                   help="built-in name (any case), template file, model directory or Hugging Face model id")
    p.add_argument("--text", "--output", dest="output", required=True,
                   help="the generated text, or @FILE to read it from a file (@- for stdin); --output is the "
                        "older name")
    p.add_argument("--prefix", required=True,
                   help="the prompt the model saw, or @FILE; --prefix '' opts out explicitly")
    p.add_argument("--chunk", type=positive_int, default=4, help="characters per feed, 1 or more (default 4)")
    p.add_argument("--tools", metavar="FILE", help="JSON list of tools that types the calls' arguments")
    p.add_argument("--finish-reason", metavar="REASON",
                   help="why generation stopped, as the engine said ('length': a call left open is truncated)")
    p.add_argument("--on-malformed", choices=("recover", "keep", "raise"), default="recover",
                   help="a tool call that does not parse: 'recover' (default, as in chatparse parse) lists it "
                        "under \"malformed\" beside the good ones; 'keep' sets the region aside; 'raise' stops "
                        "(exit 1)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        _, template = resolve_template(args.template)
        prefix = text_arg(args.prefix, "--prefix")
        output = text_arg(args.output, "--output")
        tools = tools_file(args.tools) if args.tools else None
        parser = ResponseParser(template, prefix, tools=tools, on_malformed=args.on_malformed)
    except ChatparseError as exc:
        return report("stream", exc)
    pretty = is_terminal(sys.stdout)
    seen = list(parser.initial_events)
    for event in parser.initial_events:
        write_json_line({**event, "prefill": True}, pretty=pretty)
    try:
        for i in range(0, len(output), args.chunk):
            for event in parser.feed(output[i : i + args.chunk]):
                seen.append(event)
                write_json_line(event, pretty=pretty)
        message, final = parser.finalize(finish_reason=args.finish_reason)
    except ChatparseError as exc:  # the generation itself failed (on_malformed="raise")
        report("stream", exc)
        return EXIT_FAILED
    for event in final:
        write_json_line(event, pretty=pretty)
    if message.get("malformed"):  # each with the reason its event gave, as chatparse parse writes it
        message["malformed"] = with_errors(message["malformed"], [*seen, *final])
    write_json_line({"type": "message", "message": message}, pretty=pretty)
    return EXIT_OK


def write_json_line(obj: dict[str, Any], *, pretty: bool) -> None:
    write_json(obj, pretty=pretty, indent=None)  # one event per line, highlighted on a terminal
