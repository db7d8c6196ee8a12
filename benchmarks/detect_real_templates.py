"""Detection on real chat templates: ``detect_template`` on every ``*.jinja`` of the given directories, then
the detected built-in against what that template renders.

For each template: the family ``detect_template(chat_template=...)`` picks (or none), then, for each
assistant turn of ``tests/templates/chat_template_roundtrip.py`` (content, reasoning, one call, two calls),
the turn rendered by the template itself (transformers' renderer, full prompt as prefix) parsed back by the
detected built-in. A turn the template refuses to render (it raises, or writes nothing of it) is not
checked. A turn rendered without a reasoning block after a prompt that opens one is no generation from
that prompt (templates drop earlier replies' reasoning): it is checked again with ``enable_thinking=False``,
then written with reasoning, and the verdict says which. Each template lands in one class:

- ``round-trips``: detected, and every turn it renders parses back into the message it was rendered from;
- ``wrong``: detected, and at least one rendered turn parses back into something else;
- ``unchecked``: detected, but the template rendered none of the turns (or rendering needs kwargs we lack);
- ``none``: no built-in detected (``chatparse templates synthesize`` is the way for those).

Not run in CI (it needs third-party templates this repository does not keep, and transformers). llama.cpp's
``models/templates`` ship inside the llama-cpp-python sdist:

    pip download llama-cpp-python==0.3.36 --no-deps --no-binary :all: -d /tmp/lcp
    tar xzf /tmp/lcp/llama_cpp_python-0.3.36.tar.gz -C /tmp/lcp --wildcards '*/models/templates/*'
    python -m benchmarks.detect_real_templates /tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates

With no directory it measures the templates this repository keeps (tests/templates/chat_templates). Render
kwargs for templates that need them come from tests/templates/test_real_chat_templates.py when the file
name matches; others get an eos token guessed from the detected built-in's end markers. Prints a table,
then one JSON document (``--json`` for the JSON only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a file too: the round trip lives in the test helpers

from tests.templates.chat_template_roundtrip import TURNS, round_trip  # noqa: E402

from chatparse.templates import detect_template, get_template  # noqa: E402

KEPT = ROOT / "tests" / "templates" / "chat_templates"
GENERIC = {"bos_token": "<s>", "date_string": "26 Jul 2024"}
# Round-trip options for templates outside the tests' table. Nemotron Nano v2 thinks by default and renders
# an earlier reply as '<think>' + the answer, its reasoning and '</think>' dropped: no generation from its
# own prompt; with '/no_think' in the system message the prompt pre-writes '<think></think>' and a reply is one.
OPTIONS: dict[str, dict[str, Any]] = {"NVIDIA-Nemotron-Nano-v2": {"system_suffix": " /no_think"}}


def _known_kwargs() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Render kwargs and round-trip options the tests record for the templates they keep, by file stem."""
    from tests.templates.test_real_chat_templates import CASES

    return {stem: (kwargs, options) for stem, (_, kwargs, _, options) in CASES.items()}


def _eos_guess(family: str, source: str) -> str:
    """The built-in's end marker the template writes (its eos token, when it writes ``eos_token``), else
    the built-in's first end marker."""
    ends = get_template(family).get("chatparse", {}).get("end", [])
    return next((e for e in ends if e in source), ends[0] if ends else "</s>")


def _with_reasoning(turn: str) -> str:
    """The name of ``turn`` written with a reasoning block (added to the round trip's turns on first use)."""
    name = f"{turn}+reasoning"
    if name not in TURNS:
        TURNS[name] = {**TURNS[turn], "reasoning_content": TURNS[turn].get("reasoning_content") or "Checking first."}
    return name


def _check_turn(family: str, source: str, turn: str, kwargs: dict[str, Any], options: dict[str, Any]) -> str:
    """``ok``, ``wrong: ...`` or ``not rendered: ...`` for one assistant turn."""
    try:
        result = round_trip(family, source, turn, kwargs, **options)
    except Exception as exc:  # the template refuses the conversation (raise_exception, missing kwargs)
        return f"not rendered: {type(exc).__name__}: {str(exc)[:120]}"
    if result is None:
        return "not rendered: the rendering is no generation from its own prompt"
    parsed, expected, output = result
    if len(expected) <= 1:
        return "not rendered: the template wrote nothing of the turn"
    if parsed == expected:
        return "ok"
    return f"wrong: {output[:160]!r} -> {json.dumps(parsed, ensure_ascii=False)[:240]}"


def measure(path: Path, known: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    source = path.read_text(encoding="utf-8")
    family = detect_template(chat_template=source)
    row: dict[str, Any] = {"template": path.name, "detected": family}
    if family is None:
        row["class"] = "none"
        return row
    kwargs, options = known.get(path.stem, ({}, OPTIONS.get(path.stem, {})))
    if not kwargs:
        kwargs = {**GENERIC, "eos_token": _eos_guess(family, source)}
    turns = {}
    for turn in [t for t in TURNS if "+" not in t]:
        verdict = _check_turn(family, source, turn, kwargs, options)
        if verdict.startswith("not rendered: the rendering is no generation"):
            # A prompt that opens a reasoning block, and a turn rendered without one: no model generates that
            # after this prompt. Check the turn with thinking switched off, or written with its reasoning.
            retries = [(turn, {**kwargs, "enable_thinking": False}, "enable_thinking=False"),
                       (_with_reasoning(turn), kwargs, "with reasoning")]
            for name, retry_kwargs, how in retries:
                retry = _check_turn(family, source, name, retry_kwargs, options)
                if not retry.startswith("not rendered"):
                    verdict = f"{retry} ({how})"
                    break
        turns[turn] = verdict
    row["turns"] = turns
    checked = [v for v in turns.values() if not v.startswith("not rendered")]
    if not checked:
        row["class"] = "unchecked"
    elif all(v.startswith("ok") for v in checked):
        row["class"] = "round-trips"
    else:
        row["class"] = "wrong"
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directories", nargs="*", type=Path, help="directories of *.jinja chat templates")
    parser.add_argument("--json", action="store_true", help="print the JSON document only")
    args = parser.parse_args(argv)
    directories = args.directories or [KEPT]
    known = _known_kwargs()
    rows = [measure(path, known) for directory in directories for path in sorted(directory.glob("*.jinja"))]
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["class"]] = counts.get(row["class"], 0) + 1
        calls = [row.get("turns", {}).get(t, "not rendered") for t in ("one_call", "two_calls")]
        if any(not v.startswith("not rendered") for v in calls):  # the template renders tool calls
            key = "calls round-trip" if all(v.startswith(("ok", "not rendered")) for v in calls) else "calls wrong"
            counts[key] = counts.get(key, 0) + 1
    if not args.json:
        for row in rows:
            print(f"{row['class']:<12} {row['detected'] or '-':<22} {row['template']}")
            for turn, verdict in row.get("turns", {}).items():
                if not verdict.startswith("ok"):
                    print(f"{'':<12} {turn}: {verdict}")
        print()
        print(", ".join(f"{name}: {n}" for name, n in sorted(counts.items())), f"(of {len(rows)})")
    print(json.dumps({"counts": counts, "templates": rows}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
