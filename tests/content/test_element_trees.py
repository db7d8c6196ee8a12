"""The xml-element-tree extension (MiniMax M3 call arguments: nested elements behind a namespace marker)."""

from __future__ import annotations

import time
from typing import Any

import pytest

import chatparse
from chatparse.content.element_trees import MAX_DEPTH, parse_xml_element_tree
from chatparse.content.registry import get_content_parser
from chatparse.errors import TemplateError

NS = "]<]minimax[>["
M3 = {"prefix": NS, "list_item": "item", "nested_scalars": "json", "trailer": NS + "</invoke>"}


def el(key: str, value: str) -> str:
    return f"{NS}<{key}>{value}{NS}</{key}>"


def test_registered_as_a_chatparse_only_structured_parser() -> None:
    spec = get_content_parser("xml-element-tree")
    assert not spec.compatible and not spec.streamable and spec.recover is None
    assert spec.description


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("", {}),
        (" \n", {}),
        (el("city", "Seoul") + el("days", "2"), {"city": "Seoul", "days": "2"}),
        (el("t", "\n a <b>&</b> </invoke> <x>\n"), {"t": "\n a <b>&</b> </invoke> <x>\n"}),
        (el("l", el("item", "a") + el("item", "b c")), {"l": ["a", "b c"]}),
        (el("l", el("item", el("sku", "p-1") + el("qty", "2")) + el("item", el("sku", "p-2") + el("qty", "1.5"))),
         {"l": [{"sku": "p-1", "qty": 2}, {"sku": "p-2", "qty": 1.5}]}),
        (el("o", el("a", "true") + el("b", "null") + el("c", "007") + el("d", "-1e2") + el("e", "1e999")),
         {"o": {"a": True, "b": None, "c": "007", "d": -100.0, "e": "1e999"}}),
        (el("o", el("k", "1") + el("k", "2") + el("k", "3")), {"o": {"k": [1, 2, 3]}}),
        (el("o", "note " + el("k", "x") + " more"), {"o": {"k": "x", "$text": "note  more"}}),
        (el("o", el("$text", "y") + "free"), {"o": {"$text": "y", "$$text": "free"}}),
        (el("empty", ""), {"empty": ""}),
        (el("top", "1") + el("top", "2"), {"top": "2"}),
        (el("city", "Seoul") + "\n" + NS + "</invoke>\n", {"city": "Seoul"}),
        (el("v", f"a{NS}b"), {"v": f"a{NS}b"}),
    ],
)
def test_reads_nested_elements(body: str, expected: dict[str, Any]) -> None:
    assert parse_xml_element_tree(body, M3) == expected


def test_nested_leaves_stay_text_by_default() -> None:
    body = el("o", el("n", "5") + el("b", "false"))
    assert parse_xml_element_tree(body, {"prefix": NS}) == {"o": {"n": "5", "b": "false"}}
    assert parse_xml_element_tree(body, {"prefix": NS, "nested_scalars": "json"}) == {"o": {"n": 5, "b": False}}


def test_list_items_can_be_turned_off_and_renamed() -> None:
    body = el("l", el("item", "a") + el("item", "b"))
    assert parse_xml_element_tree(body, {"prefix": NS, "list_item": ""}) == {"l": {"item": ["a", "b"]}}
    assert parse_xml_element_tree(el("l", el("li", "a")), {"prefix": NS, "list_item": "li"}) == {"l": ["a"]}


def test_without_a_prefix_tags_are_plain() -> None:
    assert parse_xml_element_tree("<a><b>1</b></a>", {"nested_scalars": "json"}) == {"a": {"b": 1}}


@pytest.mark.parametrize(
    "body",
    [
        "city=Seoul",
        el("a", "1") + " junk " + el("b", "2"),
        f"{NS}<a>1{NS}</b>",
        f"{NS}<a>1",
        f"{NS}<a>{NS}<b>1{NS}</b>",
        f"{NS}</a>",
        f"{NS}<>",
    ],
)
def test_rejects_what_is_not_a_clean_element_tree(body: str) -> None:
    with pytest.raises(ValueError, match="xml-element-tree"):
        parse_xml_element_tree(body, M3)


def test_depth_is_bounded() -> None:
    deep = f"{NS}<a>" * (MAX_DEPTH + 1) + "x" + f"{NS}</a>" * (MAX_DEPTH + 1)
    with pytest.raises(ValueError, match="deeper"):
        parse_xml_element_tree(deep, M3)
    ok = f"{NS}<a>" * MAX_DEPTH + "x" + f"{NS}</a>" * MAX_DEPTH
    assert parse_xml_element_tree(ok, M3)


