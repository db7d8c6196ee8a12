"""``chatparse answers check|eval``: thin argparse glue over ``chatparse.answers``.

``check`` reads JSONL generations, writes one JSONL verdict per line and exits 1 if any failed;
``eval`` prints the evaluation report and can write the JSONL run log. Exit 2 means bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from chatparse.answers.check import check_answer
from chatparse.answers.evaluate import BUILTIN, evaluate, format_report, load_dataset
from chatparse.answers.generators import OpenAIGenerator, Pricing
from chatparse.answers.prompts import PROMPTS
from chatparse.errors import ChatparseError

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_BAD_INPUT = 2
DEFAULT_PROMPTS = ("P0", "P1", "P2")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``answers`` and its subcommands; each sets ``func(args) -> int``."""
    parser = subparsers.add_parser("answers", help="validate grounded answers and evaluate prompt versions")
    commands = parser.add_subparsers(dest="answers_command", metavar="{check,eval}", required=True)
    _add_check(commands)
    _add_eval(commands)
    return parser


def _add_check(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = commands.add_parser(
        "check",
        help="check answers JSONL against evidence",
        description=(
            "Each input line is a JSON object {'id'?, 'output': <raw generation text>, 'evidence'?: "
            "{source_id: block text}}. Evidence comes from the line or from --evidence."
        ),
    )
    check.add_argument("input", nargs="?", default="-", help="answers JSONL file, or - for stdin (default)")
    check.add_argument("--evidence", type=Path, help="JSON file mapping source_id to the block text sent")
    check.add_argument("-o", "--output", default="-", help="JSONL verdicts file, or - for stdout (default)")
    check.set_defaults(func=run_check)


def _add_eval(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    evaluate_parser = commands.add_parser(
        "eval",
        help="evaluate prompt versions on a labelled dataset",
        description="Replays the dataset's recorded outputs unless --model is given (then calls the model).",
    )
    evaluate_parser.add_argument(
        "dataset", help=f"dataset directory, or '{BUILTIN}' for the shipped Korean policy set"
    )
    evaluate_parser.add_argument(
        "--prompt",
        action="append",
        dest="prompts",
        choices=sorted(PROMPTS),
        help="prompt version to run, repeatable, in comparison order (default: P0 P1 P2)",
    )
    evaluate_parser.add_argument("--log", type=Path, help="write the JSONL run log to this file")
    evaluate_parser.add_argument(
        "--model", help="call this model through an OpenAI-compatible API instead of replaying"
    )
    evaluate_parser.add_argument("--base-url", help="OpenAI-compatible base URL (with --model)")
    evaluate_parser.set_defaults(func=run_eval)


def run_check(args: argparse.Namespace) -> int:
    """Exit 0 when every line passed, 1 when any failed, 2 on unreadable input."""
    try:
        default_evidence = _load_evidence(args.evidence) if args.evidence else None
        with _open_in(args.input) as source, _open_out(args.output) as sink:
            return _check_lines(source, sink, default_evidence)
    except (OSError, _BadInput) as exc:
        print(f"chatparse answers check: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _check_lines(source: TextIO, sink: TextIO, default_evidence: Mapping[str, str] | None) -> int:
    failures = 0
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        record = _parse_line(line, number)
        evidence = _evidence_for(record, default_evidence, number)
        result = check_answer(record["output"], evidence)
        failures += not result.ok
        verdict = {
            "id": record.get("id", number),
            "ok": result.ok,
            "status": result.answer.status if result.answer is not None else None,
            "stage": result.stage,
            "errors": [error.to_dict() for error in result.errors],
        }
        sink.write(json.dumps(verdict, ensure_ascii=False) + "\n")
    return EXIT_FAILURES if failures else EXIT_OK


class _BadInput(Exception):
    pass


def _parse_line(line: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except ValueError:
        raise _BadInput(f"expected a JSON object per line, found invalid JSON on line {number}") from None
    if not isinstance(record, dict) or not isinstance(record.get("output"), str):
        raise _BadInput(f"expected an object with a string 'output', found something else on line {number}")
    return record


def _evidence_for(
    record: Mapping[str, Any], default: Mapping[str, str] | None, number: int
) -> Mapping[str, str]:
    evidence = record.get("evidence", default)
    if evidence is None:
        raise _BadInput(f"expected 'evidence' on line {number} or --evidence, found neither")
    return _as_evidence(evidence, f"line {number}")


def _load_evidence(path: Path) -> Mapping[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise _BadInput(f"expected JSON in {path}, found invalid text") from None
    return _as_evidence(data, str(path))


def _as_evidence(data: Any, where: str) -> Mapping[str, str]:
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise _BadInput(
            f"expected evidence as an object of source_id to text, found something else in {where}"
        )
    return data


@contextmanager
def _open_in(name: str) -> Iterator[TextIO]:
    if name == "-":
        yield sys.stdin
        return
    with open(name, encoding="utf-8") as handle:
        yield handle


@contextmanager
def _open_out(name: str) -> Iterator[TextIO]:
    if name == "-":
        yield sys.stdout
        return
    with open(name, "w", encoding="utf-8") as handle:
        yield handle


def run_eval(args: argparse.Namespace) -> int:
    """Print the report; exit 0 even with regressions (they are findings, not failures)."""
    prompts = tuple(args.prompts or DEFAULT_PROMPTS)
    try:
        dataset = load_dataset(args.dataset)
        generator_for = None
        if args.model:
            pricing = dataset.settings.pricing if args.model == dataset.settings.model else Pricing()
            generator = OpenAIGenerator(args.model, base_url=args.base_url, pricing=pricing)
            generator_for = lambda _prompt: generator  # noqa: E731 - one live model for every prompt
        with _open_log(args.log) as log:
            report = evaluate(dataset, prompts, generator_for=generator_for, log=log)
    except ChatparseError as exc:
        print(f"chatparse answers eval: [{exc.code}] {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(format_report(report))
    return EXIT_OK


@contextmanager
def _open_log(path: Path | None) -> Iterator[TextIO | None]:
    if path is None:
        yield None
        return
    with path.open("w", encoding="utf-8") as handle:
        yield handle


__all__ = ["add_parser", "run_check", "run_eval"]
