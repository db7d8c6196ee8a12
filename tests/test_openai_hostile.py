"""Hostile input for chatparse.openai (issue 13): ChatCompletionStream over every built-in with mutated
outputs, random chunkings and random options, and to_chat_message/to_chat_completion on arbitrary dicts.
Generators and checks: tests/hostile.py (benchmarks/fuzz_hostile.py runs them at scale)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import hostile


@pytest.mark.parametrize("area", ["openai.stream", "openai.message"])
@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_cases_keep_the_properties(area: str, seed: int) -> None:
    """openai.stream: the stream's message is the one-shot message (or both raise the same named error),
    mismatches stay empty, every chunk validates and the deltas add up to the final message.
    openai.message: a valid, JSON-serializable wire object or a named error."""
    generate, check = hostile.AREAS[area]
    check(generate(random.Random(seed)))
