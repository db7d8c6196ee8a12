"""xml-params-repair: the strict read first; the GLM tags models drop put back only when it fails, each
repair reported; anything else still raises."""

from __future__ import annotations

from typing import Any

import pytest

from chatparse.content.registry import Repaired, get_content_parser

ARGS: dict[str, Any] = {
    "params": {"param_open": r"<arg_key>(?P<key>[^<]*)</arg_key>\s*<arg_value>", "value_close": "</arg_value>",
               "value_ends": "close"},
    "key_open": "<arg_key>", "key_close": "</arg_key>", "value_open": "<arg_value>",
}


def parse(body: str) -> Any:
    return get_content_parser("xml-params-repair").parse(body, ARGS)


def test_a_well_formed_body_is_not_repaired() -> None:
    body = "<arg_key>note</arg_key><arg_value>say </arg_key>k</arg_value></arg_value><arg_key>n</arg_key><arg_value>1</arg_value>"
    assert parse(body) == {"note": "say </arg_key>k</arg_value>", "n": "1"}


@pytest.mark.parametrize(("body", "arguments", "codes"), [
    ("<arg_key>q</arg_key>vacation days</arg_value>", {"q": "vacation days"}, ["missing_value_open"]),
    # the newline after the key is layout, as before a written <arg_value>
    ("<arg_key>a</arg_key>\n1</arg_value>\n<arg_key>b</arg_key>\n<arg_value>2</arg_value>", {"a": "1", "b": "2"},
     ["missing_value_open"]),
    ("<arg_key>a</arg_key><arg_value>1</arg_value><arg_key>b</arg_key><arg_value>x y\n", {"a": "1", "b": "x y"},
     ["missing_value_close"]),
    ("</arg_value>", {}, ["stray_value_close"]),
    ("\n</arg_value>\n", {}, ["stray_value_close"]),
    ("<arg_key>a</arg_key>1", {"a": "1"}, ["missing_value_open", "missing_value_close"]),
])
def test_dropped_tags_are_put_back_and_reported(body: str, arguments: dict[str, Any], codes: list[str]) -> None:
    value = parse(body)
    assert isinstance(value, Repaired)
    assert value.value == arguments
    assert [code for code, _ in value.repairs] == codes
    assert all(note for _, note in value.repairs)


@pytest.mark.parametrize("body", [
    "prose<arg_key>a</arg_key><arg_value>1</arg_value>",  # text outside the parameters
    "<arg_key>a</arg_key><arg_value>1</arg_value> trailing words",
    "get_weather city Seoul",
])
def test_what_the_repairs_do_not_fix_still_raises(body: str) -> None:
    with pytest.raises(ValueError, match="xml-params"):
        parse(body)


def test_arguments_are_checked_at_load() -> None:
    check = get_content_parser("xml-params-repair").validate_args
    assert check is not None
    with pytest.raises(ValueError, match="required"):
        check({"params": ARGS["params"]})
    with pytest.raises(ValueError, match="plain literal"):
        check({**ARGS, "params": {**ARGS["params"], "value_close": "</{key}>"}})
    with pytest.raises(ValueError, match="unknown content_args key"):
        check({**ARGS, "surprise": 1})
