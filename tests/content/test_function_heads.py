"""json-calls-or-function: a function head names one call whose arguments are the JSON after it; without a
head the region is read by json-calls."""

from __future__ import annotations

from typing import Any

import pytest

from chatparse.content.registry import get_content_parser

ARGS: dict[str, Any] = {"head": r'<function=(?P<name>[^>\s]+)>|<function\s+name="(?P<name>[^"]+)"\s*>',
                        "json_calls": {"accept": ["object"]}}
SPEC = get_content_parser("json-calls-or-function")


@pytest.mark.parametrize(("body", "calls"), [
    ('<function=get_weather>{"city": "Oslo"}', [{"name": "get_weather", "arguments": {"city": "Oslo"}}]),
    ('\n<function name="create_user">\n{"name": "Ada"}\n', [{"name": "create_user", "arguments": {"name": "Ada"}}]),
    ("<function=get_time>{}", [{"name": "get_time", "arguments": {}}]),
    ('{"name": "get_time", "arguments": {}}', [{"name": "get_time", "arguments": {}}]),
])
def test_calls(body: str, calls: list[dict[str, Any]]) -> None:
    assert SPEC.parse(body, ARGS) == calls
    assert SPEC.recover is not None
    good, bad = SPEC.recover(body, ARGS)
    assert [value for value, _ in good] == calls and bad == []


@pytest.mark.parametrize("body", [
    "<function=get_weather>",  # nothing after the head: a cut call
    '<function=get_weather>{"city": "Oslo"} and more',
    '<function=get_weather>["Oslo"]',
    '<function=get_weather>{"x": NaN}',
    '{"city": "Oslo"}',  # no head and no name
])
def test_broken_calls_raise_and_recover_as_bad_items(body: str) -> None:
    with pytest.raises(ValueError):
        SPEC.parse(body, ARGS)
    assert SPEC.recover is not None
    good, bad = SPEC.recover(body, ARGS)
    assert good == [] and len(bad) == 1


def test_arguments_are_checked_at_load() -> None:
    check = SPEC.validate_args
    assert check is not None
    with pytest.raises(ValueError, match="head is required"):
        check({"json_calls": {}})
    with pytest.raises(ValueError, match="group 'name'"):
        check({"head": "<function=[^>]+>"})
    with pytest.raises(ValueError, match="unknown content_args key"):
        check({**ARGS, "extra": 1})
