"""Every corpus case of every built-in family (tests/templates/corpus/<family>/<case>.json): the one-shot
message, and the same message and the same per-field chunk text however the output is split."""

from __future__ import annotations

import itertools
import json
import random
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.templates import get_template

CORPUS = Path(__file__).parent / "corpus"
CASE_KEYS = {"description", "prefix", "output", "expected", "tools", "options"}
FIXED_SIZES = (1, 2, 3, 5, 7, 13, 31)
RANDOM_SPLITS = 12


def corpus_cases() -> list[tuple[str, Path]]:
    return [
        (family.name, case)
        for family in sorted(p for p in CORPUS.iterdir() if p.is_dir())
        for case in sorted(family.glob("*.json"))
    ]


CASES = corpus_cases()
IDS = [f"{family}/{path.stem}" for family, path in CASES]


def load_case(path: Path) -> dict[str, Any]:
    case = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(case, dict)
    assert set(case) <= CASE_KEYS, f"unknown keys {sorted(set(case) - CASE_KEYS)}"
    assert {"description", "prefix", "output", "expected"} <= set(case)
    assert case["description"].strip()
    return case


@dataclass
class StreamResult:
    message: dict[str, Any]
    events: list[dict[str, Any]]

    def chunk_text(self) -> dict[str, str]:
        text: dict[str, str] = {}
        for event in self.events:
            if event["type"] == "region_chunk":
                text[event["field"]] = text.get(event["field"], "") + event["text"]
        return text


def stream(template: dict[str, Any], case: dict[str, Any], chunks: list[str]) -> StreamResult:
    parser = chatparse.ResponseParser(
        template, case["prefix"], tools=case.get("tools"), **case.get("options", {})
    )
    events = list(parser.initial_events)
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    message, final_events = parser.finalize()
    events.extend(final_events)
    return StreamResult(message, events)


def chunkings(text: str, seed: str) -> list[list[str]]:
    """Fixed chunk sizes plus seeded random splits (which land inside delimiters too)."""
    out = [[text[i : i + n] for i in range(0, len(text), n)] for n in FIXED_SIZES]
    rng = random.Random(zlib.crc32(seed.encode()))
    for _ in range(RANDOM_SPLITS):
        if len(text) < 2:
            break
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, min(12, len(text) - 1))))
        points = [0, *cuts, len(text)]
        out.append([text[a:b] for a, b in itertools.pairwise(points)])
    return out


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, list | dict | str) and not value)


def check_event_stream(
    events: list[dict[str, Any]], message: dict[str, Any], template: dict[str, Any]
) -> None:
    """Regions never nest, every open is closed (or flagged malformed), chunks only arrive inside the
    open region, and the close values add up to the final message."""
    current: str | None = None
    values: dict[str, list[Any]] = {}
    flagged: list[dict[str, Any]] = []
    for event in events:
        kind = event["type"]
        if kind == "region_open":
            assert current is None, f"{event['field']} opened inside {current}"
            current = event["field"]
        elif kind == "region_chunk":
            assert event["field"] == current, f"chunk for {event['field']} while {current} is open"
            assert isinstance(event["text"], str) and isinstance(event["dirty"], bool)
        elif kind in ("region_close", "region_malformed"):
            assert event["field"] == current, f"{kind} for {event['field']} while {current} is open"
            current = None
            if kind == "region_close":
                values.setdefault(event["field"], []).append(event["value"])
            else:
                flagged.append({"field": event["field"], "code": event["code"], "raw": event["raw"]})
        else:
            raise AssertionError(f"unknown event type {kind!r}")
    assert current is None, f"{current} was never closed"
    for field, closed in values.items():
        spec = template["fields"][field]
        if spec.get("join") is not None:
            final: Any = spec["join"].join(closed)
        elif spec.get("repeats"):
            final = closed
        else:
            final = closed[-1]
        assert message.get(field) == (None if _is_empty(final) else final), field
    assert message.get("malformed", []) == flagged


@pytest.mark.parametrize(("family", "path"), CASES, ids=IDS)
def test_one_shot(family: str, path: Path) -> None:
    case = load_case(path)
    message = chatparse.parse_response(
        case["output"],
        get_template(family),
        prefix=case["prefix"],
        tools=case.get("tools"),
        **case.get("options", {}),
    )
    assert message == case["expected"]


@pytest.mark.parametrize(("family", "path"), CASES, ids=IDS)
def test_chunking_equivalence(family: str, path: Path) -> None:
    case = load_case(path)
    template = get_template(family)
    whole = stream(template, case, [case["output"]])
    assert whole.message == case["expected"]
    check_event_stream(whole.events, whole.message, template)
    for chunks in chunkings(case["output"], f"{family}/{path.stem}"):
        split = stream(template, case, chunks)
        sizes = [len(c) for c in chunks]
        assert split.message == whole.message, f"chunk sizes {sizes}"
        assert split.chunk_text() == whole.chunk_text(), f"chunk sizes {sizes}"
        check_event_stream(split.events, split.message, template)


def test_corpus_is_not_empty() -> None:
    assert len(CASES) >= 4
