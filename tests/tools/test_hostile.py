"""Hostile input for the tools module (issue 13): coerce_arguments with random schemas (rarely a keyword of
the wrong shape) and values written the ways models write them, ToolInputBase models, ArgumentStream and
XMLArgumentStream over mutated text in random chunks. Only named errors (never an ``internal_error``
result); coercion is a fixed point; any chunking gives the result of one feed.
Generators and checks: tests/hostile.py."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import hostile


@pytest.mark.parametrize("area", ["tools.coerce", "tools.model", "tools.argument_stream", "tools.xml_stream"])
@settings(max_examples=150, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_cases_keep_the_properties(area: str, seed: int) -> None:
    generate, check = hostile.AREAS[area]
    check(generate(random.Random(seed)))
