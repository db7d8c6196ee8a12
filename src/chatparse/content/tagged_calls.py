"""One tool call per region, written either as its name followed by tagged parameters
(``NAME<arg_key>K</arg_key><arg_value>V</arg_value>``) or as a JSON call object
(``{"name": "N", "arguments": {...}}``): ``tagged-call``, a chatparse extension.

K2 Horizon's chat template chooses the call body with its ``tool_call_format`` kwarg (``xml``, the
default; ``xml_typed``, which adds ``<ifm|arg_type>`` tags; ``json``) and the call's name lives inside
the body in every form, so a template cannot capture it from the opener and read the parameters with
``xml-params`` alone. This parser reads every form, so one built-in serves whatever the kwarg was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chatparse.content.args import check_allowed, excerpt
from chatparse.content.parameters import read_parameters
from chatparse.content.regex_search import searcher
from chatparse.content.registry import register_extensions
from chatparse.content.xml_params import EXTENSIONS as XML_PARAMS

Args = Mapping[str, Any]
_ARGS: dict[str, type | tuple[type, ...]] = {"params": Mapping, "json_call": bool}
_NAME_KEYS = ("name",)
_ARGUMENT_KEYS = ("arguments", "parameters")
_NOT_IN_NAMES = frozenset("\"'<>{}[]()")


def parse_tagged_call(text: str, args: Args) -> dict[str, Any]:
    """One call: its name followed by tagged parameters, or a JSON call object; ``{"name", "arguments"}``.

    ``content_args``:

    - ``params`` (required): the ``xml-params`` arguments that read the parameters after the name
      (``param_open``, ``value_close``, ``value_ends``, ``value_parsers``, ...; see ``xml-params``).
    - ``json_call`` (default false): a body that starts with ``{`` is a JSON call object with ``name``
      and ``arguments`` (or ``parameters``: an object, a JSON string holding one, or missing / null for
      no arguments).

    The name is the text before the first parameter opener (the whole body when there is none),
    stripped; it must be non-empty and hold no whitespace, quotes or brackets. Anything else raises ``ValueError`` (a
    malformed call is reported, never read as a call with another name or fewer arguments).
    """
    body = text.strip()
    if args.get("json_call", False) and body.startswith("{"):
        return _json_call(body)
    params: Args = args["params"]
    opener = searcher(params["param_open"]).search(text)
    name = (text if opener is None else text[: opener.start()]).strip()
    if not name:
        raise ValueError(f"tagged-call: the call has no name: {excerpt(body)}")
    if any(c.isspace() or c in _NOT_IN_NAMES for c in name):
        raise ValueError(f"tagged-call: a call name holds no whitespace, quotes or brackets: {excerpt(name)}")
    arguments = {} if opener is None else read_parameters(text[opener.start() :], params)
    return {"name": name, "arguments": arguments}


def _json_call(body: str) -> dict[str, Any]:
    try:
        call = json.loads(body, strict=False)  # a raw newline or tab inside a string is kept
    except json.JSONDecodeError as exc:
        raise ValueError(f"tagged-call: the call object is not JSON ({exc.msg}): {excerpt(body)}") from exc
    if not isinstance(call, dict):
        raise ValueError(f"tagged-call: the call is not a JSON object: {excerpt(body)}")
    name = next((call[k] for k in _NAME_KEYS if k in call), None)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tagged-call: the call object has no name: {excerpt(body)}")
    arguments = next((call[k] for k in _ARGUMENT_KEYS if k in call), None)
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments, strict=False)
        except json.JSONDecodeError as exc:
            raise ValueError(f"tagged-call: the arguments string is not JSON ({exc.msg})") from exc
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ValueError(f"tagged-call: the arguments are not a JSON object: {excerpt(json.dumps(arguments))}")
    return {"name": name.strip(), "arguments": arguments}


def _check_tagged_call(args: Args) -> None:
    check_allowed("tagged-call", args, _ARGS)
    if "params" not in args:
        raise ValueError("tagged-call: content_args.params is required (the xml-params arguments of the parameters)")
    check_params_arg("tagged-call", args)


def check_params_arg(parser: str, args: Args) -> None:
    """``content_args.params`` of a parser that reads its parameters with ``xml-params``, checked as those."""
    check_params = XML_PARAMS["xml-params"][1]
    assert check_params is not None
    try:
        check_params(args["params"])
    except ValueError as exc:
        raise ValueError(f"{parser}: content_args.params: {exc}") from exc


EXTENSIONS = {"tagged-call": (parse_tagged_call, _check_tagged_call, None)}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
