"""Outputs cut by the token limit: they parse with the default limits at any length (a long reasoning trace, a
long answer or a long argument value stopped mid-way never reaches a regex budget; the growth is measured by
``python -m benchmarks.bench_engine --truncated-all``, not here), and in every built-in family a call whose
close the limit cut is never returned as a call."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from chatparse import ResponseParser, load_template, parse_response
from chatparse.benchmark import BUILTINS, CUTS, _words, bench_cuts
from chatparse.templates import get_template, list_templates
from chatparse.templates.registry import normalize_name
from tests.streamcheck import check_event_stream, stream
from tests.templates.corpus_loader import corpus_cases, load_case
from tests.tokens import pseudo_tokens, template_markers

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


# --- the cut turn, in every built-in family ---------------------------------------------------------------
# Every whole corpus turn with calls (full rendered prompt as prefix), cut by the token limit where its last
# call's close has not come yet: that call is never returned. What "its close" is depends on the family:
# - a region whose value ends it (``ends_with_value``: a bare JSON object, ``[TOOL_CALLS][...]``): the
#   value's closing bracket, so a cut right after it keeps the calls;
# - an XML invoke (``xml-invokes``): its ``</invoke>``;
# - otherwise the region's close (``</tool_call>``, ``<|tool_call_end|>``): a cut after the body, its JSON or
#   parameters all closed, cuts the call; a region that is one list of calls is cut as a whole.


def _whole_call_cases() -> list[tuple[str, Path]]:
    return [(family, path) for family, path in corpus_cases()
            if (expected := load_case(path)["expected"]).get("tool_calls")
            and "malformed" not in expected and "trailing" not in expected]


CALL_CASES = _whole_call_cases()
FAMILIES = sorted({family for family, _ in CALL_CASES})


def _call_regions(template: Any, case: dict[str, Any]) -> tuple[list[tuple[str, list[Any]]], list[Any]]:
    """Each tool-call region of the whole turn (its body and the calls it gave), and the message's calls."""
    parser = ResponseParser(template, case["prefix"], tools=case.get("tools"), **case.get("options", {}))
    events = parser.feed(case["output"])
    message, final = parser.finalize()
    regions: list[tuple[str, list[Any]]] = []
    body: list[str] = []
    for event in events + final:
        if event["field"] != "tool_calls":
            continue
        if event["type"] == "region_open":
            body = []
        elif event["type"] == "region_chunk":
            body.append(event["text"])
        elif event["type"] == "region_close":
            value = event["value"]
            regions.append(("".join(body), value if isinstance(value, list) else [value]))
    return regions, message["tool_calls"]


def _cuts(family: str, case: dict[str, Any]) -> list[tuple[str, int, int, bool]]:
    """(where, cut offset, how many of the turn's calls survive, whether the finish reason does not matter)
    for the turn's last call region with a body: cut right after the body (before the region's close) and
    inside the last call's own close (for a list, inside its ``]``: cut whatever the finish reason)."""
    template = get_template(family)
    regions, _ = _call_regions(template, case)
    last = max((i for i, (body, _) in enumerate(regions) if body.strip()), default=None)
    if last is None:
        return []
    body, values = regions[last]
    before = sum(len(v) for _, v in regions[:last])
    start = case["output"].rfind(body)
    assert start >= 0
    field = template["fields"]["tool_calls"]
    # The value's own bracket closes the call where the region has no close of its own after the body (a
    # wrapped spelling, '<tool_call>{...}</tool_call>', has one; a region running to the turn's end,
    # Llama's '<|python_tag|>brave_search.call(...)', ends at the end marker, not at a bracket).
    # (an opener that captured ``to_end`` runs to the region's close instead, see template.extensions).
    opener = load_template(template).fields["tool_calls"].open
    to_end = opener is not None and any(
        m.end() == start and m.groupdict().get("to_end") is not None
        for m in opener.pattern.finditer(case["output"], overlapped=True))
    own_close = (field.get("chatparse", {}).get("ends_with_value") and not to_end) \
        or field.get("content") == "xml-invokes"
    one_list = body.lstrip().startswith("[")
    cut_one = before if one_list else before + len(values) - 1  # the region's calls the cut takes
    inside = start + (body.rfind("invoke>") + 6 if field.get("content") == "xml-invokes" else len(body.rstrip()) - 1)
    return [("after the body", start + len(body), before + len(values) if own_close else cut_one, False),
            ("inside the last call's close", inside, cut_one, one_list)]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_call_whose_close_the_token_limit_cut_is_truncated_in_every_family(family: str) -> None:
    template = get_template(family)
    rng = random.Random(family)
    special, tags = template_markers(template)
    checked = 0
    for path in (path for name, path in CALL_CASES if name == family):
        case = load_case(path)
        options = {"tools": case.get("tools"), **case.get("options", {})}
        _, calls = _call_regions(template, case)
        for where, k, kept, any_reason in _cuts(family, case):
            text = case["output"][:k]
            message = parse_response(text, template, prefix=case["prefix"], finish_reason="length", **options)
            assert message.get("tool_calls", []) == calls[:kept], f"{path.stem}, cut {where}: {text[-40:]!r}"
            if any_reason:  # a list whose ']' never came: cut either way, an end token and padding after it too
                policies = template.get("chatparse", {})
                end = policies["end"][0] + "".join(policies.get("discard_after_end", [])[-1:]) * 2
                for reason, tail in ((None, ""), ("stop", ""), ("stop", end)):
                    other = parse_response(text + tail, template, prefix=case["prefix"], finish_reason=reason,
                                           **options)
                    assert other.get("tool_calls", []) == calls[:kept], f"{path.stem}, cut {where}, {reason}"
                    assert "trailing" not in other
            if kept < len(calls):
                cut = [m for m in message.get("malformed", []) if m["code"] == "truncated"]
                # The raw text is kept (a close marker the cut halved, '</function', is not text and is dropped).
                assert cut and cut[-1]["raw"].strip() and cut[-1]["raw"].strip() in text, f"{path.stem}: raw kept"
            streamed, events = stream(template, case["prefix"], pseudo_tokens(text, special + tags, rng),
                                      finish_reason="length", **options)
            assert streamed == message, f"{path.stem}, cut {where}, token-sized chunks"
            check_event_stream(events, streamed, template)
            checked += 1
    assert checked, f"{family}: no whole turn with a call to cut"


def test_the_sweep_covers_every_built_in_template() -> None:
    """Every built-in that writes tool calls (``gemma2`` is content only)."""
    with_calls = {normalize_name(n) for n in list_templates() if "tool_calls" in load_template(get_template(n)).fields}
    assert {normalize_name(f) for f in FAMILIES} == with_calls
    assert len(FAMILIES) == len(with_calls) >= 64
