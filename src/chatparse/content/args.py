"""Load-time checks of ``content_args`` shared by the extension parsers, and their regex cache."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import regex

Args = Mapping[str, Any]
_PATTERN_CACHE: dict[str, Any] = {}


def compiled(pattern: str) -> Any:
    """``pattern`` compiled with DOTALL, once."""
    if pattern not in _PATTERN_CACHE:
        _PATTERN_CACHE[pattern] = regex.compile(pattern, regex.DOTALL)
    return _PATTERN_CACHE[pattern]


def excerpt(text: str, limit: int = 60) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "…"


def check_allowed(parser: str, args: Args, allowed: Mapping[str, type | tuple[type, ...]] | set[str]) -> None:
    """Reject unknown ``content_args`` keys (and, given a type table, values of the wrong type)."""
    for key, value in args.items():
        if key not in allowed:
            raise ValueError(f"{parser}: unknown content_args key {key!r}. Valid keys: {sorted(allowed)}")
        if isinstance(allowed, Mapping) and not isinstance(value, allowed[key]):
            raise ValueError(f"{parser}: content_args[{key!r}] has the wrong type {type(value).__name__}")


def check_choice(parser: str, args: Args, key: str, choices: Iterable[str]) -> None:
    valid = sorted(choices)
    if key in args and args[key] not in valid:
        raise ValueError(f"{parser}: content_args[{key!r}] must be one of {valid}, found {args[key]!r}")


def check_string_list(parser: str, args: Args, key: str) -> None:
    if key in args and not all(isinstance(item, str) and item for item in args[key]):
        raise ValueError(f"{parser}: content_args[{key!r}] must be a list of non-empty strings")


def check_regex(parser: str, args: Args, key: str) -> Any:
    pattern = args[key]
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"{parser}: content_args[{key!r}] must be a non-empty regex string, found {pattern!r}")
    try:
        return compiled(pattern)
    except regex.error as exc:
        raise ValueError(f"{parser}: content_args[{key!r}] is not a valid regex: {exc}") from exc
