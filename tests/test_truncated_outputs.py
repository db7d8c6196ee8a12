"""Outputs cut by the token limit parse with the default limits at any length: a long reasoning trace, a
long answer or a long argument value stopped mid-way never reaches a regex budget (the growth is
measured by ``python -m benchmarks.bench_engine --truncated-all``, not here)."""

from __future__ import annotations

import random

import pytest

from chatparse import parse_response
from chatparse.benchmark import BUILTINS, CUTS, _words, bench_cuts

SIZE = 4_000_000


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize(("name", "kind"), list(BUILTINS.items()))
def test_a_4_mb_cut_output_parses_with_the_default_limits(name: str, kind: str, cut: str) -> None:
    prefix, head = bench_cuts(kind)[cut]
    body = _words(random.Random(0), SIZE)
    body = body.replace("\n", " ") if cut == "call" else body
    message = parse_response(head + body, name, prefix=prefix)
    if cut == "call":
        assert "tool_calls" not in message
        assert message["malformed"][0]["raw"].rstrip().endswith(body.rstrip())
    else:
        assert message["thinking" if cut == "reasoning" else "content"].endswith(body.rstrip())
