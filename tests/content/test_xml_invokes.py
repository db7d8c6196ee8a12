"""The xml-invokes content parser: calls written as XML invoke elements, several per region (Muse's ATEM
blocks, dots' <dots_function_call> blocks), read strictly or item by item."""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from chatparse.content.registry import get_content_parser
from chatparse.content.xml_invokes import parse_xml_invokes, recover_xml_invokes
from chatparse.errors import TemplateError

ATEM: dict[str, Any] = {
    "invoke_open": r'<atem:invoke\s+name="(?P<name>[^"]*)"\s*>',
    "invoke_close": "</atem:invoke>",
    "wrapper": ["<atem:function_calls>", "</atem:function_calls>"],
    "param_open": r'<atem:parameter\s+name="(?P<key>[^"]*)"\s*>',
    "value_close": "</atem:parameter>",
    "value_ends": "close",
}
QUOTED = "(?:\"(?P<{g}>[^\"]*)\"|'(?P<{g}>[^']*)'|(?P<{g}>[^\\s>\"']+))"
DOTS: dict[str, Any] = {
    "invoke_open": r"<invoke\s+name\s*=\s*" + QUOTED.format(g="name") + r"\s*>",
    "invoke_close": "</invoke>",
    "json_call": True,
    "param_open": r"<parameter\s+name\s*=\s*" + QUOTED.format(g="key") + r"\s*>",
    "value_close": "</parameter>",
    "value_ends": "close",
    "strip_newlines": True,
}


def atem(name: str, params: list[tuple[str, str]]) -> str:
    inner = "".join(f'<atem:parameter name="{k}">{v}</atem:parameter>\n' for k, v in params)
    return f'<atem:invoke name="{name}">\n{inner}</atem:invoke>'


def test_registered_as_a_chatparse_only_list_parser() -> None:
    spec = get_content_parser("xml-invokes")
    assert not spec.compatible and not spec.streamable and spec.recover is not None
    assert spec.description


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (f"<atem:function_calls>\n{atem('get_weather', [('city', 'Seoul'), ('days', '2')])}\n</atem:function_calls>",
         [{"name": "get_weather", "arguments": {"city": "Seoul", "days": "2"}}]),
        # several invokes, whitespace and wrapper literals around and between them
        (f"\n<atem:function_calls>{atem('a', [])}\n{atem('b', [('x', '1')])}</atem:function_calls>\n",
         [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": "1"}}]),
        # no wrapper at all
        (atem("a", []), [{"name": "a", "arguments": {}}]),
        # close text inside a value is data: a call ends at a close followed by the next call, a wrapper or the end
        (atem("w", [("t", "a </atem:invoke> b </atem:parameter> c")]),
         [{"name": "w", "arguments": {"t": "a </atem:invoke> b </atem:parameter> c"}}]),
        # names are stripped
        ('<atem:invoke name=" f ">\n</atem:invoke>', [{"name": "f", "arguments": {}}]),
        ("", []),
        ("<atem:function_calls>\n</atem:function_calls>", []),
    ],
)
def test_atem_blocks(body: str, expected: list[dict[str, Any]]) -> None:
    assert parse_xml_invokes(body, ATEM) == expected


