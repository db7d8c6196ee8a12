"""``chatparse answers check|eval``: thin argparse glue over ``chatparse.answers``.

``check`` reads JSONL generations, writes one JSONL verdict per line and exits 1 if any failed;
``eval`` prints the evaluation report and can write the JSONL run log. Exit 2 means bad input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, TextIO, cast

from chatparse.answers.check import check_answer
from chatparse.answers.evaluate import BUILTIN, evaluate, format_report, load_dataset
from chatparse.answers.generators import OpenAIGenerator, Pricing
from chatparse.answers.prompts import PROMPTS
from chatparse.cli.io import CliError, json_bytes, open_binary, open_output, read_text_file
from chatparse.cli.io import report as report_error
from chatparse.cli.tables import BOM
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
    """Exit 0 when every line passed, 1 when any failed (a bad line is a failed line, and checking goes on
    as in ``chatparse parse``), 2 when the input or the evidence file cannot be read at all."""
    try:
        default_evidence = _load_evidence(args.evidence) if args.evidence else None
        source = open_binary(args.input)
        try:
            sink = open_output(args.output)
            failures = _check_lines(source, sink, default_evidence)
            sink.flush()
            if args.output != "-":
                sink.close()
        finally:
            if args.input != "-":
                source.close()
    except ChatparseError as exc:
        return report_error("answers check", exc)
    return EXIT_FAILURES if failures else EXIT_OK


def _check_lines(source: BinaryIO, sink: BinaryIO, default_evidence: Mapping[str, str] | None) -> int:
    failures = 0
    for number, raw in enumerate(source, start=1):
        if number == 1:
            raw = raw.removeprefix(BOM)
        if not raw.strip():
            continue
        try:
            record = _parse_line(raw, number)
            evidence = _evidence_for(record, default_evidence, number)
        except _BadInput as exc:
            failures += 1
            sink.write(json_bytes(_bad_line(number, exc)))
            continue
        result = check_answer(record["output"], evidence)
        failures += not result.ok
        verdict = {
            "id": record.get("id", number),
            "ok": result.ok,
            "status": result.answer.status if result.answer is not None else None,
            "stage": result.stage,
            "errors": [error.to_dict() for error in result.errors],
        }
        sink.write(json_bytes(verdict))
    return failures


class _BadInput(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _bad_line(number: int, exc: _BadInput) -> dict[str, Any]:
    """The verdict of a line that is no answer record: stage 'input', its code, and the line number as id."""
    return {"id": number, "ok": False, "status": None, "stage": "input",
            "errors": [{"code": exc.code, "message": str(exc), "path": f"line {number}"}]}


def _parse_line(raw: bytes, number: int) -> dict[str, Any]:
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _BadInput("invalid_utf8", f"expected UTF-8 text on line {number}, found bytes that are not UTF-8 "
                        f"at byte {exc.start}") from None
    except ValueError:
        raise _BadInput("invalid_json", f"expected a JSON object per line, found invalid JSON on line {number}") \
            from None
    except RecursionError:
        raise _BadInput("too_deep", f"expected a JSON object per line, found JSON nested too deeply on line "
                        f"{number}") from None
    if not isinstance(record, dict) or not isinstance(record.get("output"), str):
        raise _BadInput("bad_line", f"expected an object with a string 'output', found something else on line "
                        f"{number}")
    return record


def _evidence_for(
    record: Mapping[str, Any], default: Mapping[str, str] | None, number: int
) -> Mapping[str, str]:
    evidence = record.get("evidence", default)
    if evidence is None:
        raise _BadInput("missing_evidence", f"expected 'evidence' on line {number} or --evidence, found neither")
    if not _is_evidence(evidence):
        raise _BadInput("bad_evidence", f"expected evidence as an object of source_id to text, found something "
                        f"else on line {number}")
    return cast("Mapping[str, str]", evidence)


def _load_evidence(path: Path) -> Mapping[str, str]:
    text = read_text_file(str(path), "--evidence")
    try:
        data = json.loads(text)
    except ValueError:
        raise CliError(f"Expected JSON in {path}, found invalid text", code="invalid_json", path=str(path)) from None
    except RecursionError:
        raise CliError(f"Expected evidence in {path}, found JSON nested too deeply", code="too_deep",
                       path=str(path)) from None
    if not _is_evidence(data):
        raise CliError(f"Expected evidence as an object of source_id to text, found something else in {path}",
                       code="bad_evidence", path=str(path))
    return cast("Mapping[str, str]", data)


def _is_evidence(data: Any) -> bool:
    return isinstance(data, dict) and all(isinstance(v, str) for v in data.values())


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
        return report_error("answers eval", exc)
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
