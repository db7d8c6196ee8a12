"""parse_near_json: Python literal first, then JSON; bounded; never executes; named errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatparse.tools import NearJSONError, parse_near_json
from chatparse.tools.near_json import nesting_depth, read_near_json


@pytest.mark.parametrize(
    ("text", "expected", "reader"),
    [
        ("{'a': True, 'b': None, 'c': 'it''s'}", {"a": True, "b": None, "c": "its"}, "python_literal"),
        ("['x', 1, 2.5, -3]", ["x", 1, 2.5, -3], "python_literal"),
        ('{"a": true, "b": null}', {"a": True, "b": None}, "json"),
        ('{"a": [1, 2]}', {"a": [1, 2]}, "python_literal"),  # both read it; they agree
        ('"http:\\/\\/x"', "http://x", "json"),  # JSON escapes keep their JSON meaning
        ('"\\ud83d\\ude00"', "\U0001f600", "json"),  # a surrogate pair is one character
        ("  [1]\n", [1], "python_literal"),
        ("'caf\\xe9'", "café", "python_literal"),
        # A raw newline or tab inside a JSON string (strict JSON forbids it) is kept as written.
        ('{"code": "if x:\n\treturn 1", "ok": true}', {"code": "if x:\n\treturn 1", "ok": True}, "json"),
    ],
)
def test_reads_python_literals_then_json(text: str, expected: Any, reader: str) -> None:
    assert read_near_json(text) == (expected, reader)
    assert parse_near_json(text) == expected


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("__import__('os').system('echo pwned')", "invalid_syntax"),
        ("open('/etc/passwd').read()", "invalid_syntax"),
        ("[x for x in range(10**9)]", "invalid_syntax"),
        ("2**10**10", "invalid_syntax"),
        ("lambda: 1", "invalid_syntax"),
        ("{'a': 1", "invalid_syntax"),
        ("", "invalid_syntax"),
        ("(1, 2)", "not_json_value"),
        ("{1, 2}", "not_json_value"),
        ("b'bytes'", "not_json_value"),
        ("1+2j", "not_json_value"),
        ("{1: 'int key'}", "not_json_value"),
        ("1e400", "not_json_value"),
        ("NaN", "not_json_value"),
        ('{"a": Infinity}', "not_json_value"),
        ('{"a": 1, "a": 2}', "duplicate_key"),
        ("{'a': 1, 'a': 2}", "duplicate_key"),
        ("[" * 65 + "]" * 65, "too_deep"),
        ("x" * 70_000, "too_large"),
    ],
)
def test_named_rejections(text: str, code: str) -> None:
    with pytest.raises(NearJSONError) as caught:
        parse_near_json(text)
    assert caught.value.code == code
    assert isinstance(caught.value, ValueError)


def test_never_executes_code(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(NearJSONError):
        parse_near_json(f"open({str(marker)!r}, 'w').write('x')")
    assert not marker.exists()


def test_bounds_are_configurable() -> None:
    assert parse_near_json("[[1]]", max_depth=2) == [[1]]
    with pytest.raises(NearJSONError):
        parse_near_json("[[1]]", max_depth=1)
    with pytest.raises(NearJSONError) as caught:
        parse_near_json("'é'", max_bytes=3)  # bytes, not characters
    assert caught.value.code == "too_large"


def test_not_text() -> None:
    with pytest.raises(NearJSONError) as caught:
        parse_near_json(b"[1]")  # type: ignore[arg-type]
    assert caught.value.code == "not_text"


def test_depth_ignores_brackets_inside_strings() -> None:
    assert nesting_depth("['[[[[', \"{{{\"]") == 1
    assert parse_near_json("['" + "[" * 100 + "']") == ["[" * 100]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=15,
)


@given(json_values)
def test_any_json_document_reads_as_json_would(value: Any) -> None:
    text = json.dumps(value)
    assert parse_near_json(text) == json.loads(text)


@given(json_values)
def test_python_repr_of_json_data_reads_back(value: Any) -> None:
    assert parse_near_json(repr(value)) == value


@given(st.text(max_size=200))
def test_arbitrary_text_gives_a_value_or_a_named_error(text: str) -> None:
    try:
        parse_near_json(text)
    except NearJSONError as error:
        assert error.code in {"invalid_syntax", "not_json_value", "duplicate_key", "too_deep", "too_large"}
