"""The xml-text extension (MiniCPM5 parameter values: CDATA sections and XML references)."""

from __future__ import annotations

import time
from typing import Any

import pytest

import chatparse
from chatparse.content.registry import get_content_parser
from chatparse.content.xml_text import parse_xml_text
from chatparse.errors import TemplateError


def test_registered_as_a_chatparse_only_parser() -> None:
    spec = get_content_parser("xml-text")
    assert not spec.compatible and spec.recover is None and spec.description


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Seoul", "Seoul"),
        (" 3 ", " 3 "),
        ("<![CDATA[line 1\nline 2 <b>&</b>]]>", "line 1\nline 2 <b>&</b>"),
        ("<![CDATA[a]]><![CDATA[]]]]><![CDATA[>]]>", "a]]>"),
        ("<![CDATA[&amp; stays]]>", "&amp; stays"),
        ("a&amp;b &lt;c&gt; &quot;&apos; &#33; &#x2714; R&D &bogus; &", "a&b <c> \"' ! ✔ R&D &bogus; &"),
        ("x &amp; <![CDATA[&amp;]]> y", "x & &amp; y"),
        ("", ""),
    ],
)
def test_reads_cdata_and_references(text: str, expected: str) -> None:
    assert parse_xml_text(text, {}) == expected


def test_strip_applies_outside_cdata_only() -> None:
    assert parse_xml_text(" 3 ", {"strip": True}) == "3"
    assert parse_xml_text(" <![CDATA[ a ]]> ", {"strip": True}) == " a "


def test_an_unclosed_cdata_section_is_an_error() -> None:
    with pytest.raises(ValueError, match="CDATA"):
        parse_xml_text("<![CDATA[cut here", {})


def test_long_inputs_read_in_linear_time() -> None:
    start = time.perf_counter()
    assert len(parse_xml_text("<![CDATA[x]]>&amp;" * 20_000, {})) == 40_000
    assert time.perf_counter() - start < 10


def test_used_as_a_value_parser_of_xml_params() -> None:
    template = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<a>",
        "fields": {"tool_calls": {
            "open_pattern": '<function name="(?P<name>[^"]+)">', "close": "</function>", "repeats": True, "content": "xml-params",
            "content_args": {"param_open": '<param name="(?P<key>[^"]+)">', "value_close": "</param>",
                             "value_ends": "close", "default_parser": {"name": "xml-text"}},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}}},
    }
    out = chatparse.parse_response('<function name="f"><param name="a"><![CDATA[1 < 2]]></param>'
                                   '<param name="b">x&amp;y</param></function>', template, prefix="")
    assert out["tool_calls"][0]["function"]["arguments"] == {"a": "1 < 2", "b": "x&y"}


@pytest.mark.parametrize("args", [{"other": 1}, {"strip": "yes"}])
def test_content_args_are_checked_at_load(args: dict[str, Any]) -> None:
    template = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<a>",
        "fields": {"content": {"content": "xml-text", "content_args": args}},
    }
    with pytest.raises(TemplateError):
        chatparse.load_template(template)
