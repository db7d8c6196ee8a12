"""Call regions that hold JSON call objects (read by ``json-calls``) or one call in another spelling.

``json-calls-or-function``: a function head and its JSON arguments (``<function=NAME>{...}``,
``<function name="NAME">{...}``: spellings Hermes 2 Pro and small Qwen2.5 models use beside ``<tool_call>``);
the head names the call, so an argument called ``name`` is never taken for the call's name.
``json-calls-or-code``: Llama 3.1's built-in tool calls (``brave_search.call(query="x")``) and raw code after
``<|python_tag|>``.
``json-or-code``: the arguments of one call whose name the opener read: a JSON object, or raw code (the
code interpreter's convention: Functionary v3.2's ``>>>python``, harmony's ``to=python``) as ``{"code": ...}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from chatparse.content.args import check_allowed, check_regex, excerpt, timed
from chatparse.content.json_calls import parse_json_calls, recover_json_calls, validate_json_calls_args
from chatparse.content.python_calls import parse_python_calls
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


# --- json-calls-or-code ------------------------------------------------------------------------------------

_CODE_ARGS: dict[str, type | tuple[type, ...]] = {"json_calls": Mapping, "code_tool": str}
_BUILTIN_CALL = re.compile(r"\s*(?P<name>[A-Za-z_]\w*)\s*\.\s*call\s*(?=\()")


def _code_body(text: str, args: Args) -> dict[str, Any] | None:
    """A built-in tool call (``NAME.call(k=v, ...)``) or raw code, or None for a JSON body."""
    if text.lstrip()[:1] in ("{", ";", ""):
        return None
    m = _BUILTIN_CALL.match(text)
    if m is not None:
        (call,) = parse_python_calls(m["name"] + text[m.end() :].rstrip(), _PYTHON_CALL)
        return {"name": call["name"], "arguments": call["arguments"]}
    return {"name": args["code_tool"], "arguments": {"code": text.strip()}}


def parse_json_calls_or_code(text: str, args: Args) -> list[dict[str, Any]]:
    """The calls after Llama 3.1's ``<|python_tag|>``: JSON call objects (``json-calls`` with
    ``content_args.json_calls``), a built-in tool call in Python syntax (``brave_search.call(query="x")``:
    the call ``brave_search`` with ``{"query": "x"}``, keyword arguments with literal values), or raw code
    (the ipython convention: the call ``code_tool`` with ``{"code": <the text>}``).

    ``content_args``: ``code_tool`` (required): the name of the call that raw code is (Meta's
    ``code_interpreter``); ``json_calls``: the ``json-calls`` arguments.
    """
    call = _code_body(text, args)
    return parse_json_calls(text, args.get("json_calls", {})) if call is None else [call]


def recover_json_calls_or_code(text: str, args: Args) -> tuple[Good, list[BadItem]]:
    """``parse_json_calls_or_code`` item by item: a built-in call or raw code is one item."""
    try:
        call = _code_body(text, args)
    except ValueError as error:
        return [], [BadItem(text, str(error), at_end=True)]
    return recover_json_calls(text, args.get("json_calls", {})) if call is None else ([(call, text)], [])


def _check_code(args: Args) -> None:
    check_allowed("json-calls-or-code", args, _CODE_ARGS)
    if not args.get("code_tool"):
        raise ValueError("json-calls-or-code: content_args.code_tool is required (the call raw code is)")
    validate_json_calls_args(args.get("json_calls", {}))


_PYTHON_CALL: dict[str, Any] = {"brackets": "forbidden", "json_literals": False}


# --- json-or-code ------------------------------------------------------------------------------------------

_JSON_OR_CODE_ARGS: dict[str, type | tuple[type, ...]] = {"code_prefix": str, "raw_control_chars": bool}


def _code(text: str, args: Args) -> str | None:
    """The code of a raw-code body (the text after ``code_prefix``, its blank ends stripped), or None."""
    pattern = check_regex("json-or-code", args, "code_prefix")
    m = timed(pattern.match, text)
    if m is None:
        return None
    code = text[m.end() :].strip()
    if not code:
        raise ValueError(f"json-or-code: no code after the head of a code call: {excerpt(text)}")
    return code


def parse_json_or_code(text: str, args: Args) -> Any:
    """The arguments of a call: raw code as ``{"code": <the code>}`` where the body starts with what
    ``content_args.code_prefix`` matches, otherwise one JSON value (the ``json`` reader; a JSON body that is
    no object is left to the caller, as with ``json``).

    ``content_args``: ``code_prefix`` (required): regex matched at the start of the body; where it matches,
    the rest is code (Functionary v3.2: ``(?!\\s*\\{)``, any body that does not start with a brace;
    harmony: the ``<|message|>`` its code opener leaves in the body). ``raw_control_chars``: as for ``json``.
    Empty code (nothing but blanks) raises, so a call cut right after its head is reported, never a call
    with empty code.
    """
    code = _code(text, args)
    if code is not None:
        return {"code": code}
    try:
        return json.loads(text, strict=not args.get("raw_control_chars", False))
    except json.JSONDecodeError as error:
        raise ValueError(f"json-or-code: the arguments are not JSON ({error.msg} at offset {error.pos}): "
                         f"{excerpt(text)}") from None


def _check_json_or_code(args: Args) -> None:
    check_allowed("json-or-code", args, _JSON_OR_CODE_ARGS)
    if "code_prefix" not in args:
        raise ValueError("json-or-code: content_args.code_prefix is required (the regex that starts a code body)")
    check_regex("json-or-code", args, "code_prefix")

EXTENSIONS = {
    "json-calls-or-function": (parse_json_calls_or_function, _check, recover_json_calls_or_function),
    "json-calls-or-code": (parse_json_calls_or_code, _check_code, recover_json_calls_or_code),
    "json-or-code": (parse_json_or_code, _check_json_or_code, None),
}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
