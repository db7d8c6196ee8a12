"""The xml-parameters body: the spellings its write-form keys give, and the value texts it refuses because
the family's parser would read them differently (the property test in test_builtins covers the rest)."""

from __future__ import annotations

import re
from typing import Any

import pytest

import chatparse
from chatparse.grammar import tool_grammar
from chatparse.grammar.ir import trie
from tests.grammar.walk import accepts

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "save", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "tags": {"type": "array", "items": {
            "type": "string"}}, "count": {"type": "integer"}, "mode": {"type": "string", "enum": ["a", "b"]}},
        "required": ["path"]}}},
]


def _qwen(value: str) -> str:
    return f"<tool_call>\n<function=save>\n<parameter=path>\n{value}\n</parameter>\n</function>\n</tool_call>"


def _required(family: str) -> str:
    return tool_grammar(family, TOOLS, tool_choice="required").lark


def test_trie_matches_exactly_its_words_or_their_first_parts() -> None:
    words = ["<|im_end|>", "<|im_start|>", "<|im", "ab"]
    exact = re.compile(trie(words))
    assert all(exact.fullmatch(w) for w in words)
    assert not any(exact.fullmatch(w) for w in ["<|im_", "a", "<|im_end|>x", ""])
    first_parts = re.compile(trie(words, prefixes=True))
    assert all(first_parts.fullmatch(w[:i]) for w in words for i in range(1, len(w) + 1))
    assert not first_parts.fullmatch("<|x")


@pytest.mark.parametrize("value", ["a</parameter>\n<parameter=x>\nb", "a</parameter>b", "a\n<parameter=x>\nb",
                                   "a</parameter>\n</function>"])
def test_a_string_value_holds_no_close_or_opener_the_parser_would_take_as_structure(value: str) -> None:
    ok, _ = accepts(_required("qwen3_coder"), _qwen(value))
    assert not ok


@pytest.mark.parametrize("value", ["a <parameter=x> b", "</function></tool_call> <|im_end|>", "", "x\n\ny"])
def test_a_string_value_holds_markers_the_parser_reads_as_data(value: str) -> None:
    text = _qwen(value)
    ok, why = accepts(_required("qwen3_coder"), text)
    assert ok, why
    message = chatparse.parse_response(text, "qwen3_coder", prefix="", tools=TOOLS)
    assert message["tool_calls"][0]["function"]["arguments"] == {"path": value}


def test_an_enum_is_written_raw() -> None:
    text = "<tool_call>\n<function=save>\n<parameter=path>\np\n</parameter>\n<parameter=mode>\nb\n</parameter>\n" \
           "</function>\n</tool_call>"
    assert accepts(_required("qwen3_coder"), text)[0]
    assert not accepts(_required("qwen3_coder"), text.replace("\nb\n", '\n"b"\n'))[0]


def _dsml(count_kind: str) -> str:
    return ('<｜DSML｜tool_calls>\n<｜DSML｜invoke name="save">\n<｜DSML｜parameter name="path" string="true">p'
            f'</｜DSML｜parameter>\n<｜DSML｜parameter name="count" string="{count_kind}">3</｜DSML｜parameter>\n'
            '</｜DSML｜invoke>\n</｜DSML｜tool_calls>')


def test_the_dsml_string_attribute_says_how_each_value_is_written() -> None:
    lark = _required("deepseek_v4")
    assert accepts(lark, _dsml("false"))[0]
    assert not accepts(lark, _dsml("true"))[0]


def test_python_literal_values_where_the_chat_template_writes_reprs() -> None:
    text = ("<seed:tool_call>\n<function=save>\n<parameter=path>p</parameter>\n<parameter=tags>['a', 'b c']"
            "</parameter>\n</function>\n</seed:tool_call>")
    ok, why = accepts(_required("seed_oss"), text)
    assert ok, why
    message = chatparse.parse_response(text, "seed_oss", prefix="", tools=TOOLS)
    assert message["tool_calls"][0]["function"]["arguments"] == {"path": "p", "tags": ["a", "b c"]}


@pytest.mark.parametrize(("value", "admitted"), [("plain", True), ("<![CDATA[a <b> & c]]>", True), ("a <b>", False),
                                                 ("a &amp; b", False)])
def test_xml_text_values_are_raw_without_markup_or_one_cdata_section(value: str, admitted: bool) -> None:
    text = f'<function name="save"><param name="path">{value}</param></function>'
    assert accepts(_required("minicpm5"), text)[0] is admitted
