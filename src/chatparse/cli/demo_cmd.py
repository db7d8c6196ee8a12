"""``chatparse demo``: stream a few shipped sample generations (three model formats) and show events and
final messages. Offline and instant."""

from __future__ import annotations

import argparse
import json
import re
from importlib import resources
from typing import Any

from chatparse.cli.parse_cmd import positive_int
from chatparse.engine.parser import ResponseParser


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="parse shipped sample generations, offline",
                       description="Streams three shipped sample generations (three model formats) through the "
                                   "parser, a word at a time as a model would send them, and prints each event "
                                   "and the final message. Offline; nothing to download.")
    p.add_argument("--chunk", type=positive_int, metavar="N",
                   help="feed N characters at a time instead of a word at a time")
    p.set_defaults(func=run)


def load_samples() -> list[dict[str, Any]]:
    text = resources.files("chatparse.cli").joinpath("demo_samples.json").read_text(encoding="utf-8")
    samples: list[dict[str, Any]] = json.loads(text)["samples"]
    return samples


def run(args: argparse.Namespace) -> int:
    for number, sample in enumerate(load_samples(), 1):
        print(f"== {number}. {sample['title']}")
        parser = ResponseParser(sample["template"], sample["prefix"], tools=sample.get("tools"))
        for event in parser.initial_events:
            print("   (prefill)", _show(event))
        for piece in _pieces(sample["output"], args.chunk):
            for event in parser.feed(piece):
                print("  ", _show(event))
        message, final = parser.finalize()
        for event in final:
            print("  ", _show(event))
        print("   message:", json.dumps(message, ensure_ascii=False, indent=2).replace("\n", "\n   "))
        print()
    print("next: chatparse parse -t qwen3 rollouts.jsonl -o parsed.parquet   (a dataset; docs/batch.md)\n"
          "      chatparse templates list                                    (every built-in format)")
    return 0


def _pieces(text: str, size: int | None) -> list[str]:
    """A word (with the space before it) at a time, as streamed tokens arrive; or ``size`` characters."""
    if size is not None:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return re.findall(r"\s*\S+|\s+$", text)


def _show(event: dict[str, Any]) -> str:
    if event["type"] == "region_chunk":
        return f"chunk  {event['field']:<10} {event['text']!r}{'  (dirty)' if event['dirty'] else ''}"
    if event["type"] == "region_close":
        return f"close  {event['field']:<10} -> {json.dumps(event['value'], ensure_ascii=False)}"
    return f"{event['type'].removeprefix('region_'):<6} {event['field']}"
