"""Every corpus case of every built-in family (tests/templates/corpus/<family>/<case>.json): the one-shot
message, and the same message and the same per-field chunk text however the output is split."""

from __future__ import annotations

import random
import zlib
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.templates import get_template
from tests.streamcheck import assert_chunking_equivalent, check_event_stream, chunk_text, random_split, stream
from tests.templates.corpus_loader import case_id, corpus_cases, load_case

EXTRA_RANDOM_SPLITS = 12
CASES = corpus_cases()
IDS = [case_id(family, path) for family, path in CASES]


def parse_options(case: dict[str, Any]) -> dict[str, Any]:
    return {"tools": case.get("tools"), **case.get("options", {})}


def check_malformed(events: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """The message's ``malformed`` entries are exactly the ``region_malformed`` events and the items a
    ``region_close`` set aside, in order."""
    flagged: list[dict[str, Any]] = []
    for e in events:
        if e["type"] == "region_malformed":
            flagged.append({"field": e["field"], "code": e["code"], "raw": e["raw"]})
        elif e["type"] == "region_close":
            flagged.extend({"field": m["field"], "code": m["code"], "raw": m["raw"]} for m in e.get("malformed", []))
    assert message.get("malformed", []) == flagged


@pytest.mark.parametrize(("family", "path"), CASES, ids=IDS)
def test_one_shot(family: str, path: Path) -> None:
    case = load_case(path)
    message = chatparse.parse_response(
        case["output"], get_template(family), prefix=case["prefix"], **parse_options(case)
    )
    assert message == case["expected"]


@pytest.mark.parametrize(("family", "path"), CASES, ids=IDS)
def test_chunking_equivalence(family: str, path: Path) -> None:
    case = load_case(path)
    template, prefix, text, options = (
        get_template(family),
        case["prefix"],
        case["output"],
        parse_options(case),
    )
    seed = zlib.crc32(case_id(family, path).encode())
    assert assert_chunking_equivalent(template, prefix, text, seed=seed, **options) == case["expected"]
    whole_message, whole_events = stream(template, prefix, [text], **options)
    check_malformed(whole_events, whole_message)
    rng = random.Random(seed + 1)
    for _ in range(EXTRA_RANDOM_SPLITS):
        chunks = random_split(text, rng)
        message, events = stream(template, prefix, chunks, **options)
        assert message == case["expected"], f"chunk sizes {[len(c) for c in chunks]}"
        assert chunk_text(events) == chunk_text(whole_events), f"chunk sizes {[len(c) for c in chunks]}"
        check_event_stream(events, message, template)
        check_malformed(events, message)


def test_corpus_is_not_empty() -> None:
    assert len(CASES) >= 4
