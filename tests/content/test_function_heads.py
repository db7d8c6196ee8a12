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
    assert_reads(SPEC, ARGS, body, calls)


def assert_reads(spec: Any, args: dict[str, Any], body: str, calls: list[dict[str, Any]]) -> None:
    """One-shot and item by item, the same calls."""
    assert spec.parse(body, args) == calls
    assert spec.recover is not None
    good, bad = spec.recover(body, args)
    assert [value for value, _ in good] == calls and bad == []


def assert_rejects(spec: Any, args: dict[str, Any], body: str) -> None:
    """One-shot raises; item by item, one bad item and nothing kept."""
    with pytest.raises(ValueError):
        spec.parse(body, args)
    assert spec.recover is not None
    good, bad = spec.recover(body, args)
    assert good == [] and len(bad) == 1


@pytest.mark.parametrize("body", [
    "<function=get_weather>",  # nothing after the head: a cut call
    '<function=get_weather>{"city": "Oslo"} and more',
    '<function=get_weather>["Oslo"]',
    '<function=get_weather>{"x": NaN}',
    '{"city": "Oslo"}',  # no head and no name
])
def test_broken_calls_raise_and_recover_as_bad_items(body: str) -> None:
    assert_rejects(SPEC, ARGS, body)


def test_arguments_are_checked_at_load() -> None:
    check = SPEC.validate_args
    assert check is not None
    with pytest.raises(ValueError, match="head is required"):
        check({"json_calls": {}})
    with pytest.raises(ValueError, match="group 'name'"):
        check({"head": "<function=[^>]+>"})
    with pytest.raises(ValueError, match="unknown content_args key"):
        check({**ARGS, "extra": 1})


CODE_ARGS: dict[str, Any] = {"code_tool": "code_interpreter", "json_calls": {"accept": ["object"]}}
CODE = get_content_parser("json-calls-or-code")


@pytest.mark.parametrize(("body", "calls"), [
    ('brave_search.call(query="weather Seoul")', [{"name": "brave_search", "arguments": {"query": "weather Seoul"}}]),
    (' wolfram_alpha . call (query="x (y)", n=2)', [{"name": "wolfram_alpha", "arguments": {"query": "x (y)", "n": 2}}]),
    ("import math\nprint(math.pi)", [{"name": "code_interpreter", "arguments": {"code": "import math\nprint(math.pi)"}}]),
    ('{"name": "get_time", "parameters": {}}', [{"name": "get_time", "arguments": {}}]),
])
def test_json_calls_or_code(body: str, calls: list[dict[str, Any]]) -> None:
    assert_reads(CODE, CODE_ARGS, body, calls)


@pytest.mark.parametrize("body", ['brave_search.call(query="cut', "brave_search.call(x)", 'brave_search.call(q="a") + 1'])
def test_broken_builtin_calls_raise(body: str) -> None:
    assert_rejects(CODE, CODE_ARGS, body)
