"""Hostile input for every registered content parser (issue 13), each through a template: random bodies
(mutated samples of its syntax, fragments, noise, cut anywhere) with random but valid content_args, fed
whole and in a random chunking. Only named errors, never an EngineFault; one feed equals any chunking.
Generators and checks: tests/hostile.py; long bodies: tests/test_long_inputs.py."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatparse.content.registry import known_content_parsers
from tests import hostile


@pytest.mark.parametrize("parser", known_content_parsers())
@settings(max_examples=15, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_bodies_give_a_message_or_a_named_error(parser: str, seed: int) -> None:
    hostile.check_content(hostile.content_case(random.Random(seed), parser))


def test_the_generated_content_args_are_valid_for_every_parser_with_a_pool() -> None:
    """A generator whose arguments never load would test only the fallback: each pool loads."""
    import chatparse

    for parser, pool in hostile.ARG_POOLS.items():
        rng = random.Random(parser)
        loaded = 0
        for _ in range(20):
            try:
                chatparse.load_template(hostile.content_template(parser, hostile.content_args(rng, parser), False))
                loaded += 1
            except chatparse.TemplateError:
                pass
        assert loaded >= 10, (parser, pool)


def test_a_float_region_holding_nan_passes_the_checks() -> None:
    """Found by the fuzzing (content:7137): float('NaN') is the float parser's value, as in transformers;
    the event-stream check compared it with '==' and failed on the engine's correct output."""
    template = hostile.content_template("float", {}, False)
    case = hostile.ContentCase("float", template, "<x>1.5</x><x>NaN</x>", ["<x>1.5</x><x>Na", "N</x>"], "keep")
    assert hostile.check_content(case) == "ok"
