"""Error messages stay drop-in: for each input transformers 5.24 raises on, chatparse raises too and its
message contains transformers' message text (``differential.message_difference``: in order, a quoted
region over 80 characters may be an excerpt). One case per raise site of the reference: parsing, template
loading and tool definitions. The random differential suite checks the same on every case where both raise."""

from __future__ import annotations

import warnings
from enum import Enum
from typing import Any, Literal

import pytest

import chatparse
from tests.engine import differential as d

reference = pytest.importorskip("transformers.utils.chat_parsing")
from transformers.utils.chat_parsing.response_templates import load_response_template  # noqa: E402


def _field(content: str = "text", **spec: Any) -> dict[str, Any]:
    return {"start_anchor": "<|a|>", "fields": {"x": {"open": "<x>", "close": "</x>", "content": content, **spec}}}


def _raised(call: Any) -> BaseException:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except Exception as exc:  # the comparison is about the message of whatever escapes
            return exc
    raise AssertionError("expected an exception")


PARSE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("json", _field("json"), "<x>{'bad': json}</x>"),
    ("json-long-region", _field("json"), "<x>" + "x" * 200 + "</x>"),
    ("json-dialect", _field("json", content_args={"unquoted_keys": True}), "<x>{a: b}</x>"),
    ("json-sentinel", _field("json", content_args={"string_delims": [["<q>", "</q>"]]}), "<x>\x01</x>"),
    ("json-too-deep", _field("json"), "<x>" + "[" * 5000 + "</x>"),
    ("int", _field("int"), "<x> abc </x>"),
    ("int-long", _field("int"), "<x>" + "x" * 300 + "</x>"),
    ("float-long", _field("float"), "<x>" + "y" * 300 + "</x>"),
    *[(f"call-list-{name}", _field("python-call-list"), f"<x>{body}</x>") for name, body in {
        "open": "x", "positional": "[f(1)]", "trailing-comma": "[f(a=1,)]", "escape": "[f(a='\\q')]",
        "string": '[f(a="x\ny")]', "repeated": "[f(a=1, a=2)]", "integer": "[f(a=99999999999999999)]",
        "float": "[f(a=1e999)]", "key": "[f(a={1: 2})]", "value": "[f(a=@)]", "surrogate": "[f(a='\\ud800')]",
        "after": "[f()] x", "depth": "[f(a=" + "[" * 101 + ")]", "long": "[" + "f(a=1), " * 30 + "g(1)]",
    }.items()],
    ("missing-key", _field("json", transform={"a": "{content.args}"}), '<x>{"name": "n"}</x>'),
    ("index-into-str", _field("json", transform={"a": "{content.name.x}"}), '<x>{"name": "n"}</x>'),
    ("undefined", _field("json", transform={"a": "{missing}"}, transform_each=True), "<x>[{}]</x>"),
    ("each-not-list", _field("json", transform={"a": "{x}"}, transform_each=True), "<x>{}</x>"),
    ("each-not-dict", _field("json", transform={"a": "{x}"}, transform_each=True), "<x>[1]</x>"),
    ("join", _field("json", repeats=True, join=""), "<x>{}</x>"),
    ("required", _field(optional=False), "nothing"),
]