def test_long_inputs_read_in_linear_time() -> None:
    n = 20_000
    body = el("l", "".join(el("item", el("k", str(i))) for i in range(n)))
    start = time.perf_counter()
    assert len(parse_xml_element_tree(body, M3)["l"]) == n
    assert len(parse_xml_element_tree(f"{NS}<a>" + "<" * 100_000 + f"{NS}</a>", M3)["a"]) == 100_000
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize("args", [{"other": 1}, {"nested_scalars": "python"}, {"prefix": 3}])
def test_content_args_are_checked_at_load(args: dict[str, Any]) -> None:
    template = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<a>",
        "fields": {"tool_calls": {"open": "<c>", "close": "</c>", "content": "xml-element-tree",
                                  "content_args": args}},
    }
    with pytest.raises(TemplateError):
        chatparse.load_template(template)


# --- typed by the schema, and only by the schema --------------------------------------------------------

PROMPT = "]~b]ai\n"


def m3_call(arguments: str) -> str:
    """A MiniMax M3 turn with one call, laid out as its chat template writes it, EOS padding after the turn."""
    return (f"</mm:think>{NS}<tool_call>\n{NS}<invoke name=\"save\">{arguments}{NS}</invoke>\n{NS}</tool_call>"
            "[e~[\n[e~[")


def save_tool(**properties: Any) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": "save", "parameters": {
        "type": "object", "properties": properties}}}]


def arguments_of(output: str, tools: list[dict[str, Any]] | None) -> Any:
    message = chatparse.parse_response(output, "minimax_m3", prefix=PROMPT, tools=tools)
    arguments = message["tool_calls"][0]["function"]["arguments"]
    assert type(arguments) is dict  # the reader's WrittenArguments never leave the engine
    return arguments


ITEMS = el("body", el("text", "hi") + el("text", "there"))


def test_reader_keeps_the_text_of_every_value_it_structured_or_typed() -> None:
    value = parse_xml_element_tree(ITEMS + el("o", el("zip", "12345") + el("note", "x")), M3)
    assert value == {"body": {"text": ["hi", "there"]}, "o": {"zip": 12345, "note": "x"}}
    assert value.written == {("body",): el("text", "hi") + el("text", "there"),
                             ("o",): el("zip", "12345") + el("note", "x"), ("o", "zip"): "12345"}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # A string parameter is the model's text, nested tags included, exactly as written.
        ({"type": "string"}, el("text", "hi") + el("text", "there")),
        ({"type": ["string", "null"]}, el("text", "hi") + el("text", "there")),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, el("text", "hi") + el("text", "there")),
        # A schema that admits the structure keeps it.
        ({"type": "object"}, {"text": ["hi", "there"]}),
        ({"anyOf": [{"type": "object"}, {"type": "string"}]}, {"text": ["hi", "there"]}),
        ({}, {"text": ["hi", "there"]}),
    ],
)
def test_a_string_parameter_is_the_text_as_written(schema: dict[str, Any], expected: Any) -> None:
    assert arguments_of(m3_call(ITEMS), save_tool(body=schema)) == {"body": expected}


def test_without_tools_the_structure_is_kept() -> None:
    assert arguments_of(m3_call(ITEMS + el("n", "3")), None) == {"body": {"text": ["hi", "there"]}, "n": "3"}


def test_nested_values_are_typed_by_the_nested_schema() -> None:
    lines = el("lines", el("item", el("sku", "12345") + el("qty", "2")) + el("item", el("sku", "007") + el("qty", "1")))
    where = el("where", el("zip", "02139") + el("floor", "3"))
    tools = save_tool(
        lines={"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "qty": {"type": "integer"}}}},
        where={"anyOf": [{"type": "null"}, {"type": "object", "properties": {
            "zip": {"type": "string"}, "floor": {"type": ["integer", "null"]}}}]},
        tags={"type": "array", "items": {"type": "string"}},
        count={"type": "integer", "nullable": True},
        ok={"type": "boolean"},
    )
    output = m3_call(lines + where + el("tags", el("item", "1") + el("item", "true")) + el("count", "4")
                     + el("ok", "false"))
    assert arguments_of(output, tools) == {
        "lines": [{"sku": "12345", "qty": 2}, {"sku": "007", "qty": 1}],
        "where": {"zip": "02139", "floor": 3},
        "tags": ["1", "true"],
        "count": 4,
        "ok": False,
    }


def test_typed_values_are_the_same_however_the_output_is_streamed() -> None:
    from tests.streamcheck import assert_chunking_equivalent

    tools = save_tool(body={"type": "string"}, ids={"type": "array", "items": {"type": "string"}})
    output = m3_call(ITEMS + el("ids", el("item", "12345") + el("item", "2")))
    message = assert_chunking_equivalent("minimax_m3", PROMPT, output, tools=tools)
    assert message["tool_calls"][0]["function"]["arguments"] == {
        "body": el("text", "hi") + el("text", "there"), "ids": ["12345", "2"]}
