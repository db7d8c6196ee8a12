"""The benchmark script keeps working and measures what it says (no timing is asserted here)."""

from __future__ import annotations

import pytest
from benchmarks.bench_engine import corpus_cuts

from chatparse import parse_response
from chatparse.benchmark import (
    BUILTINS,
    CUTS,
    TEMPLATES,
    bench_cuts,
    dense,
    make_output,
    make_truncated,
    one_shot,
    one_shot_builtins,
    truncated_cuts,
)
from chatparse.templates import get_template, list_templates


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


def test_cut_rows_of_the_builtins_keep_the_cut_text() -> None:
    cases = {name: bench_cuts(kind) for name, kind in BUILTINS.items()}
    rows = truncated_cuts(cases, [2_000, 8_000], repeat=1)
    assert [(r["template"], r["cut"]) for r in rows] == [(name, cut) for name in BUILTINS for cut in CUTS]
    assert all(r["kept"] and r["ms@8KB"] > 0 and "exponent" in r for r in rows)


@pytest.mark.parametrize(("name", "kind"), list(BUILTINS.items()))
def test_bench_cuts_land_where_they_say(name: str, kind: str) -> None:
    cuts = bench_cuts(kind)
    words = "a long stretch of words the token limit stops " * 50
    message = parse_response(cuts["reasoning"][1] + words, name, prefix="")
    assert message["thinking"].strip() == words.strip()
    message = parse_response(cuts["content"][1] + words, name, prefix="")
    assert message["content"].strip() == words.strip() and message["thinking"]
    message = parse_response(cuts["call"][1] + words, name, prefix="")
    assert "tool_calls" not in message and words.strip() in message["malformed"][0]["raw"]


@pytest.mark.parametrize("name", list_templates())
def test_every_builtin_family_has_its_cuts_in_the_corpus(name: str) -> None:
    cuts = corpus_cuts(name)
    fields = get_template(name)["fields"]
    expected = {"content"} | ({"call"} if "tool_calls" in fields else set()) | ({"reasoning"} if "thinking" in fields else set())
    assert set(cuts) == expected
    rows = truncated_cuts({name: cuts}, [3_000], repeat=1)
    assert all(r["kept"] for r in rows), rows


def test_builtin_one_shot_rows_compare_with_qwen3_in_the_same_run() -> None:
    rows = one_shot_builtins(8_000, repeat=1)
    assert [r["template"] for r in rows] == list(BUILTINS)
    assert all(r["tool_calls"] > 0 and r["ours_mb_s"] > 0 for r in rows)
    assert next(r for r in rows if r["template"] == "qwen3")["vs_qwen3"] == 1.0


class _RaisingReference:
    """A reference parser that rejects a cut call, as transformers' does."""

    @staticmethod
    def parse_response(text: str, template: object, prefix: str = "") -> dict[str, object]:
        if "<tool_call>" in text:
            raise ValueError("json parser could not parse region as JSON")
        return {"role": "assistant"}


def test_cut_rows_time_the_reference_up_to_its_limit_and_note_when_it_raises() -> None:
    rows = truncated_cuts({"qwen3": bench_cuts("qwen3-literal")}, [2_000, 8_000], repeat=1, ref=_RaisingReference(),
                          references={"qwen3": TEMPLATES["qwen3-literal"]}, ref_limit=2_000)
    assert all("ratio@2KB" in r and "ratio@8KB" not in r for r in rows)
    assert [r["ref_raised"] for r in rows] == [False, False, True]
