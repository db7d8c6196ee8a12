"""Long hostile inputs of every area (tests/hostile.py LONG_INPUTS: a call value of 25 K characters
streamed in 7-character feeds, thousands of calls, unclosed openers, a 200 K answer, one-character argument
feeds, a 50 K body for every registered content parser) finish within a generous wall-clock bound in a fresh
interpreter: a quadratic class would not. The growth exponents are measured by
``python -m benchmarks.fuzz_hostile --growth``, not here."""

from __future__ import annotations

from chatparse.content.registry import known_content_parsers
from tests import hostile
from tests.engine.test_hostile import run_bounded


def test_every_long_input_finishes_within_a_generous_bound() -> None:
    out = run_bounded("""
        from tests import hostile
        result = hostile.run_long_inputs("")
    """, timeout=120)
    expected = {name: size for name, (_, size) in hostile.LONG_INPUTS.items()}
    expected.update({f"content.{name}": 50_000 for name in known_content_parsers()})
    assert out.get("ok") == expected, out