def test_value_parsers_pick_the_value_reading() -> None:
    args = {**ATEM, "default_parser": {"name": "json", "args": {"allow_non_json": True, "strip": False}}}
    body = atem("f", [("n", "2"), ("s", "  spaced  "), ("o", '{"a": [1, null]}'), ("b", "true")])
    assert parse_xml_invokes(body, args) == [
        {"name": "f", "arguments": {"n": 2, "s": "  spaced  ", "o": {"a": [1, None]}, "b": True}}]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('<invoke name="a">\n<parameter name="k">\nv\n</parameter>\n</invoke>',
         [{"name": "a", "arguments": {"k": "v"}}]),
        ("<invoke name='a'>\n</invoke>\n<invoke name=b>\n<parameter name=k>  x  </parameter>\n</invoke>",
         [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"k": "  x  "}}]),
        # one framing newline each side is layout; indentation is data
        ('<invoke name="a">\n<parameter name="code">\n\n    x = 1\n\n</parameter>\n</invoke>',
         [{"name": "a", "arguments": {"code": "\n    x = 1\n"}}]),
        # the JSON fallback (name + arguments or parameters)
        ('\n{"name": "get_weather", "parameters": {"city": "Oslo"}}\n',
         [{"name": "get_weather", "arguments": {"city": "Oslo"}}]),
        ('{"name": "a", "arguments": {"x": "}"}}\n<invoke name="b">\n</invoke>',
         [{"name": "a", "arguments": {"x": "}"}}, {"name": "b", "arguments": {}}]),
    ],
)
def test_dots_blocks(body: str, expected: list[dict[str, Any]]) -> None:
    assert parse_xml_invokes(body, DOTS) == expected


@pytest.mark.parametrize(
    ("body", "args", "message"),
    [
        ("prose before " + atem("a", []), ATEM, "text outside the calls"),
        (atem("a", []) + " trailing prose", ATEM, "has no '</atem:invoke>'"),
        ('<atem:invoke name="a">\ncity is Oslo\n</atem:invoke>', ATEM, "holds no parameters"),
        ('<atem:invoke name="a">\n<atem:parameter name="k">v\n</atem:invoke>', ATEM, "has no '</atem:parameter>'"),
        ('<atem:invoke name="  ">\n</atem:invoke>', ATEM, "empty name"),
        ('<atem:invoke name="a">\n<atem:parameter name="k">v</atem:parameter>', ATEM, "has no '</atem:invoke>'"),
        ('{"name": "a", "arguments": [1]}', DOTS, "must be a JSON object"),
        ('{"arguments": {}}', DOTS, "no name key"),
        ('{"name": "a", "arguments": {', DOTS, "ends inside the JSON call object"),
    ],
)
def test_strict_reading_rejects_what_is_not_calls(body: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_xml_invokes(body, args)


def test_item_by_item_keeps_the_good_calls_and_reports_each_bad_one() -> None:
    good_a, good_b = atem("a", [("x", "1")]), atem("b", [])
    bad = '<atem:invoke name="c">\nprose\n</atem:invoke>'
    body = f"<atem:function_calls>\n{good_a}\n{bad}\n{good_b}\n</atem:function_calls>"
    good, problems = recover_xml_invokes(body, ATEM)
    assert [(value, raw) for value, raw in good] == [
        ({"name": "a", "arguments": {"x": "1"}}, good_a), ({"name": "b", "arguments": {}}, good_b)]
    assert [(p.raw, p.at_end) for p in problems] == [(bad, False)]


def test_a_call_cut_off_is_at_the_end_and_the_calls_before_it_are_kept() -> None:
    cut = '<atem:invoke name="b">\n<atem:parameter name="x">Hel'
    good, problems = recover_xml_invokes(f"<atem:function_calls>\n{atem('a', [])}\n{cut}", ATEM)
    assert [value for value, _ in good] == [{"name": "a", "arguments": {}}]
    assert [(p.raw, p.at_end) for p in problems] == [(cut, True)]
    # a cut JSON call object and a cut invoke opener are at the end too
    for body in ('{"name": "a", "arguments": {"x": "Hel', '<invoke name="a">\n<param'):
        assert recover_xml_invokes(body, DOTS)[1][0].at_end


def test_the_only_bad_item_is_the_whole_region() -> None:
    body = '\n<atem:function_calls>\n<atem:invoke name="a">\nprose\n</atem:invoke>\n</atem:function_calls>'
    good, problems = recover_xml_invokes(body, ATEM)
    assert good == [] and [p.raw for p in problems] == [body]


def test_a_wrapper_close_cut_off_at_the_end_loses_nothing() -> None:
    good, problems = recover_xml_invokes(f"<atem:function_calls>\n{atem('a', [])}\n</atem:function_ca", ATEM)
    assert [value for value, _ in good] == [{"name": "a", "arguments": {}}] and problems == []


def test_a_next_call_cut_in_its_opener_keeps_the_call_before_it() -> None:
    good, problems = recover_xml_invokes(f"{atem('a', [])}\n<atem:inv", ATEM)
    assert [value for value, _ in good] == [{"name": "a", "arguments": {}}]
    assert [(p.raw, p.at_end) for p in problems] == [("<atem:inv", True)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({**ATEM, "invoke_open": "<atem:invoke>"}, "named group 'name'"),
        ({k: v for k, v in ATEM.items() if k != "invoke_close"}, "invoke_close is required"),
        ({**ATEM, "invoke_close": ""}, "non-empty"),
        ({**ATEM, "wrapper": ["<x>", ""]}, "wrapper"),
        ({**ATEM, "param_open": "<p>"}, "named group 'key'"),
        ({**ATEM, "trailer": "</f>"}, "unknown content_args key"),
        ({**ATEM, "value_ends": "never"}, "value_ends"),
        ({**ATEM, "invoke_open": "(a{5000})"}, "counted repeats"),
    ],
)
def test_content_args_are_checked_at_load(args: dict[str, Any], message: str) -> None:
    template = {"start_anchor": "<a>", "fields": {"tool_calls": {
        "open": "<c>", "close": "</c>", "content": "xml-invokes", "content_args": args}}}
    with pytest.raises(TemplateError, match=message):
        chatparse.load_template(template)


