"""jsonvalue: short_repr and describe_value stay short for any value, format_path for any key."""

from __future__ import annotations

from typing import Any

import pytest

from chatparse.tools.jsonvalue import describe_value, format_path, same_json_value, short_repr


def test_short_values_are_their_repr_or_json() -> None:
    value = {"a": [1, 2.5, None, True, "x"]}
    assert short_repr(value) == repr(value)
    assert short_repr(value, as_json=True) == '{"a": [1, 2.5, null, true, "x"]}'
    assert describe_value("12 apples") == "string '12 apples'" and describe_value(None) == "null"


def _deep(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _cyclic() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


@pytest.mark.parametrize("value", [_deep(10_000), _cyclic(), list(range(10**6)), "x" * 10**6, 10**5000,
                                   {str(i): i for i in range(10**5)}],
                         ids=["deep", "cyclic", "long list", "long string", "huge integer", "wide dict"])
def test_any_value_gives_at_most_limit_characters(value: Any) -> None:
    for as_json in (False, True):
        text = short_repr(value, 60, as_json=as_json)
        assert 0 < len(text) <= 60
    assert len(describe_value(value)) < 80


def test_a_cut_is_marked_and_a_huge_integer_described() -> None:
    assert short_repr(list(range(100)), 20) == "[0, 1, 2, 3, 4, 5, …"
    assert short_repr(-(10**5000)) == "<integer of about 5001 digits>"
    assert short_repr(10**39) == str(10**39)  # below the described size: written out


def test_a_failing_repr_names_the_type() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert short_repr([Broken()]) == "[<Broken object>]"


def test_format_path_shows_keys_that_are_not_strings() -> None:
    assert format_path(("files", 0, "mode", "a b")) == '$.files[0].mode["a b"]'
    assert format_path((None,)) == "$[<None>]"


def test_same_json_value_is_iterative_and_keeps_json_types_apart() -> None:
    assert same_json_value(_deep(10_000), _deep(10_000))
    assert not same_json_value(_deep(10_000), _deep(9_999))
    assert not same_json_value(True, 1) and same_json_value(1, 1.0) and not same_json_value("1", 1)
    a, b = _cyclic(), _cyclic()
    assert same_json_value(a, a) and not same_json_value(a, b)  # a cycle is never equal past the depth bound
