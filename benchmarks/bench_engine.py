"""Engine benchmark script: chatparse vs transformers' reference parser, same run. ``chatparse.bench.engine``
(what ``chatparse bench`` runs) says what is measured; ``--quick`` for a smoke run, ``--full`` for the slow
reference rows, ``--truncated-all`` for outputs of every built-in family cut by the token limit (cut from
the template corpora of this checkout)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chatparse.bench.engine import add_arguments, report, run_from, truncated_cuts
from chatparse.engine.api import parse_response
from chatparse.errors import ChatparseError
from chatparse.templates import list_templates

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "templates" / "corpus"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _cut_texts(expected: dict[str, Any]) -> dict[str, str]:
    """Per cut, a text of the expected message the output writes as is: the reasoning, the content, and
    a plain string argument (letters and digits: written the same inside any call syntax)."""
    found: dict[str, str] = {}
    for cut, value in (("reasoning", expected.get("thinking")), ("content", expected.get("content"))):
        if isinstance(value, str) and len(value) >= 4:
            found[cut] = value
    for call in expected.get("tool_calls") or []:
        arguments = call.get("function", {}).get("arguments") if isinstance(call, dict) else None
        for value in _strings(arguments):
            if len(value) >= 3 and value.isalnum():
                found.setdefault("call", value)
    return found


def corpus_cuts(template: str, corpus: Path = CORPUS) -> dict[str, tuple[str, str]]:
    """``{cut: (prefix, text before the cut)}`` for a built-in family, from its corpus: per cut, the
    first case (by file name) whose output writes that text exactly once, and whose output up to it
    parses."""
    cuts: dict[str, tuple[str, str]] = {}
    for path in sorted((corpus / template.replace(".", "_")).glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        output = case["output"]
        for cut, value in _cut_texts(case["expected"]).items():
            if cut in cuts or output.count(value) != 1:
                continue
            head = output[: output.index(value)]
            try:
                parse_response(head + "some words", template, prefix=case["prefix"])
            except ChatparseError:
                continue
            cuts[cut] = (case["prefix"], head)
    return cuts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    parser.add_argument("--truncated-all", action="store_true",
                        help="also cut every built-in family's output (in reasoning, in content, inside a tool "
                             "call), from the template corpora of a source checkout (~1 min)")
    parser.add_argument("--corpus", metavar="DIR", type=Path, default=CORPUS,
                        help="the template corpora for --truncated-all (default: tests/templates/corpus)")
    args = parser.parse_args(argv)
    if args.truncated_all and not args.corpus.is_dir():
        parser.error(f"--truncated-all reads the template corpora; {args.corpus} is not a directory "
                     "(run from a source checkout or pass --corpus DIR)")

    def corpus_rows(cut_sizes: list[int]) -> list[dict[str, Any]]:
        return truncated_cuts({name: corpus_cuts(name, args.corpus) for name in list_templates()}, cut_sizes,
                              repeat=3)

    return report(run_from(args, corpus_rows if args.truncated_all else None), args.json)


if __name__ == "__main__":
    sys.exit(main())
