"""Hostile input for the tools module (issue 13): coerce_arguments with random schemas (rarely a keyword of
the wrong shape) and values written the ways models write them, ToolInputBase models, ArgumentStream and
XMLArgumentStream over mutated text in random chunks. Only named errors (never an ``internal_error``
result); coercion is a fixed point; any chunking gives the result of one feed.
Generators and checks: tests/hostile.py."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests import hostile


@settings(max_examples=150, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_coercion_of_random_schemas_and_values(seed: int) -> None:
    hostile.check_coerce(hostile.coerce_case(random.Random(seed)))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_tool_input_models_raise_only_tool_argument_errors(seed: int) -> None:
    hostile.check_model(hostile.model_case(random.Random(seed)))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_argument_streams_of_mutated_json(seed: int) -> None:
    hostile.check_stream_args(hostile.stream_args_case(random.Random(seed)))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_xml_argument_streams_of_mutated_calls(seed: int) -> None:
    hostile.check_xml(hostile.xml_case(random.Random(seed)))
