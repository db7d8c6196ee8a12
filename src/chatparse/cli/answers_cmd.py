"""``chatparse answers check|eval``: thin argparse glue over ``chatparse.answers``.

``check`` reads JSONL generations, writes one JSONL verdict per line and exits 1 if any failed;
``eval`` prints the evaluation report and can write the JSONL run log. Exit 2 means bad input.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, TextIO, cast

from chatparse.answers.check import check_answer
from chatparse.answers.evaluate import BUILTIN, evaluate, format_report, load_dataset
from chatparse.answers.generators import OpenAIGenerator, Pricing
from chatparse.answers.prompts import PROMPTS
from chatparse.cli.io import (
    CliError,
    OutputFile,
    eprint,
    json_bytes,
    open_binary,
    open_output,
    read_text_file,
    refuse_same_file,
)
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
    commands = parser.add_subparsers(dest="answers_command", metavar="{check,eval}")
    _add_check(commands)
    _add_eval(commands)
    def usage(_args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT

    parser.set_defaults(func=usage)
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
    check.add_argument("--quiet", "-q", action="store_true", help="no summary line on stderr")
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
    evaluate_parser.add_argument(
        "--api-key", help="API key for --model (default: the OPENAI_API_KEY environment variable)"
    )
    evaluate_parser.add_argument(
        "--fail-on-regression", action="store_true",
        help="exit 1 when a prompt regresses against the one before it (for CI)",
    )
    evaluate_parser.set_defaults(func=run_eval)


def run_check(args: argparse.Namespace) -> int:
    """Exit 0 when every line passed, 1 when any failed (a bad line is a failed line, and checking goes on
    as in ``chatparse parse``), 2 when the input or the evidence file cannot be read at all."""
    try:
        refuse_same_file(args.output, "-o", args.input, "input")
        default_evidence = _load_evidence(args.evidence) if args.evidence else None
        source = open_binary(args.input)
        try:
            sink = open_output(args.output)
            try:
                counts = _check_lines(source, sink, default_evidence)
                sink.commit()
            except BaseException:
                sink.abort()
                raise
        finally:
            if args.input != "-":
                source.close()
    except ChatparseError as exc:
        return report_error("answers check", exc)
    failures = sum(counts.values()) - counts["ok"]
    if not args.quiet:
        detail = ", ".join(f"{code} {n:,}" for code, n in counts.most_common() if code != "ok")
        eprint(f"chatparse answers check: {sum(counts.values()):,} lines: {counts['ok']:,} ok, {failures:,} failed"
               + (f" ({detail})" if detail else ""))
    return EXIT_FAILURES if failures else EXIT_OK


def _check_lines(source: BinaryIO, sink: OutputFile, default_evidence: Mapping[str, str] | None) -> Counter[str]:
    """Write a verdict per line; returns the count of lines ok and failed by their first error code."""
    counts: Counter[str] = Counter()
    for number, raw in enumerate(source, start=1):
        if number == 1:
            raw = raw.removeprefix(BOM)
        if not raw.strip():
            continue
        record: Any = None
        try:
            record = _parse_line(raw, number)
            evidence = _evidence_for(record, default_evidence, number)
        except _BadInput as exc:
            counts[exc.code] += 1
            sink.write(json_bytes(_bad_line(number, exc, record if record is not None else exc.record)))
            continue
        result = check_answer(record["output"], evidence)
        counts["ok" if result.ok else (result.errors[0].code if result.errors else "failed")] += 1
        verdict = {
            "id": record.get("id"),
            "line": number,
            "ok": result.ok,
            "status": result.answer.status if result.answer is not None else None,
            "stage": result.stage,
            "errors": [error.to_dict() for error in result.errors],
        }
        sink.write(json_bytes(verdict))
    return counts


class _BadInput(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.record: dict[str, Any] | None = None  # the line's object, when it is one


def _bad_line(number: int, exc: _BadInput, record: Any) -> dict[str, Any]:
    """The verdict of a line that is no answer record: stage 'input', its code, its own id when it has one
    (else null) and its line number."""
    row_id = record.get("id") if isinstance(record, dict) else None
    return {"id": row_id, "line": number, "ok": False, "status": None, "stage": "input",
            "errors": [{"code": exc.code, "message": str(exc), "path": "$"}]}


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
    if not isinstance(record, dict):
        raise _BadInput("bad_line", f"expected a JSON object per line, found a JSON {type(record).__name__} on "
                        f"line {number}")
    if not isinstance(record.get("output"), str):
        bad = _BadInput("bad_line", f"expected an object with a string 'output', found "
                        f"{'none' if 'output' not in record else type(record['output']).__name__} on line {number}")
        bad.record = record
        raise bad
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
    except json.JSONDecodeError as exc:
        raise CliError(f"Expected JSON in {path}, found invalid JSON: {exc.msg} at line {exc.lineno}, column "
                       f"{exc.colno}", code="invalid_json", path=str(path), offset=exc.pos) from None
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
    """Print the report. Exit 1 when every attempt failed (nothing was measured: no server, a bad key), or
    with ``--fail-on-regression`` when a prompt regressed; 0 otherwise (regressions are findings)."""
    prompts = tuple(args.prompts or DEFAULT_PROMPTS)
    try:
        dataset = load_dataset(args.dataset)
        generator_for = None
        if args.model:
            api_key = args.api_key or os.environ.get("OPENAI_API_KEY")
            if not api_key:
                raise CliError("Expected an API key for --model, found none: set OPENAI_API_KEY or pass --api-key "
                               "(a local server that checks no key takes any value, e.g. --api-key none)",
                               code="missing_api_key")
            pricing = dataset.settings.pricing if args.model == dataset.settings.model else Pricing()
            generator = OpenAIGenerator(args.model, base_url=args.base_url, api_key=api_key, pricing=pricing)
            generator_for = lambda _prompt: generator  # noqa: E731 - one live model for every prompt
            eprint(f"chatparse answers eval: LIVE run: calling {args.model}"
                   f"{' at ' + args.base_url if args.base_url else ''} for {len(prompts)} prompt(s) x "
                   f"{len(dataset.questions)} questions")
        with _open_log(args.log) as log:
            report = evaluate(dataset, prompts, generator_for=generator_for, log=log)
    except ChatparseError as exc:
        return report_error("answers eval", exc)
    print(format_report(report))
    sys.stdout.flush()
    if report.all_failed:
        eprint("chatparse answers eval: error [all_attempts_failed]: every attempt failed to get an output (see "
               "the 'failure' of each attempt in --log); nothing was measured")
        return EXIT_FAILURES
    if args.fail_on_regression and report.regressions:
        eprint(f"chatparse answers eval: {len(report.regressions)} regression(s) (--fail-on-regression)")
        return EXIT_FAILURES
    return EXIT_OK


@contextmanager
def _open_log(path: Path | None) -> Iterator[TextIO | None]:
    """The run log, put in place only when the run ends (an error or Ctrl-C leaves an old log as it was)."""
    if path is None:
        yield None
        return
    output = OutputFile(str(path))  # a missing directory or a read-only one fails here, before the run
    buffer = io.StringIO()
    try:
        yield buffer
        output.write(buffer.getvalue().encode("utf-8"))
        output.commit()
    except BaseException:
        output.abort()
        raise


__all__ = ["add_parser", "run_check", "run_eval"]
