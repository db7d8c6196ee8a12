"""JSON tool-call containers: ``json-calls`` (an array of call objects, one call object or call objects
back to back; name-as-key objects, arguments written as a JSON string, Python-literal arguments) and
``json-sequence`` (JSON values back to back).

Both are chatparse extensions configured through ``content_args``; both can read their region item by
item (``recover``), so a bad or cut-off call does not take the calls beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, NoReturn

from chatparse.content.args import check_allowed, check_regex, check_string_list, compiled, excerpt, timed
from chatparse.content.recovery import JSON, PYTHON, Good, bracketed_end, read_items, skip_space
from chatparse.content.registry import BadItem, register_extensions
from chatparse.lazy import load

Call = dict[str, Any]
Args = Mapping[str, Any]
DEFAULT_SEPARATOR = r"\s*;?\s*"

# --- json-calls ---------------------------------------------------------------------------------------

_JSON_CALLS_ARGS: dict[str, type | tuple[type, ...]] = {
    "accept": list,
    "name_keys": list,
    "arguments_keys": list,
    "name_as_key": bool,
    "decode_string_arguments": bool,
    "allow_missing_arguments": bool,
    "python_literals": bool,
}
_JSON_FORMS = ("array", "object", "sequence")
_SEQUENCE_SEPARATORS = ";,"


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"json-calls: {name} is not valid JSON")


# ``strict=False``: a raw control character (a literal newline or tab) inside a string is kept as written, a
# representation mistake whose meaning is unambiguous (the near-JSON repairs table in docs/tools.md).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, strict=False)


def _read_json(text: str, python_literals: bool = False) -> Any:
    """The one JSON value that ``text`` holds (surrounding whitespace allowed); with ``python_literals``,
    text that is not JSON is read as a Python literal (``{'a': 1, 'b': False}``) before giving up."""
    if not text:
        raise ValueError("json-calls: expected a JSON array or object of tool calls, found an empty region")
    try:
        return _DECODER.decode(text)
    except RecursionError as error:
        raise ValueError("json-calls: the JSON is nested too deeply") from error
    except json.JSONDecodeError as error:
        literal = _python_literal(text) if python_literals else None
        if literal is not None:
            return literal
        raise ValueError(
            f"json-calls: expected one JSON value, found {excerpt(text[error.pos : error.pos + 20])} at offset "
            f"{error.pos} ({error.msg}). Content: {excerpt(text)}"
        ) from error


def _python_literal(text: str) -> Any:
    """``text`` read as a Python literal of JSON-typed values (no code runs), or None."""
    near_json = load("chatparse.tools.near_json")  # the tool boundary's reader, loaded when needed

    try:
        return near_json.parse_near_json(text.strip())
    except ValueError:
        return None


def _read_sequence(text: str, python_literals: bool) -> list[Any]:
    """Call objects written back to back (whitespace, ';' or ',' between them)."""
    structure = PYTHON if python_literals else JSON
    values: list[Any] = []
    pos = skip_space(text, 0)
    while pos < len(text):
        if text[pos] != "{":
            raise ValueError(f"json-calls: expected a call object at offset {pos}, found {excerpt(text[pos : pos + 20])}")
        end = bracketed_end(text, pos, structure)
        if end < 0:
            raise ValueError(f"json-calls: the text ends inside the call object at offset {pos}")
        values.append(_read_json(text[pos:end], python_literals))
        pos = skip_space(text, end)
        if pos < len(text) and text[pos] in _SEQUENCE_SEPARATORS:
            pos = skip_space(text, pos + 1)
    return values


def _call_items(value: Any, forms: Iterable[str]) -> list[Any]:
    accepted = set(forms)
    if isinstance(value, list) and "array" in accepted:
        return value
    if isinstance(value, dict) and "object" in accepted:
        return [value]
    raise ValueError(
        f"json-calls: expected {' or '.join(sorted(accepted))} of tool calls, found {type(value).__name__}"
    )


def _first_key(item: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    return next((key for key in keys if key in item), None)


def _normalise_call(item: Any, index: int, args: Mapping[str, Any]) -> Call:
    if not isinstance(item, dict):
        raise ValueError(f"json-calls: call {index} must be a JSON object, found {type(item).__name__}")
    if args.get("name_as_key", False):
        if len(item) != 1:
            raise ValueError(
                f"json-calls: call {index} must have exactly one key (the function name), found {sorted(item)}"
            )
        name, arguments = next(iter(item.items()))
    else:
        name_key = _first_key(item, args.get("name_keys", ["name"]))
        if name_key is None:
            raise ValueError(f"json-calls: call {index} has no name key; found keys {sorted(item)}")
        name = item[name_key]
        arguments_key = _first_key(item, args.get("arguments_keys", ["arguments", "parameters"]))
        arguments = item[arguments_key] if arguments_key is not None else None
    if not isinstance(name, str) or not name:
        raise ValueError(f"json-calls: call {index} name must be a non-empty string, found {name!r}")
    return {"name": name, "arguments": _call_arguments(arguments, index, args)}


def _call_arguments(arguments: Any, index: int, args: Mapping[str, Any]) -> dict[str, Any]:
    if arguments is None and args.get("allow_missing_arguments", True):
        return {}
    if isinstance(arguments, str) and args.get("decode_string_arguments", True):
        arguments = _string_arguments(arguments, index, args)
    if not isinstance(arguments, dict):
        raise ValueError(
            f"json-calls: call {index} arguments must be a JSON object, found {type(arguments).__name__}"
        )
    return arguments


def _string_arguments(text: str, index: int, args: Mapping[str, Any]) -> Any:
    """Arguments written as a JSON string holding the object (OpenAI's wire form,
    ``"arguments": "{\\"file\\": \\"a.txt\\"}"``): the object it holds (the ``arguments_in_string`` rule of
    docs/tools.md). Text that holds no JSON object stays an error."""
    if not text.strip() and args.get("allow_missing_arguments", True):
        return {}
    try:
        decoded = _DECODER.decode(text.strip())
    except (json.JSONDecodeError, RecursionError) as error:
        decoded = _python_literal(text) if args.get("python_literals", False) else None
        if decoded is None:
            reason = error.msg if isinstance(error, json.JSONDecodeError) else "nested too deeply"
            raise ValueError(
                f"json-calls: call {index} arguments must be a JSON object, found a string that holds no JSON "
                f"object ({reason}): {excerpt(text)}"
            ) from error
    if not isinstance(decoded, dict):
        raise ValueError(
            f"json-calls: call {index} arguments must be a JSON object, found a string holding "
            f"{type(decoded).__name__}: {excerpt(text)}"
        )
    return decoded


def parse_json_calls(body: str, args: Mapping[str, Any]) -> list[Call]:
    """Tool calls written as JSON: ``[{"name": N, "arguments": {...}}, ...]`` and its variants.

    ``content_args``: ``accept`` (forms among ``array``, ``object`` = one bare call object and
    ``sequence`` = call objects back to back, separated by whitespace and at most one ';' or ',' (MiniMax-M1);
    default ``["array"]``); ``name_keys`` /
    ``arguments_keys`` (keys tried in order; default ``["name"]`` / ``["arguments", "parameters"]``); ``name_as_key``
    (each call is ``{N: {...}}``, Apertus); ``decode_string_arguments`` (default true: arguments written as a
    string holding the JSON object, OpenAI's wire form, are decoded; a string that holds no object is an
    error; false keeps every string an error); ``allow_missing_arguments`` (a call without
    arguments gets ``{}``; default true); ``python_literals`` (a call object that is not JSON is read
    as a Python literal, e.g. arguments written as a Python repr ``{'city': 'Oslo', 'all_day': False}``,
    vLLM's InternLM2 template; default false). Other keys of a call object (ids) are ignored.
    NaN/Infinity are rejected; a raw control character (a literal newline or tab) inside a string is kept.
    """
    text = body.strip()
    forms = args.get("accept", ["array"])
    literals = args.get("python_literals", False)
    if "sequence" in forms and text.startswith("{"):
        items = _read_sequence(text, literals)
    else:
        items = _call_items(_read_json(text, literals), forms)
    return [_normalise_call(item, index, args) for index, item in enumerate(items)]


def validate_json_calls_args(args: Mapping[str, Any]) -> None:
    """Load-time check of ``json-calls`` content_args."""
    check_allowed("json-calls", args, _JSON_CALLS_ARGS)
    accept = args.get("accept", ["array"])
    if not accept or any(form not in _JSON_FORMS for form in accept):
        raise ValueError(
            f"json-calls: content_args['accept'] must list forms among {list(_JSON_FORMS)}, found {accept!r}"
        )
    check_string_list("json-calls", args, "name_keys")
    check_string_list("json-calls", args, "arguments_keys")



def json_call_list(text: str) -> list[Call] | None:
    """``text`` read as a JSON call list, or None when it is not JSON at all."""
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError):
        return None
    items = value if isinstance(value, list) else [value]
    return [
        _normalise_call(item, index, {"decode_string_arguments": True}) for index, item in enumerate(items)
    ]



# --- json-sequence -----------------------------------------------------------------------------------


def parse_json_sequence(text: str, args: Args) -> list[Any]:
    """One or more JSON values written back to back, separated by ``separator``; returns them as a list.

    Needed by Llama 3.x JSON tool calls (``llama3_json``): the calls are bare JSON objects with no close
    tag, several of them separated by ``;`` or a newline, so the region runs to the end of the turn and
    only a JSON-aware reader can tell where one object ends (braces and ``;`` inside strings are data).

    ``content_args``: ``separator`` (regex matched between values, default ``\\s*;?\\s*``; leading and
    trailing whitespace of the body is always allowed) and ``key_aliases`` (``{alias: canonical}``
    renames of top-level object keys, e.g. ``{"parameters": "arguments"}``; an object holding both
    spellings is an error). Anything that is not a JSON value or a separator is an error.
    """
    separator = compiled(args.get("separator", DEFAULT_SEPARATOR))
    aliases: Mapping[str, str] = args.get("key_aliases", {})
    end = len(text.rstrip())
    position = len(text) - len(text.lstrip())
    if position >= end:
        raise ValueError("json-sequence: expected at least one JSON value, found only whitespace")
    values: list[Any] = []
    while position < end:
        try:
            value, position = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"json-sequence: expected a JSON value at offset {position}, found "
                f"{text[position : position + 20]!r} ({exc.msg})"
            ) from None
        values.append(_rename_keys(value, aliases))
        gap = timed(separator.match, text, position)
        if gap is not None:
            position = gap.end()
    return values


def _rename_keys(value: Any, aliases: Mapping[str, str]) -> Any:
    if not aliases or not isinstance(value, dict):
        return value
    for alias, canonical in aliases.items():
        if alias in value and canonical in value and alias != canonical:
            raise ValueError(
                f"json-sequence: the object has both {alias!r} and {canonical!r}; keep one spelling"
            )
    return {aliases.get(key, key): item for key, item in value.items()}


def _check_json_sequence(args: Args) -> None:
    check_allowed("json-sequence", args, {"separator", "key_aliases"})
    if "separator" in args:
        check_regex("json-sequence", args, "separator")
    aliases = args.get("key_aliases", {})
    if not isinstance(aliases, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        raise ValueError("content_args.key_aliases must be a dict of {alias: canonical key} strings")



# --- item by item ---------------------------------------------------------------------------------------


def _bracket_at(text: str, pos: int) -> int:
    return pos if text[pos] in "{[" else -1


def recover_json_calls(body: str, args: Args) -> tuple[Good, list[BadItem]]:
    """``json-calls`` item by item: each call object of the array (or the lone object, or each object of a
    sequence) separately."""
    text = body.strip()
    forms = args.get("accept", ["array"])
    literals = args.get("python_literals", False)
    if text.startswith("{") and ("object" in forms or "sequence" in forms):
        opener = closer = None
    else:
        opener, closer = "[", "]"
    counter = iter(range(1 << 30))

    def read_one(raw: str) -> Call:
        return _normalise_call(_read_json(raw, literals), next(counter), args)

    good, bad = read_items(text, read_one, structure=PYTHON if literals else JSON, starts_value=_bracket_at,
                           separators=_SEQUENCE_SEPARATORS if opener is None else ",", opener=opener, closer=closer)
    if good:
        return good, bad
    if not bad and opener is not None and closer is not None and text.startswith(opener) and closer not in text:
        # ``[`` and nothing after it: the text stopped right after the list opened (a call was coming).
        bad.append(BadItem(text, "json-calls: the text ends right after the list opens", at_end=True))
    elif len(bad) == 1:
        # The region's one item is bad: the whole region is what the user needs to see (its raw text).
        bad = [replace(bad[0], raw=text)]
    return good, bad


def recover_json_sequence(body: str, args: Args) -> tuple[Good, list[BadItem]]:
    """``json-sequence`` item by item: each value between separators separately."""
    aliases: Mapping[str, str] = args.get("key_aliases", {})

    def read_one(raw: str) -> Any:
        try:
            return _rename_keys(_DECODER.decode(raw), aliases)
        except json.JSONDecodeError as exc:
            raise ValueError(f"json-sequence: expected a JSON value, found {excerpt(raw)} ({exc.msg})") from None

    return read_items(body, read_one, structure=JSON, starts_value=_bracket_at, separators=";\n",
                      opener=None, closer=None)


EXTENSIONS = {
    "json-calls": (parse_json_calls, validate_json_calls_args, recover_json_calls),
    "json-sequence": (parse_json_sequence, _check_json_sequence, recover_json_sequence),
}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
