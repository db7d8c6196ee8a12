"""Item-by-item recovery of list regions: it always ends, every item it reports is text of the region,
and where the whole region parses it gives exactly the whole parse."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from chatparse.content.json_calls import parse_json_calls, recover_json_calls
from chatparse.content.python_call_list import parse_python_call_list, recover_python_call_list
from chatparse.content.python_calls import parse_python_calls, recover_python_calls

JSON_PIECES = ['{"name": "a"}', '{"name": "b", "arguments": {"x": [1, "]"]}}', "[", "]", "{", "}", ",", '"', " ",
               '{"nam', "x", "\n", ":"]
PYTHON_PIECES = ["a()", "b(x=1)", "c(s='),]')", "[", "]", "(", ")", ",", "'", " ", "\n", "d(", "x", "="]

PARSERS: list[tuple[Callable[..., Any], Callable[..., Any], dict[str, Any], list[str]]] = [
    (parse_json_calls, recover_json_calls, {"accept": ["array", "object"]}, JSON_PIECES),
    (parse_python_calls, recover_python_calls, {}, PYTHON_PIECES),
    (parse_python_calls, recover_python_calls, {"accept_json": True}, [*JSON_PIECES, *PYTHON_PIECES, '{"nme": 1}']),
    (parse_python_call_list, recover_python_call_list, {}, PYTHON_PIECES),
]


@settings(max_examples=500, deadline=None, derandomize=True)
@given(which=st.integers(0, len(PARSERS) - 1), data=st.data())
def test_recovery_ends_and_reports_only_region_text(which: int, data: st.DataObject) -> None:
    parse, recover, args, pieces = PARSERS[which]
    text = "".join(data.draw(st.lists(st.sampled_from(pieces), max_size=14)))
    good, bad = recover(text, args)
    assert len(good) + len(bad) <= len(text) + 1
    for _, raw in good:
        assert raw in text
    for item in bad:
        assert item.raw.strip() in text and item.error
    try:
        whole = parse(text, args)
    except ValueError:
        return
    assert [value for value, _ in good] == whole
    assert bad == [] or not whole


def test_a_stray_closer_is_one_bad_item_not_a_hang() -> None:
    good, bad = recover_json_calls('{"name": "a"}]]', {"accept": ["object"]})
    assert [value for value, _ in good] == [{"name": "a", "arguments": {}}]
    assert [item.raw for item in bad] == ["]]"]
    good, bad = recover_python_calls("f())", {})
    assert [value["name"] for value, _ in good] == ["f"] and [item.raw for item in bad] == [")"]


def test_a_json_call_list_with_a_bad_call_object_is_recovered_call_by_call() -> None:
    """LFM2's python-calls also read a JSON call list; a call object without a name in it was a ValueError
    out of recovery (an EngineFault; hostile fuzzing, seed openai.stream:2027592)."""
    args = {"accept_json": True}
    good, bad = recover_python_calls('[{"name": "a", "arguments": {}}, {"nme": "b"}, {"name": "c"}]', args)
    assert [call for call, _ in good] == [{"name": "a", "arguments": {}}, {"name": "c", "arguments": {}}]
    assert [item.raw for item in bad] == ['{"nme": "b"}']
    good, bad = recover_python_calls('{"naNaNInfinityme": "f", "arguments": {"city": "Pa,is"}}', args)
    assert good == [] and len(bad) == 1 and "no name key" in bad[0].error
