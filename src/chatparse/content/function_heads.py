"""``json-calls-or-function``: a call region that holds either JSON call objects (read by ``json-calls``) or
one call written as a function head and its JSON arguments (``<function=NAME>{...}``,
``<function name="NAME">{...}``: spellings Hermes 2 Pro and small Qwen2.5 models use beside
``<tool_call>``). The head names the call, so an argument called ``name`` is never taken for the call's name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chatparse.content.args import check_allowed, check_regex, excerpt, timed
from chatparse.content.json_calls import parse_json_calls, recover_json_calls, validate_json_calls_args
from chatparse.content.recovery import Good
from chatparse.content.registry import BadItem, register_extensions

Args = Mapping[str, Any]
_ARGS: dict[str, type | tuple[type, ...]] = {"head": str, "json_calls": Mapping}


def _headed(text: str, args: Args) -> tuple[str, str] | None:
    """``(name, the text after the head)`` when ``text`` starts (after whitespace) with a function head."""
    pattern = check_regex("json-calls-or-function", args, "head")
    m = timed(pattern.match, text, len(text) - len(text.lstrip()))
    if m is None:
        return None
    name = (m.group("name") or "").strip()
    if not name:
        raise ValueError(f"json-calls-or-function: the function head names no function: {excerpt(m.group())}")
    return name, text[m.end() :]


def _arguments(name: str, rest: str) -> dict[str, Any]:
    """The JSON object after a head, read as the arguments of a call named by the head."""
    text = rest.strip()
    if not text:
        raise ValueError(f"json-calls-or-function: no JSON arguments after the head of {name!r}")
    try:
        arguments = _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"json-calls-or-function: the arguments of {name!r} are not one JSON object "
                         f"({error.msg} at offset {error.pos}): {excerpt(text)}") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"json-calls-or-function: the arguments of {name!r} are not a JSON object: {excerpt(text)}")
    return {"name": name, "arguments": arguments}


def _reject_constant(constant: str) -> Any:
    raise ValueError(f"json-calls-or-function: {constant} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def parse_json_calls_or_function(text: str, args: Args) -> list[dict[str, Any]]:
    """The calls of a region: one ``{"name", "arguments"}`` for a function head and its JSON arguments,
    otherwise what ``json-calls`` reads with ``content_args.json_calls``.

    ``content_args``:

    - ``head`` (required): regex of a function head at the start of the region, with the group ``name``.
    - ``json_calls``: the ``json-calls`` arguments for bodies without a head (``accept``, ...).

    After a head, the rest of the region must be one JSON object, the arguments (``{}`` for none); anything
    else (nothing too: a cut call) raises, so a broken call is reported instead of read with fewer arguments.
    """
    headed = _headed(text, args)
    if headed is None:
        return parse_json_calls(text, args.get("json_calls", {}))
    return [_arguments(*headed)]


def recover_json_calls_or_function(text: str, args: Args) -> tuple[Good, list[BadItem]]:
    """``parse_json_calls_or_function`` item by item: a headed call is one item."""
    headed = _headed(text, args)
    if headed is None:
        return recover_json_calls(text, args.get("json_calls", {}))
    try:
        return [(_arguments(*headed), text)], []
    except ValueError as error:
        return [], [BadItem(text, str(error), at_end=True)]


def _check(args: Args) -> None:
    check_allowed("json-calls-or-function", args, _ARGS)
    if "head" not in args:
        raise ValueError("json-calls-or-function: content_args.head is required (the regex of a function head)")
    pattern = check_regex("json-calls-or-function", args, "head")
    if "name" not in pattern.groupindex:
        raise ValueError("json-calls-or-function: content_args.head needs the group 'name'")
    validate_json_calls_args(args.get("json_calls", {}))


EXTENSIONS = {
    "json-calls-or-function": (parse_json_calls_or_function, _check, recover_json_calls_or_function),
}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
