"""``xml-params-repair``: a call's ``<arg_key>K</arg_key><arg_value>V</arg_value>`` parameters read by
``xml-params``, and, when that fails, read again after repairing the tags GLM models are known to drop: the
opening value tag, the last value's close, a stray value close right after the call's name. A repaired body
is returned as ``Repaired`` (the engine lists each repair under ``message["repaired"]``); a body the repairs
do not make readable raises ``xml-params``' own error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import regex

from chatparse.content.args import check_allowed, compiled, timed_finditer
from chatparse.content.registry import Repaired, register_extensions
from chatparse.content.tagged_calls import check_params_arg
from chatparse.content.xml_params import parse_xml_params

Args = Mapping[str, Any]
_ARGS: dict[str, type | tuple[type, ...]] = {"params": Mapping, "key_open": str, "key_close": str,
                                             "value_open": str}
_LITERALS = ("key_open", "key_close", "value_open")


def parse_xml_params_repair(text: str, args: Args) -> dict[str, Any] | Repaired:
    """``xml-params`` over ``text``; if it fails, the same after repairing dropped tags.

    ``content_args``:

    - ``params`` (required): the ``xml-params`` arguments (``param_open``, ``value_close``, ...); the
      value close must be a plain literal.
    - ``key_open``, ``key_close``, ``value_open`` (required): the literal tags around a key and before a
      value (``<arg_key>``, ``</arg_key>``, ``<arg_value>``).

    Repairs, each reported with its code: ``missing_value_open`` (a key's close followed by its value
    without the value's opening tag), ``missing_value_close`` (the last value runs to the end of the body
    without its close), ``stray_value_close`` (a value close before any parameter, right after the call's
    name). Nothing else is repaired: text outside the parameters still raises.
    """
    params: Args = args["params"]
    try:
        return parse_xml_params(text, params)
    except ValueError as error:
        original = error
    repaired, repairs = _repaired(text, args)
    if not repairs:
        raise original
    try:
        value = parse_xml_params(repaired, params)
    except ValueError:
        raise original from None
    return Repaired(value, tuple(repairs))


def _repaired(text: str, args: Args) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with the dropped tags put back, and what was put back or removed."""
    close: str = args["params"]["value_close"]
    value_open: str = args["value_open"]
    repairs: list[tuple[str, str]] = []
    head = len(text) - len(text.lstrip())
    if text.startswith(close, head):
        text = text[:head] + text[head + len(close) :]
        repairs.append(("stray_value_close", f"removed a {close!r} written before any parameter"))
    bare_key = compiled(regex.escape(args["key_open"]) + r"[^<]*" + regex.escape(args["key_close"])
                        + r"[ \t\r\n]*+(?!" + regex.escape(value_open) + ")")
    pieces, last, keys = [], 0, []
    for match in timed_finditer(bare_key, text):
        pieces += [text[last : match.end()], value_open]
        last = match.end()
        keys.append(match.group())
    if keys:
        text = "".join(pieces) + text[last:]
        repairs.append(("missing_value_open", f"added {value_open!r} after {', '.join(map(repr, keys))}"))
    opened = text.rfind(value_open)
    if opened >= 0 and text.find(close, opened) < 0:
        body = text.rstrip()
        text = body + close + text[len(body) :]
        repairs.append(("missing_value_close", f"added the last value's {close!r}"))
    return text, repairs


def _check_xml_params_repair(args: Args) -> None:
    check_allowed("xml-params-repair", args, _ARGS)
    missing = [key for key in ("params", *_LITERALS) if key not in args]
    if missing:
        raise ValueError(f"xml-params-repair: content_args {missing} are required (the xml-params arguments and "
                         "the literal key and value tags)")
    if any(not args[key] for key in _LITERALS):
        raise ValueError(f"xml-params-repair: {list(_LITERALS)} must be non-empty literals")
    check_params_arg("xml-params-repair", args)
    if "{" in args["params"]["value_close"]:
        raise ValueError("xml-params-repair: content_args.params.value_close must be a plain literal (no {group})")


EXTENSIONS = {"xml-params-repair": (parse_xml_params_repair, _check_xml_params_repair, None)}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
