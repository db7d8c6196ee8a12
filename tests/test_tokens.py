"""Token-level correctness (tests/tokens.py): every corpus case of every built-in family, split into
pseudo-tokens and sent as one delta, one token per delta and random groups of 1-8 tokens, gives the one-shot
message through ``ResponseParser`` and through ``ChatCompletionStream``'s deltas."""

from __future__ import annotations

import random
import zlib

import pytest

from chatparse.templates import get_template
from tests import tokens
from tests.templates.corpus_loader import case_id, corpus_cases, load_case

FAMILIES = sorted({family for family, _ in corpus_cases()})


@pytest.mark.parametrize("family", FAMILIES)
def test_every_path_agrees_at_token_level(family: str) -> None:
    template = get_template(family)
    problems = []
    for path in [p for f, p in corpus_cases() if f == family]:
        case = load_case(path)
        options = {"tools": case.get("tools"), "on_malformed": case.get("options", {}).get("on_malformed", "raise")}
        seed = zlib.crc32(case_id(family, path).encode())
        problems += [f"{path.stem}: {p}" for p in tokens.disagreements(template, case["prefix"], case["output"],
                                                                      options, seed=seed)]
    assert problems == []


def test_pseudo_tokens_keep_markers_whole() -> None:
    special, tags = tokens.template_markers("qwen3")
    assert "<|im_end|>" in special and "<think>" in tags and "<tool_call>" in tags
    text = "<think>안녕 😀</think>\n<tool_call>{}</tool_call><|im_end|>"
    got = tokens.pseudo_tokens(text, special + tags, random.Random(1), longest=2)
    assert "".join(got) == text
    assert {"<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"} <= set(got)
    assert all(len(t) <= 2 for t in got if t not in special + tags)


def test_groupings_cover_every_token_once_in_order() -> None:
    items = list(range(50))
    groups = tokens.groupings(items, seed=3)
    assert groups["one delta"] == [items]
    assert groups["one token per delta"] == [[i] for i in items]
    randoms = [g for name, g in groups.items() if name.startswith("random")]
    assert len(randoms) == tokens.RANDOM_GROUPINGS
    for grouping in randoms:
        assert [i for g in grouping for i in g] == items
        assert all(1 <= len(g) <= tokens.MAX_GROUP for g in grouping)


def test_a_disagreement_is_reported() -> None:
    """The checker can fail: a runner that drops the last delta is caught at some grouping."""
    def lossy(template, prefix, deltas, options):  # type: ignore[no-untyped-def]
        return tokens.run_response_parser(template, prefix, deltas[:-1], options)

    prefix = "<|im_start|>assistant\n"
    saved = dict(tokens.RUNNERS)
    tokens.RUNNERS["lossy"] = lossy
    try:
        problems = tokens.disagreements("qwen3", prefix, "Hello there.<|im_end|>", {}, seed=0)
    finally:
        tokens.RUNNERS.clear()
        tokens.RUNNERS.update(saved)
    assert problems and all(p.startswith("lossy") for p in problems)
