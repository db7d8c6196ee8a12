"""Hostile input for the answers module (issue 13): check_answer and AnswerStream on mutated and random
outputs, with evidence of every shape. Only named errors; the stream's verdict is check_answer's for any
chunking; str and UTF-8 bytes get the same verdict. Generators and checks: tests/hostile.py."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests import hostile


@settings(max_examples=150, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_any_output_and_evidence_give_a_verdict_or_a_named_error(seed: int) -> None:
    hostile.check_answers(hostile.answer_case(random.Random(seed)))
