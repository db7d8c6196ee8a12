"""The benchmark script keeps working and measures what it says (no timing is asserted here)."""

from __future__ import annotations

import pytest

from chatparse import parse_response
from chatparse.benchmark import BUILTINS, TEMPLATES, dense, make_output, make_truncated, one_shot


@pytest.mark.parametrize("kind", list(TEMPLATES))
def test_outputs_have_a_tool_call_every_so_often(kind: str) -> None:
    for every, size in ((4000, 20_000), (200, 4_000)):
        text = make_output(kind, size, every=every, reasoning=every)
        calls = parse_response(text, TEMPLATES[kind], prefix="").get("tool_calls", [])
        assert len(calls) >= size // (every + 100) - 1, (kind, every, len(calls))


@pytest.mark.parametrize(("name", "kind"), list(BUILTINS.items()))
def test_builtins_parse_the_benchmark_outputs_like_the_bench_templates(name: str, kind: str) -> None:
    text = make_output(kind, 6_000, every=500)
    ours = parse_response(text, name, prefix="")
    bench = parse_response(text, TEMPLATES[kind], prefix="")
    assert len(ours["tool_calls"]) == len(bench["tool_calls"]) > 5


def test_truncated_output_has_no_tool_call_and_no_end_marker() -> None:
    text = make_truncated(5_000)
    assert "<tool_call>" not in text and "<|im_end|>" not in text
    assert parse_response(text, TEMPLATES["qwen3.5-xml"], prefix="").get("content")


def test_rows_without_the_reference() -> None:
    rows = one_shot(None, [5_000], repeat=1) + dense(None, [1000], 5_000, repeat=1)
    assert {r["bench"] for r in rows} == {"one-shot", "stream-dense"}
    assert all(r["tool_calls"] > 0 for r in rows)
    assert all("ratio" not in r for r in rows)  # nothing to compare against
    assert len([r for r in rows if r["bench"] == "stream-dense"]) == len(TEMPLATES) + len(BUILTINS)