def test_in_a_template_with_item_by_item_recovery() -> None:
    template = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<a>",
        "fields": {
            "tool_calls": {
                "open": "<c>", "close": "</c>", "repeats": True, "content": "xml-invokes", "content_args": ATEM,
                "transform_each": True,
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}},
                "chatparse": {"structure": {"spans": [["<atem:parameter", "</atem:parameter>"]]},
                              "truncation": True, "extend": True},
            },
            "content": {"content": "text"},
        },
    }
    bad = '<atem:invoke name="b">\nprose\n</atem:invoke>'
    output = f'<c>{atem("a", [("n", "2")])}\n{bad}</c><c>{atem("d", [("v", "</c> inside")])}</c>'
    tools = [{"type": "function", "function": {"name": "a", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}}]
    message = chatparse.parse_response(output, template, prefix="", tools=tools, on_malformed="recover")
    assert message["tool_calls"] == [
        {"type": "function", "function": {"name": "a", "arguments": {"n": 2}}},
        {"type": "function", "function": {"name": "d", "arguments": {"v": "</c> inside"}}}]
    assert message["malformed"] == [{"field": "tool_calls", "code": "content_parse_failed", "raw": bad}]
    cut = chatparse.parse_response(f'<c>{atem("a", [])}\n<atem:invoke name="b">\n<atem:parameter name="x">Hel',
                                   template, prefix="")
    assert cut["tool_calls"] == [{"type": "function", "function": {"name": "a", "arguments": {}}}]
    assert cut["malformed"][0]["code"] == "truncated"


def test_values_read_as_json_keep_their_text() -> None:
    """With a JSON default parser (Muse Glimmer) a value that reads as JSON is typed, and keeps its text so
    that the request's tools can give a string parameter the text the model wrote."""
    args = {**ATEM, "default_parser": {"name": "json", "args": {"allow_non_json": True, "strip": False}}}
    body = ('<atem:invoke name="w">\n<atem:parameter name="n">2026</atem:parameter>\n'
            '<atem:parameter name="s">Oslo</atem:parameter>\n</atem:invoke>')
    arguments = parse_xml_invokes(body, args)[0]["arguments"]
    assert arguments == {"n": 2026, "s": "Oslo"}
    assert arguments.written == {("n",): "2026"}
    assert parse_xml_invokes(body, ATEM)[0]["arguments"] == {"n": "2026", "s": "Oslo"}