@pytest.mark.parametrize(("name", "template", "output"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse_errors_contain_the_reference_message(name: str, template: dict[str, Any], output: str) -> None:
    ref = _raised(lambda: reference.parse_response(output, template, prefix=""))
    ours = _raised(lambda: chatparse.parse_response(output, template, prefix=""))
    assert isinstance(ours, chatparse.ChatparseError)
    assert d.message_difference(ours, ref) is None, d.message_difference(ours, ref)


def test_the_golden_case_from_the_issue() -> None:
    template = _field("json", transform={"a": "{content.args}"})
    with pytest.raises(ValueError, match="missing key 'args'") as caught:
        chatparse.parse_response('<x>{"name": "n"}</x>', template, prefix="")
    assert str(caught.value) == (
        "Field 'x': transform placeholder '{content.args}' is missing key 'args'. Available: ['name']"
    )


def test_region_excerpts_replace_only_long_quoted_text() -> None:
    ours = _raised(lambda: chatparse.parse_response("<x>" + "x" * 200 + "</x>", _field("json"), prefix=""))
    assert str(ours) == (
        "Field 'x' (json parser): json parser could not parse region as JSON.\n"
        f"Content: {'x' * 40!r}…{'x' * 40!r} (200 chars)\n"
        "Error: Expecting value: line 1 column 1 (char 0)"
    )


def _feed_after_finalize(lib: Any) -> None:
    parser = lib.ResponseParser(_field(), prefix="")
    parser.finalize()
    parser.feed("x")


@pytest.mark.parametrize("call", [lambda lib: lib.ResponseParser(_field()), _feed_after_finalize],
                         ids=["no-prefix", "feed-after-finalize"])
def test_usage_errors_contain_the_reference_message(call: Any) -> None:
    ours, ref = _raised(lambda: call(chatparse)), _raised(lambda: call(reference))
    assert d.message_difference(ours, ref) is None, d.message_difference(ours, ref)


OK = {"open": "<x>", "close": "</x>"}


def _fields(**fields: Any) -> dict[str, Any]:
    return {"start_anchor": "<|a|>", "fields": fields}


LOAD_CASES: list[tuple[str, Any]] = [
    ("not-a-dict", [1]),
    ("version", {"version": 2, **_fields(x=OK)}),
    ("unknown-top-key", {**_fields(x=OK), "extra": 1}),
    ("defaults", {**_fields(x=OK), "defaults": []}),
    ("no-fields", _fields()),
    ("no-anchor", {"fields": {"x": OK}}),
    ("both-anchors", {**_fields(x=OK), "start_anchor_pattern": "a"}),
    ("field-not-a-dict", _fields(x=5)),
    ("unknown-field-key", _fields(x={**OK, "bogus": 1})),
    ("unknown-parser", _fields(x={**OK, "content": "nope"})),
    ("open-and-pattern", _fields(x={"open": "<x>", "open_pattern": "<x>"})),
    ("empty-literal-list", _fields(x={"open": []})),
    ("non-string-literal", _fields(x={"open": [1]})),
    ("literal-type", _fields(x={"open": 5})),
    ("empty-literal", _fields(x={"open": [""]})),
    ("bad-regex", _fields(x={"open_pattern": "("})),
    ("join-type", _fields(x={**OK, "join": 5, "repeats": True})),
    ("join-without-repeats", _fields(x={**OK, "join": ""})),
    ("transform-each-type", _fields(x={**OK, "transform_each": 1})),
    ("transform-each-alone", _fields(x={**OK, "transform_each": True})),
    ("captures-without-transform", _fields(x={"open_pattern": "<(?P<n>x)>"})),
    ("interpolation", _fields(x={**OK, "transform": {"a": "pre {content}"}})),
    ("two-implicit", _fields(a={}, b={})),
]


@pytest.mark.parametrize(("name", "spec"), LOAD_CASES, ids=[c[0] for c in LOAD_CASES])
def test_load_errors_contain_the_reference_message(name: str, spec: Any) -> None:
    ref = _raised(lambda: load_response_template(spec))
    ours = _raised(lambda: chatparse.load_template(spec))
    assert isinstance(ours, chatparse.TemplateError)
    assert d.message_difference(ours, ref) is None, d.message_difference(ours, ref)


@pytest.mark.parametrize(
    ("name", "content_args"),
    [("no-tag-pattern", {}), ("no-key-group", {"tag_pattern": r"<(?P<k>\w+)>(?P<value>.*?)</\1>"})],
)
def test_xml_inline_arguments_fail_at_load_with_the_reference_parse_message(name: str, content_args: Any) -> None:
    """transformers finds these when a region closes (a deliberate difference); the words are the same."""
    template = _field("xml-inline", content_args=content_args)
    ref = _raised(lambda: reference.parse_response("<x><a>1</a></x>", template, prefix=""))
    ours = _raised(lambda: chatparse.load_template(template))
    assert isinstance(ours, chatparse.TemplateError)
    assert d.message_difference(ours, ref) is None, d.message_difference(ours, ref)


def _no_doc(a: int) -> None:
    pass


def _no_hint(a, b: int) -> None:  # type: ignore[no-untyped-def]
    """Doc.

    Args:
        a: x
    """


def _undescribed(a: int) -> None:
    """Doc."""


class _Custom:
    pass


class _Empty(Enum):
    pass


class _Pairs(Enum):
    A = (1, 2)


def _with_hint(hint: Any) -> Any:
    def tool(a: hint) -> None:  # type: ignore[valid-type]
        """Doc.

        Args:
            a: x
        """

    return tool


TOOL_CASES = [
    ("no-docstring", _no_doc),
    ("no-type-hint", _no_hint),
    ("no-description", _undescribed),
    ("custom-class", _with_hint(_Custom)),
    ("one-tuple", _with_hint(tuple[int])),
    ("ellipsis-tuple", _with_hint(tuple[int, ...])),
    ("literal", _with_hint(Literal[_Custom])),  # type: ignore[valid-type]
    ("empty-enum", _with_hint(_Empty)),
    ("enum-values", _with_hint(_Pairs)),
]


@pytest.mark.parametrize(("name", "tool"), TOOL_CASES, ids=[c[0] for c in TOOL_CASES])
def test_tool_definition_errors_contain_the_reference_message(name: str, tool: Any) -> None:
    template = _field()
    ref = _raised(lambda: reference.parse_response("<x>1</x>", template, prefix="", tools=[tool]))
    ours = _raised(lambda: chatparse.parse_response("<x>1</x>", template, prefix="", tools=[tool]))
    assert isinstance(ours, chatparse.ChatparseError)
    assert d.message_difference(ours, ref) is None, d.message_difference(ours, ref)
