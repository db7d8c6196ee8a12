"""``chatparse templates synthesize PATH``: a response template from a model's chat template (a
tokenizer_config.json, a ``.jinja`` file or a model directory), proved by a round trip. Exit 0 when every
generated message round-trips, 1 when some do not (the failing probes are named), 2 when no template could
be inferred (the reason is named)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from chatparse.cli.io import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    OutputFile,
    eprint,
    is_terminal,
    report,
    safe_text,
)
from chatparse.errors import ChatparseError

COMMAND = "chatparse templates synthesize"


def add_parser(tsub: Any) -> None:
    p = tsub.add_parser(
        "synthesize", help="infer a response template from a chat template and prove it",
        description="Render probe conversations through the chat template, infer the response template, and "
                    "round-trip generated messages through it. Exit 0 when every message round-trips, 1 when some "
                    "do not (the failing probes are named) or none could be compared, 2 when no template could "
                    "be inferred (the reason is named). docs/synthesize.md has the details.")
    p.add_argument("path", help="a tokenizer_config.json, a .jinja chat template, or a model directory")
    p.add_argument("--explain", action="store_true",
                   help="print the inferred markers, the generation prompts and the evidence before the template")
    p.add_argument("--json", action="store_true", help="one JSON object: template, prompts, markers and report")
    p.add_argument("-o", "--output", metavar="FILE", help="write the template to FILE instead of stdout")
    p.add_argument("--messages", type=int, default=200, metavar="N",
                   help="generated messages to round-trip (default 200; 0 skips the proof)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated messages")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a template keyword argument (JSON value, else text), e.g. --set eos_token='<|im_end|>'")
    p.add_argument("--time-limit", type=_seconds, default=300.0, metavar="SECONDS",
                   help="wall-clock budget of the whole synthesis, every render included (default 300); past it "
                        "the error is synthesis_timeout")
    p.set_defaults(func=run)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, found {text!r}")
    return value


class _Progress:
    """Renders so far and the budget used, redrawn on one stderr line (a terminal only), at most 10 times a second."""

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.shown = 0.0
        self.drawn = False

    def __call__(self, renders: int, seconds: float) -> None:
        now = time.monotonic()
        if now - self.shown < 0.1:
            return
        self.shown, self.drawn = now, True
        sys.stderr.write(f"\r{COMMAND}: renders {renders}, {seconds:.1f} s of {self.budget:g} s")
        sys.stderr.flush()

    def clear(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _kwargs(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, found {pair!r}")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def run(args: argparse.Namespace) -> int:
    from chatparse.synthesize import RenderLimits, read_chat_template, synthesize_template
    from chatparse.synthesize.explain import explain, markers, report_lines

    try:
        settings = _kwargs(args.set)
    except ValueError as exc:
        eprint(f"{COMMAND}: error [bad_option]: {safe_text(str(exc))}")
        return EXIT_USAGE
    output: OutputFile | None = None
    if args.output and not args.json:
        try:  # before the work: a missing or read-only directory is said now, not after minutes of renders
            output = OutputFile(args.output)
        except ChatparseError as exc:
            return report("templates synthesize", exc)
    progress = _Progress(args.time_limit) if is_terminal(sys.stderr) else None
    try:
        source, kwargs, added, stops = read_chat_template(args.path)
        kwargs.update(settings)
        result = synthesize_template(source, verify_messages=args.messages, seed=args.seed, special_tokens=added,
                                     end_tokens=stops, limits=RenderLimits(total_seconds=args.time_limit),
                                     progress=progress, **kwargs)
    except ChatparseError as exc:
        if output is not None:
            output.abort()
        return report("templates synthesize", exc)
    except BaseException:
        if output is not None:
            output.abort()  # Ctrl-C: an existing output keeps what it held
        raise
    finally:
        if progress is not None:
            progress.clear()
    template_text = json.dumps(result.template, indent=2, ensure_ascii=False)
    if args.json:
        print(json.dumps({"template": result.template, "exact": result.exact, "markers": markers(result),
                          "prompts": {p.label: p.prefill for p in result.prompts},
                          "evidence": [f"[{t}] {e}" for t, e in result.format.evidence],
                          "notes": result.format.notes,
                          "report": result.report.to_dict() if result.report else None}, indent=2, ensure_ascii=False))
    else:
        if args.explain:
            print(explain(result))
            print()
        if output is not None:
            try:
                output.write((template_text + "\n").encode("utf-8"))
                output.commit()  # written beside the output and renamed into place
            except ChatparseError as exc:
                output.abort()
                return report("templates synthesize", exc)
        else:
            print(template_text)
    if result.report is None:
        eprint(f"{COMMAND}: not verified (--messages 0)")
        return EXIT_OK
    if not args.explain:
        for line in report_lines(result.report)[:2]:
            eprint(f"{COMMAND}: {line}")
    if result.exact:
        return EXIT_OK
    if not result.report.checks:
        reasons = "; ".join(sorted(result.report.not_checked)) or "no message kind is rendered"
        eprint(f"{COMMAND}: not verified: no generated message could be compared ({reasons})")
        return EXIT_FAILED
    failed = sorted({f"{c.case} after '{c.prompt}'" for c in result.report.failures})
    eprint(f"{COMMAND}: not exact: {len(result.report.failures)} of {result.report.checks} "
           f"parses differ ({', '.join(failed[:8])}{' ...' if len(failed) > 8 else ''}); --explain shows them")
    return EXIT_FAILED
