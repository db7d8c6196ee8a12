"""Property tests over every built-in template: mutated corpus outputs (cut, spliced, shuffled pieces)
give the same message and chunk text for any chunking, only ChatparseError ever escapes, and event
streams are well-formed. 10^4 examples in CI (``--slow``: 10^5)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chatparse
from chatparse.templates import get_template
from tests.streamcheck import check_event_stream, chunk_text, random_split, stream
from tests.templates.corpus_loader import corpus_cases, load_case

CASES: dict[str, list[dict[str, Any]]] = {}
for _family, _path in corpus_cases():
    CASES.setdefault(_family, []).append(load_case(_path))
FAMILIES = sorted(CASES)
# 10^4 examples in all by default; the --slow profile (10^5 max_examples) multiplies by ten.
SCALE = 10 if settings.default.max_examples >= 100_000 else 1
EXAMPLES_PER_FAMILY = SCALE * (10_000 // len(FAMILIES) + 1)


def _template_name(family: str) -> str:
    names = chatparse.list_templates()
    return family if family in names else next(n for n in names if n.replace(".", "_") == family)


def _mutate(rng: random.Random, outputs: list[str]) -> str:
    """A corpus output, cut short, spliced with another, or with pieces repeated."""
    text = rng.choice(outputs)
    roll = rng.random()
    if roll < 0.3 and text:
        return text[: rng.randrange(len(text))]  # truncation anywhere, also inside delimiters
    if roll < 0.55:
        other = rng.choice(outputs)
        return text[: rng.randrange(len(text) + 1)] + other[rng.randrange(len(other) + 1) :]
    if roll < 0.75 and text:
        a, b = sorted(rng.randrange(len(text) + 1) for _ in range(2))
        return text[:b] + text[a:b] + text[b:]
    return text


def _outcome(template: Any, prefix: str, chunks: list[str], tools: Any) -> Any:
    try:
        message, events = stream(template, prefix, chunks, tools=tools, on_malformed="keep")
    except chatparse.ChatparseError as exc:
        return ("error", type(exc).__name__, exc.code)
    check_event_stream(events, message, template)
    return message, chunk_text(events)


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=EXAMPLES_PER_FAMILY, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_outputs_are_chunking_invariant(family: str, seed: int) -> None:
    rng = random.Random(seed)
    template = get_template(_template_name(family))
    case = rng.choice(CASES[family])
    text = _mutate(rng, [c["output"] for c in CASES[family]])
    prefix, tools = case["prefix"], case.get("tools")
    whole = _outcome(template, prefix, [text], tools)
    assert _outcome(template, prefix, random_split(text, rng), tools) == whole
    if rng.random() < 0.1:
        assert _outcome(template, prefix, list(text) or [""], tools) == whole
