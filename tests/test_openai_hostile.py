"""Hostile input for chatparse.openai (issue 13): ChatCompletionStream over every built-in with mutated
outputs, random chunkings and random options, and to_chat_message/to_chat_completion on arbitrary dicts.
Generators and checks: tests/hostile.py (benchmarks/fuzz_hostile.py runs them at scale)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests import hostile


@settings(max_examples=50, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_streams_of_mutated_outputs_match_the_one_shot_parse(seed: int) -> None:
    hostile.check_stream(hostile.stream_case(random.Random(seed)))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_any_message_dict_gives_a_valid_wire_object_or_a_named_error(seed: int) -> None:
    hostile.check_message(hostile.message_dict(random.Random(seed)))
