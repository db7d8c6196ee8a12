"""The part-B content-parser extensions: json-calls and python-calls."""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chatparse
from chatparse.content.json_calls import parse_json_calls
from chatparse.content.python_calls import parse_python_calls
from chatparse.content.registry import get_content_parser
from chatparse.errors import TemplateError


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


@pytest.mark.parametrize("name", ["json-calls", "python-calls"])
def test_registered_as_chatparse_only_structured_parsers(name: str) -> None:
    spec = get_content_parser(name)
    assert not spec.compatible and not spec.streamable
    assert spec.description


# --- json-calls ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "args", "expected"),
    [
        (
            '[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]',
            {},
            [call("a", x=1), call("b")],
        ),
        ("  [ ]  ", {}, []),
        ('[{"name": "a", "parameters": {"x": [1, {"y": null}]}}]', {}, [call("a", x=[1, {"y": None}])]),
        ('[{"id": "abc123xyz", "name": "a", "arguments": {}}]', {}, [call("a")]),
        ('[{"name": "get_time"}]', {}, [call("get_time")]),
        ('[{"name": "a", "arguments": null}]', {}, [call("a")]),
        (
            '{"name": "a", "arguments": {"s": "日本 🙂"}}',
            {"accept": ["array", "object"]},
            [call("a", s="日本 🙂")],
        ),
        (
            '[{"tool": "a", "args": {"k": 2}}]',
            {"name_keys": ["tool"], "arguments_keys": ["args"]},
            [call("a", k=2)],
        ),
        (
            '[{"get_weather": {"city": "Bern"}}, {"now": {}}]',
            {"name_as_key": True},
            [call("get_weather", city="Bern"), call("now")],
        ),
        (
            '{"name": "a", "arguments": "{\\"q\\": \\"x\\", \\"n\\": {\\"d\\": 1}}"}',
            {"accept": ["object"], "decode_string_arguments": True},
            [call("a", q="x", n={"d": 1})],
        ),
        ('[{"name": "a", "arguments": ""}]', {"decode_string_arguments": True}, [call("a")]),
        # OpenAI's wire form (arguments as a string holding the object) is decoded by default.
        ('[{"name": "a", "arguments": "{\\"file\\": \\"a.txt\\"}"}]', {}, [call("a", file="a.txt")]),
        # A raw newline or tab inside a string (strict JSON forbids it) is kept as written.
        ('{"name": "a", "arguments": {"code": "if x:\n\treturn 1"}}', {"accept": ["object"]},
         [call("a", code="if x:\n\treturn 1")]),
        ('{"name": "a", "arguments": "{\\"code\\": \\"l1\nl2\\"}"}', {"accept": ["object"]},
         [call("a", code="l1\nl2")]),
        # Call objects back to back (MiniMax-M1: one per line; ';' or ',' between them also read).
        (
            '{"name": "a", "arguments": {"s": "} {"}}\n{"name": "b"}; {"name": "c", "parameters": {"k": 1}}',
            {"accept": ["sequence"]},
            [call("a", s="} {"), call("b"), call("c", k=1)],
        ),
        ('{"name": "a"}', {"accept": ["sequence"]}, [call("a")]),
        ('[{"name": "a"}]', {"accept": ["array", "sequence"]}, [call("a")]),
        # Python-literal arguments (vLLM's InternLM2 template writes dict arguments with |string).
        (
            '{"name": "f", "arguments": {\'a\': 1, \'b\': False, \'c\': [\'x y\'], \'d\': None}}',
            {"accept": ["object"], "python_literals": True},
            [call("f", a=1, b=False, c=["x y"], d=None)],
        ),
        (
            '{"name": "f", "arguments": {\'a\': "}"}}\n{"name": "g", "arguments": {}}',
            {"accept": ["sequence"], "python_literals": True},
            [call("f", a="}"), call("g")],
        ),
        ('{"name": "f", "arguments": {"a": true}}', {"accept": ["object"], "python_literals": True}, [call("f", a=True)]),
    ],
)
def test_json_calls_reads(body: str, args: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    assert parse_json_calls(body, args) == expected


@pytest.mark.parametrize(
    ("body", "args", "message"),
    [
        ("", {}, "empty region"),
        ('{"name": "a", "arguments": {}}', {}, "expected array of tool calls, found dict"),
        (
            '[{"name": "a", "arguments": {}}]',
            {"accept": ["object"]},
            "expected object of tool calls, found list",
        ),
        ('[{"name": "a", "arguments": {}}] and more', {}, "found 'and more' at offset 33 (Extra data)"),
        ('[{"name": "a", "arguments": {"x": "cut', {}, "expected one JSON value"),
        ("[1]", {}, "call 0 must be a JSON object, found int"),
        ('[{"arguments": {}}]', {}, "call 0 has no name key"),
        ('[{"name": ""}]', {}, "name must be a non-empty string"),
        ('[{"name": "a", "arguments": [1]}]', {}, "arguments must be a JSON object, found list"),
        ('[{"name": "a", "arguments": "{}"}]', {"decode_string_arguments": False},
         "arguments must be a JSON object, found str"),
        # Arguments written as a string (decoded by default) must hold a JSON object.
        ('[{"name": "a", "arguments": "{bad"}]', {}, "found a string that holds no JSON object"),
        ('[{"name": "a", "arguments": "read a.txt"}]', {}, "found a string that holds no JSON object"),
        ('[{"name": "a", "arguments": "[\\"a.txt\\"]"}]', {}, "found a string holding list"),
        ('[{"name": "a", "arguments": "\\"{}\\""}]', {}, "found a string holding str"),
        ('[{"name": "a", "arguments": {"x": NaN}}]', {}, "NaN is not valid JSON"),
        ('[{"a": {}, "b": {}}]', {"name_as_key": True}, "exactly one key"),
        ('[{"name": "a"}]', {"allow_missing_arguments": False}, "found NoneType"),
        ('{"name": "f", "arguments": {\'a\': 1}}', {"accept": ["object"]}, "expected one JSON value"),
        # Python literals and JSON literals mixed in one object are neither.
        ('{"name": "f", "arguments": {\'a\': true}}', {"accept": ["object"], "python_literals": True}, "expected one JSON"),
        ('{"name": "a"} oops', {"accept": ["sequence"]}, "expected a call object at offset 14"),
        ('{"name": "a"} {"name": "b"', {"accept": ["sequence"]}, "the text ends inside the call object"),
        ("[" * 100_000, {}, "nested too deeply"),
    ],
)
def test_json_calls_rejects(body: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_json_calls(body, args)


@pytest.mark.parametrize(
    ("body", "good", "bad"),
    [
        # Whole calls are kept, the cut one is reported on its own (at the end of the text).
        ('[{"name": "a"}, {"name": "b", "arguments": {"x": "y', [call("a")], [('{"name": "b", "arguments": {"x": "y', True)]),
        # The region's only item is bad: its raw text is the whole region, so the user sees the opener too.
        ('[{"name": "a", "arguments": {"x": "y', [], [('[{"name": "a", "arguments": {"x": "y', True)]),
        ('[{"nme": "a"}]', [], [('[{"nme": "a"}]', False)]),
        ('[{"nme": "a"}, {"name": "b"}]', [call("b")], [('{"nme": "a"}', False)]),
        # Stopped right after the list opened: a call was coming (a truncated item), not an empty list.
        ("[", [], [("[", True)]),
        ("[ \n", [], [("[", True)]),
        ("[]", [], []),
    ],
)
def test_json_calls_recovers_item_by_item(body: str, good: list[dict[str, Any]], bad: list[tuple[str, bool]]) -> None:
    recover = get_content_parser("json-calls").recover
    assert recover is not None
    items, problems = recover(body, {"accept": ["array"]})
    assert [value for value, _ in items] == good
    assert [(p.raw, p.at_end) for p in problems] == bad


def test_json_calls_recovers_a_sequence_item_by_item() -> None:
    recover = get_content_parser("json-calls").recover
    assert recover is not None
    body = '{"name": "a"}\n{"name": "b", "arguments": {\'k\': 1}}\n{"name": "c", "arguments": {"s": "x'
    items, problems = recover(body, {"accept": ["sequence"]})
    assert [value for value, _ in items] == [call("a")]
    assert [(p.raw, p.at_end) for p in problems] == [
        ('{"name": "b", "arguments": {\'k\': 1}}', False), ('{"name": "c", "arguments": {"s": "x', True)]
    items, problems = recover(body, {"accept": ["sequence"], "python_literals": True})
    assert [value for value, _ in items] == [call("a"), call("b", k=1)]
    assert [(p.raw, p.at_end) for p in problems] == [('{"name": "c", "arguments": {"s": "x', True)]


# --- python-calls -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "args", "expected"),
    [
        (
            '[get_weather(city="Paris"), get_time()]',
            {},
            [call("get_weather", city="Paris"), call("get_time")],
        ),
        ("[]", {}, []),
        ("", {}, []),
        ("[f(a=1,),]", {}, [call("f", a=1)]),
        ("f(a=1)\ng(b=2)\n", {"separator": "newline"}, [call("f", a=1), call("g", b=2)]),
        ("f(a=1), g(b=2)", {"brackets": "forbidden"}, [call("f", a=1), call("g", b=2)]),
        ("[f(a=1)\n g(b=2)]", {}, [call("f", a=1), call("g", b=2)]),
        (
            "[f(a=True, b=False, c=None, d=true, e=false, f=null)]",
            {},
            [call("f", a=True, b=False, c=None, d=True, e=False, f=None)],
        ),
        (
            "[f(n=-3, x=2.5, y=1e3, z=.5, w=7.)]",
            {},
            [call("f", n=-3, x=2.5, y=1000.0, z=0.5, w=7.0)],
        ),
        (
            """[f(s='it\\'s', t="tab\\there", u="\\u00e9\\x41\\U0001F642", r=r"\\d+\\n", q='''a\nb''', j="a" 'b')]""",
            {},
            [call("f", s="it's", t="tab\there", u="éA🙂", r="\\d+\\n", q="a\nb", j="ab")],
        ),
        ('[f(k="\\q")]', {}, [call("f", k="\\q")]),
        (
            '[f(d={"a": [1, (2, 3)], 4: "four"}, e={}, l=[])]',
            {},
            [call("f", d={"a": [1, [2, 3]], "4": "four"}, e={}, l=[])],
        ),
        ("[ns.get-item(id=1)]", {}, [call("ns.get-item", id=1)]),
        ('[f(名前="値")]', {}, [call("f", 名前="値")]),
        ("[f(a=1)  # trailing comment\n]", {}, [call("f", a=1)]),
        ('[f(a="x\ny", b=07, c=00)]', {"repairs": True}, [call("f", a="x\ny", b=7, c=0)]),
        ('[f(from="x", class=1)]', {}, [call("f", **{"from": "x", "class": 1})]),
        ('[{"name": "f", "arguments": {"a": 1}}]', {"accept_json": True}, [call("f", a=1)]),
        ('{"name": "f", "arguments": "{\\"a\\": 1}"}', {"accept_json": True}, [call("f", a=1)]),
        ("[f(a=1)]", {"accept_json": True}, [call("f", a=1)]),
    ],
)
def test_python_calls_reads(body: str, args: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    assert parse_python_calls(body, args) == expected


@pytest.mark.parametrize(
    ("body", "args", "message"),
    [
        ("[f(1)]", {}, "positional arguments are not supported"),
        ("[f(a=1, a=2)]", {}, "not the repeated 'a'"),
        ("f(a=1) g(b=2)", {}, "a separator between calls"),
        ("[f(a=1) g(b=2)]", {}, "',' or ']'"),
        ("[f(a=1), g(b=2)]", {"separator": "newline"}, "',' or ']'"),
        ("f(a=1)\ng(b=2)", {"separator": "comma"}, "a separator between calls"),
        ("f(a=1)", {"brackets": "required"}, "a bracketed call list"),
        ("[f(a=1)]", {"brackets": "forbidden"}, "the function name"),
        ("[f(a=1)] extra", {}, "the end of the region"),
        ("[f(a=b)]", {}, "a literal value"),
        ("[f(a=g())]", {}, "a literal value"),
        ("[f(a=true)]", {"json_literals": False}, "a literal value"),
        ("[f(a=07)]", {}, "without leading zeros"),
        ("[f(a=1e999)]", {}, "a finite number"),
        ("[f(a=0x1F)]", {}, "a literal value"),
        ('[f(a="x\ny")]', {}, "before the end of the line"),
        ('[f(a="unterminated)]', {}, 'the closing "'),
        ("[f(a={1.5: 2})]", {}, "a string or integer dict key"),
        ("[f(a={'k' 1})]", {}, "':' after the dict key"),
        ('[f(a="\\x4")]', {}, "2 hex digits"),
        ('[f(a="\\ud800")]', {}, "valid Unicode scalar value"),
        ("[f(a=b'x')]", {}, "a literal value"),
        ("[f(a=" + "[" * 200 + ")]", {}, "at most 100 levels"),
        ("[f(a=1", {}, "',' or ')'"),
        ('[{"name": "f"', {"accept_json": True}, "the function name"),
    ],
)
def test_python_calls_rejects(body: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="python-calls: .*" + re.escape(message)):
        parse_python_calls(body, args)


def test_python_calls_error_names_the_offset() -> None:
    with pytest.raises(ValueError, match=r"at offset 3, found '1\)\]'"):
        parse_python_calls("[f(1)]", {})


# Every escape Python reads in a str literal: simple, hex, octal (one to three digits), by name, and a
# backslash before a line end; an unknown escape keeps its backslash.
ESCAPED_LITERALS = [
    r"'\033[1;31mred\033[0m'", r"'a\0b'", r"'\7'", r"'\08'", r"'\1234'", r"'\777'", r"'\N{BULLET} item'",
    r"'\N{LATIN SMALL LETTER E WITH ACUTE}'", r"'\x1b'", r"'\u00e9\U0001F600'", r"'\q\d'", r'"\"\'"',
    "'a\\\nb'", r"u'\101'", r"r'\101\N{BULLET}'", r"'''\0\n'''",
]


@pytest.mark.parametrize("literal", ESCAPED_LITERALS)
def test_python_calls_read_string_escapes_as_python_does(literal: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Python warns about unknown escapes (and keeps them)
        expected = ast.literal_eval(literal)
    assert parse_python_calls(f"[f(a={literal})]", {}) == [call("f", a=expected)]


def test_python_calls_read_a_crlf_line_continuation_in_a_string() -> None:
    # Python's tokenizer reads source line ends as "\n": a backslash before "\r\n" continues the line.
    assert parse_python_calls("[f(a='one \\\r\ntwo')]", {}) == [call("f", a="one two")]


@given(st.lists(st.sampled_from(["a", "\\", "0", "7", "8", "3", "x", "N{BULLET}", "N{", "}", "n", "é", "\n"]),
                max_size=12))
def test_python_calls_read_any_escape_mix_as_python_does(parts: list[str]) -> None:
    literal = "'" + "".join(parts).replace("'", "\\'") + "'"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = ast.literal_eval(literal)
    except (SyntaxError, ValueError):
        with pytest.raises(ValueError, match="python-calls: "):
            parse_python_calls(f"[f(a={literal})]", {})
        return
    assert parse_python_calls(f"[f(a={literal})]", {}) == [call("f", a=expected)]


@pytest.mark.parametrize("literal", [r"'\N{NO SUCH CHARACTER}'", r"'\N{BULLET'", r"'\Nx'"])
def test_python_calls_reject_a_bad_character_name(literal: str) -> None:
    with pytest.raises(ValueError, match=re.escape("a Unicode character name in braces after '\\N'")):
        parse_python_calls(f"[f(a={literal})]", {})


# --- load-time checks of content_args -----------------------------------------------------------------


def template(parser: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "start_anchor": "<a>",
        "fields": {"tool_calls": {"open": "<c>", "close": "</c>", "content": parser, "content_args": args}},
    }


@pytest.mark.parametrize(
    ("parser", "args", "message"),
    [
        ("json-calls", {"accept": ["lines"]}, "accept"),
        ("json-calls", {"python_literals": "yes"}, "python_literals"),
        ("json-calls", {"accept": []}, "accept"),
        ("json-calls", {"name_keys": [""]}, "name_keys"),
        ("json-calls", {"name_as_key": "yes"}, "name_as_key"),
        ("json-calls", {"separators": ";"}, "separators"),
        ("python-calls", {"brackets": "sometimes"}, "brackets"),
        ("python-calls", {"separator": ";"}, "separator"),
        ("python-calls", {"repairs": 1}, "repairs"),
        ("python-calls", {"tag_pattern": "x"}, "tag_pattern"),
    ],
)
def test_bad_content_args_fail_at_load(parser: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        chatparse.load_template(template(parser, args))


@pytest.mark.parametrize(
    ("parser", "args"),
    [
        (
            "json-calls",
            {"accept": ["array", "object"], "name_as_key": False, "decode_string_arguments": True},
        ),
        ("python-calls", {"brackets": "optional", "separator": "comma_or_newline", "accept_json": True}),
    ],
)
def test_good_content_args_load(parser: str, args: dict[str, Any]) -> None:
    chatparse.load_template(template(parser, args))


def test_parsers_run_inside_a_template() -> None:
    spec = template("python-calls", {"separator": "newline"})
    spec["fields"]["tool_calls"]["transform_each"] = True
    spec["fields"]["tool_calls"]["transform"] = {
        "type": "function",
        "function": {"name": "{name}", "arguments": "{arguments}"},
    }
    message = chatparse.parse_response('<c>f(a=1)\ng(b="é")</c>', spec, prefix="")
    assert message == {
        "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}},
            {"type": "function", "function": {"name": "g", "arguments": {"b": "é"}}},
        ]
    }
