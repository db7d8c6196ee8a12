"""The bare-key-object extension (Gemma 4 / FunctionGemma call arguments)."""

from __future__ import annotations

import time
from typing import Any

import pytest

import chatparse
from chatparse.content.bare_key_objects import parse_bare_key_object
from chatparse.content.registry import get_content_parser
from chatparse.errors import TemplateError

Q = '<|"|>'
GEMMA = {"string_delims": [[Q, Q]]}


def test_registered_as_a_chatparse_only_structured_parser() -> None:
    spec = get_content_parser("bare-key-object")
    assert not spec.compatible and not spec.streamable and spec.recover is None
    assert spec.description


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("{}", {}),
        (" { } ", {}),
        (f"{{city:{Q}Seoul{Q},days:2}}", {"city": "Seoul", "days": 2}),
        (f"{{first name:{Q}Ann{Q}, home address :{{street name:{Q}Main{Q}}}}}",
         {"first name": "Ann", "home address": {"street name": "Main"}}),
        (f"{{{Q}3{Q}:{Q}quoted key{Q},a.b-c:1}}", {"3": "quoted key", "a.b-c": 1}),
        (f"{{t:{Q}a, {{b}} \"c\" <tool_call|>\nd{Q}}}", {"t": 'a, {b} "c" <tool_call|>\nd'}),
        (f"{{l:[{Q}x{Q},-1.5e2,true,false,null,[]],o:{{}}}}", {"l": ["x", -150.0, True, False, None, []], "o": {}}),
        ('{j:"json \\"string\\"", unit: celsius degrees }', {"j": 'json "string"', "unit": "celsius degrees"}),
        ("{big:1e999,lead:007}", {"big": "1e999", "lead": "007"}),
    ],
)
def test_reads_bare_keys_and_delimited_strings(body: str, expected: dict[str, Any]) -> None:
    assert parse_bare_key_object(body, GEMMA) == expected


@pytest.mark.parametrize(
    "body",
    ["", "[1]", "{a:1", f"{{a:{Q}x", "{a:1} x", "{:1}", "{a 1}", f"{{a:{Q}x{Q} b:2}}", "{a:[1,2}"],
)
def test_rejects_what_is_not_one_object(body: str) -> None:
    with pytest.raises(ValueError, match="bare-key-object"):
        parse_bare_key_object(body, GEMMA)


def test_depth_is_bounded() -> None:
    with pytest.raises(ValueError, match="levels"):
        parse_bare_key_object("{a:" + "[" * 200 + "]" * 200 + "}", GEMMA)


def test_long_inputs_read_in_linear_time() -> None:
    n = 200_000
    body = "{" + ",".join(f"key {i}:{Q}{'x' * 5}{Q}" for i in range(n // 10)) + "}"
    start = time.perf_counter()
    assert len(parse_bare_key_object(body, GEMMA)) == n // 10
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("args", [{}, {"string_delims": []}, {"string_delims": [["<e>"]]}, {"other": 1}])
def test_content_args_are_checked_at_load(args: dict[str, Any]) -> None:
    template = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<a>",
        "fields": {"tool_calls": {"open": "<c>", "close": "</c>", "content": "bare-key-object", "content_args": args}},
    }
    with pytest.raises(TemplateError):
        chatparse.load_template(template)


def test_a_raw_newline_inside_a_json_string_is_kept() -> None:
    # Strict JSON forbids a raw control character in a string; its meaning is unambiguous (a repair).
    args = {"string_delims": [["<escape>", "<escape>"]]}
    assert parse_bare_key_object('{code:"l1\n\tl2",n:2}', args) == {"code": "l1\n\tl2", "n": 2}


@pytest.mark.parametrize(("body", "expected"), [
    ("{a:<escape>x<escape>b:2}", {"a": "x", "b": 2}),
    ("{a:{c:1}b:[1,2]d:<escape>y<escape>}", {"a": {"c": 1}, "b": [1, 2], "d": "y"}),
    ('{a:"x"b:true}', {"a": "x", "b": True}),
])
def test_missing_commas_after_delimited_values(body: str, expected: dict[str, Any]) -> None:
    args = {"string_delims": [["<escape>", "<escape>"]], "missing_commas": True}
    assert parse_bare_key_object(body, args) == expected
    with pytest.raises(ValueError, match="expected ','"):
        parse_bare_key_object(body, {"string_delims": [["<escape>", "<escape>"]]})  # strict by default


def test_missing_comma_after_a_bare_scalar_still_raises() -> None:
    with pytest.raises(ValueError):
        parse_bare_key_object("{a:1b:<escape>x<escape>}", {"string_delims": [["<escape>", "<escape>"]],
                                                           "missing_commas": True})
