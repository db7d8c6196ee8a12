"""Body ``typed-parameters``: Kimi K3's ``<|open|>argument key="K" type="T"<|sep|>V<|close|>argument<|sep|>``, the
type printed from the value written (``number`` for integers too), strings raw up to the first close, keys with
the entities the parser decodes; every admitted call parses back to schema-valid arguments."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from chatparse.grammar.body_typed_parameters import printed_type
from tests.grammar.walk import accepts

FAMILY = "kimi_k3"
PROMPT = '<|open|>message role="assistant"<|sep|><|open|>response<|sep|>'
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "pick", "parameters": {
        "type": "object", "properties": {
            "size": {"type": ["integer", "null"]},
            "mode": {"enum": ["a b", 1, True]},
            'odd "key" & more': {"type": "string"},
            "where": {"type": "object"},
            "note": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]},
        }, "required": ["mode"]}}},
]
CALL = '<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="pick" index="1"<|sep|>{}<|close|>call<|sep|>' \
       '<|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>'


def _arg(key: str, kind: str, value: str) -> str:
    return f'<|open|>argument key="{key}" type="{kind}"<|sep|>{value}<|close|>argument<|sep|>'


def _required(tools: list[dict[str, Any]] = TOOLS, **options: Any) -> str:
    return tool_grammar(FAMILY, tools, tool_choice="required", prefix=PROMPT, **options).lark


@pytest.mark.parametrize("args", [
    _arg("size", "number", "3") + _arg("mode", "string", "a b"),
    _arg("size", "null", "null") + _arg("mode", "number", "1"),
    _arg("mode", "boolean", "true") + _arg("odd &quot;key&quot; &amp; more", "string",
                                           "<|open|>call<|sep|><|end_of_msg|> x"),
    _arg("mode", "string", "a b") + _arg("where", "object", '{"room": 5, "tags": [null]}'),
    _arg("mode", "string", "a b") + _arg("note", "string", "[1, 2]"),
    _arg("mode", "string", "a b") + _arg("note", "array", "[1, 2]"),
])
def test_admits_each_type_as_printed_and_parses_back(args: str) -> None:
    text = CALL.format(args)
    ok, why = accepts(_required(), text)
    assert ok, why
    message = chatparse.parse_response(text, FAMILY, prefix=PROMPT, tools=TOOLS)
    (call,) = message["tool_calls"]
    jsonschema.validate(call["function"]["arguments"], TOOLS[0]["function"]["parameters"])


@pytest.mark.parametrize("args", [
    _arg("mode", "string", "1"),  # 1 is a number: type="number"
    _arg("mode", "number", "true"),  # a boolean printed as a number
    _arg("size", "integer", "3") + _arg("mode", "string", "a b"),  # the template prints 'number'
    _arg("mode", "string", "a b") + _arg('odd "key" & more', "string", "x"),  # the key is escaped
    _arg("mode", "string", "a b") + _arg("where", "object", '{"a": "<|close|>"}'),  # no marker in JSON strings
    _arg("mode", "string", "a b") + _arg("note", "string", "x<|close|>argument<|sep|>y"),  # a close in a string
])
def test_rejects_other_spellings(args: str) -> None:
    ok, _ = accepts(_required(), CALL.format(args))
    assert not ok


def test_printed_type_follows_the_chat_template() -> None:
    assert [printed_type(v) for v in ("x", 2, 2.5, True, None, {}, [])] == \
        ["string", "number", "number", "boolean", "null", "object", "array"]


def test_a_length_on_a_raw_string_needs_lenient() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}}}]
    with pytest.raises(GrammarError) as info:
        _required(tools)
    assert info.value.code == "unsupported_schema"
    assert tool_grammar(FAMILY, tools, prefix=PROMPT, lenient=True).unenforced == \
        ("tools/f/parameters/properties/s/maxLength",)


def test_the_format_is_checked() -> None:
    template = chatparse.get_template(FAMILY)
    form = template["fields"]["tool_calls"]["chatparse"]["write"]
    form["parameter"] = form["parameter"].replace(' type="{type}"', "")
    with pytest.raises(GrammarError) as info:
        tool_grammar(template, TOOLS, prefix=PROMPT)
    assert info.value.code == "bad_write_form"
