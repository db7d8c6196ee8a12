"""Calls written as XML ``invoke`` elements: ``xml-invokes``.

One region holds one or more calls, each an element that names the function in its opening tag and holds
XML-like parameters::

    <atem:function_calls>
    <atem:invoke name="get_weather">
    <atem:parameter name="city">Seoul</atem:parameter>
    </atem:invoke>
    </atem:function_calls>

Muse Spark and Muse Glimmer write this "ATEM" layout inside a message addressed to a tool; dots writes
``<invoke name=N>`` elements (name double-, single- or unquoted) with ``<parameter name=K>`` children inside
``<dots_function_call>``, or one JSON call object instead. The name lives inside the region, so the call
cannot be opened by a field's pattern the way one-call-per-region formats are (``xml-params`` reads the
parameters of such a call); this parser reads the invokes of a whole region, item by item, so one bad or
cut-off call does not take the calls beside it (``recover``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from chatparse.content.args import check_allowed, check_regex, excerpt, timed
from chatparse.content.json_calls import parse_json_calls
from chatparse.content.parameters import read_parameters
from chatparse.content.recovery import JSON, Good, bracketed_end, skip_space
from chatparse.content.regex_search import Searcher, searcher
from chatparse.content.registry import BadItem, register_extensions
from chatparse.content.xml_params import _XML_PARAMS_ARGS, _check_xml_params
from chatparse.limits import check_pattern_limits

Call = dict[str, Any]
Args = Mapping[str, Any]

_OWN_ARGS: dict[str, type | tuple[type, ...]] = {
    "invoke_open": str,
    "invoke_close": str,
    "wrapper": list,
    "json_call": bool,
}
_PARAM_KEYS = tuple(key for key in _XML_PARAMS_ARGS if key not in ("trailer", "json_body"))
_ARGS: dict[str, type | tuple[type, ...]] = {**_OWN_ARGS, **{key: _XML_PARAMS_ARGS[key] for key in _PARAM_KEYS}}


def _param_args(args: Args) -> dict[str, Any]:
    return {key: args[key] for key in _PARAM_KEYS if key in args}


def _invoke_end(text: str, start: int, close: str, opener: Searcher, wrapper: tuple[str, ...]) -> int:
    """Where the invoke whose body starts at ``start`` closes: the first ``close`` followed (after
    whitespace) by the end of the region, the next invoke or a wrapper literal (a close followed by other
    text is text of a value); -1 when there is none (the invoke was cut off, or is followed by stray text)."""
    at = text.find(close, start)
    while at >= 0:
        gap = skip_space(text, at + len(close))
        if (gap == len(text) or timed(opener.pattern.match, text, gap, partial=True) is not None
                or any(text.startswith(w, gap) for w in wrapper) or _cut_literal(text[gap:], wrapper)):
            return at  # (a next call or wrapper the end of the region cuts counts: the text was cut there)
        at = text.find(close, at + len(close))
    return -1


def _skip_filler(text: str, pos: int, wrapper: tuple[str, ...]) -> int:
    """Past whitespace and wrapper literals (``<atem:function_calls>`` … ``</atem:function_calls>``)."""
    while True:
        pos = skip_space(text, pos)
        literal = next((w for w in wrapper if text.startswith(w, pos)), None)
        if literal is None:
            return pos
        pos += len(literal)


def _cut_literal(rest: str, literals: tuple[str, ...]) -> bool:
    """``rest`` is a literal cut off at the end of the region (``</atem:function_cal``)."""
    return any(len(rest) < len(lit) and lit.startswith(rest) for lit in literals)


def _read(text: str, args: Args) -> tuple[Good, list[BadItem]]:
    opener = searcher(args["invoke_open"])
    close: str = args["invoke_close"]
    wrapper = tuple(args.get("wrapper", ()))
    json_call = args.get("json_call", False)
    params = _param_args(args)
    good: Good = []
    bad: list[BadItem] = []
    pos = _skip_filler(text, 0, wrapper)
    while pos < len(text):
        m = opener.match(text, pos)
        if m is None and json_call and text[pos] == "{":
            end = bracketed_end(text, pos, JSON)
            if end < 0:
                bad.append(BadItem(text[pos:].rstrip(), "xml-invokes: the text ends inside the JSON call object",
                                   at_end=True))
                return good, bad
            raw = text[pos:end]
            try:
                good.append((parse_json_calls(raw, {"accept": ["object"]})[0], raw))
            except ValueError as exc:
                bad.append(BadItem(raw, str(exc)[:300], at_end=not text[end:].strip()))
            pos = _skip_filler(text, end, wrapper)
            continue
        if m is None:
            following = opener.search(text, pos + 1)
            stop = following.start() if following is not None else len(text)
            stray = text[pos:stop].strip()
            if following is None and _cut_literal(stray, wrapper):
                return good, bad  # a wrapper close cut off at the end: nothing was lost
            bad.append(BadItem(stray, f"xml-invokes: text outside the calls: {excerpt(stray)}",
                               at_end=following is None))
            pos = _skip_filler(text, stop, wrapper)
            continue
        end = _invoke_end(text, m.end(), close, opener, wrapper)
        if end < 0:
            bad.append(BadItem(text[m.start() :].rstrip(), f"xml-invokes: the call has no {close!r} that ends it",
                               at_end=True))
            return good, bad
        raw = text[m.start() : end + len(close)]
        after = _skip_filler(text, end + len(close), wrapper)
        try:
            name = (m.group("name") or "").strip()
            if not name:
                raise ValueError("xml-invokes: the call has an empty name")
            good.append(({"name": name, "arguments": read_parameters(text[m.end() : end], params)}, raw))
        except ValueError as exc:
            bad.append(BadItem(raw, str(exc)[:300], at_end=after >= len(text)))
        pos = after
    return good, bad


def parse_xml_invokes(text: str, args: Args) -> list[Call]:
    """Calls written as XML invoke elements, ``[{"name", "arguments"}, ...]`` in order.

    Needed by Muse Spark / Muse Glimmer (``<atem:invoke name="N">`` with ``<atem:parameter name="K">V
    </atem:parameter>`` inside ``<atem:function_calls>``, in a message addressed to a tool) and dots
    (``<invoke name=N>`` with ``<parameter name=K>`` inside ``<dots_function_call>``, or one JSON call
    object): the function name is an attribute inside the region, and one region may hold several calls.

    ``content_args``:

    - ``invoke_open`` (required): regex of a call's opening tag with the named group ``name`` (several
      alternatives may each define ``name``: quoted and unquoted spellings).
    - ``invoke_close`` (required): the literal closing a call. A call ends at its first close that is
      followed by the next call, a wrapper literal or the end of the region (so close text inside a value
      is data); a call without such a close runs to the end of the region and is one bad item (cut off, when
      the region was).
    - ``wrapper``: literals that may stand around and between the calls (the block's open and close).
    - ``json_call``: a JSON object ``{"name": N, "arguments"|"parameters": {...}}`` written instead of an
      invoke is a call too.
    - the parameters are read by ``xml-params`` with its keys: ``param_open`` and ``value_close``
      (required), ``value_ends``, ``strip_newlines``, ``value_parsers``, ``default_parser``.

    Strict: text outside the calls (other than whitespace and wrapper literals), a call without its close
    and a bad parameter body raise ``ValueError``; item by item (``recover``), each is one bad item with its
    raw text and the calls beside it are kept. Names are stripped; an empty name is an error.
    """
    good, bad = _read(text, args)
    if bad:
        raise ValueError(bad[0].error)
    return [value for value, _ in good]


def recover_xml_invokes(text: str, args: Args) -> tuple[Good, list[BadItem]]:
    """``xml-invokes`` item by item: each call separately (a call the region's end cuts is ``at_end``). When
    the region's only item is bad, the item is the whole region (its raw text is what the reader needs)."""
    good, bad = _read(text, args)
    if not good and len(bad) == 1:
        bad = [replace(bad[0], raw=text)]
    return good, bad


def _check_xml_invokes(args: Args) -> None:
    check_allowed("xml-invokes", args, _ARGS)
    for key in ("invoke_open", "invoke_close"):
        if key not in args:
            raise ValueError(f"xml-invokes: content_args.{key} is required")
    check_pattern_limits(args["invoke_open"], field=None, key="content_args.invoke_open", scope="xml-invokes")
    pattern = check_regex("xml-invokes", args, "invoke_open")
    if "name" not in pattern.groupindex:
        raise ValueError("xml-invokes: content_args.invoke_open must have the named group 'name'")
    if not args["invoke_close"]:
        raise ValueError("xml-invokes: content_args.invoke_close must be a non-empty string")
    wrapper = args.get("wrapper", [])
    if not all(isinstance(w, str) and w for w in wrapper):
        raise ValueError("xml-invokes: content_args.wrapper must be a list of non-empty strings")
    _check_xml_params(_param_args(args))


EXTENSIONS = {"xml-invokes": (parse_xml_invokes, _check_xml_invokes, recover_xml_invokes)}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    register_extensions(EXTENSIONS)


register()
