"""Tool-call regions to ``tool_calls`` deltas: the header (id, name) as soon as the name is known, arguments
early (streamed JSON or XML parameters, typed by the tool schema) or whole at the close."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chatparse.engine.tool_typing import coerce_string, schema_types
from chatparse.lazy import load
from chatparse.openai.message import (
    TOOLS_FIELD,
    _call_list,
    _call_name,
    _encode,
    _encode_string,
    arguments_json,
)
from chatparse.openai.state import _CallState
from chatparse.openai.text import _TextRoutes
from chatparse.template.compile import CompiledField


@dataclass(frozen=True)
class _Shape:
    """Where a tool-call field's name and arguments come from, read off its transform."""

    name_capture: str | None = None  # "{name}": a named group of the open delimiter
    name_keys: tuple[str, ...] = ()  # "{content.name}": a top-level key of a JSON body (or its spellings)
    args_whole: bool = False  # "{content}": the whole body is the arguments object
    args_keys: tuple[str, ...] = ()  # "{content.arguments}": the arguments are one top-level key's value
    body: str = ""  # "json" | "xml" | "" (no early streaming)


def _call_shape(fld: CompiledField) -> _Shape:
    if fld.content == "json-calls":
        return _json_calls_shape(fld, fld.content_args)
    if fld.content in ("json-calls-or-function", "json-calls-or-code"):  # other spellings are not read early
        return _json_calls_shape(fld, fld.content_args.get("json_calls", {}))
    transform = fld.transform
    fn = transform.get("function") if isinstance(transform, Mapping) and not fld.transform_each else None
    if fn == "{content}":  # the body is the function object itself: {"name": …, "arguments": {…}}
        fn = {"name": "{content.name}", "arguments": "{content.arguments}"}
    if not isinstance(fn, Mapping):
        return _Shape()
    name, args = fn.get("name"), fn.get("arguments")
    body = {"json": "json", "xml-inline": "xml", "xml-params": "xml"}.get(fld.content, "")
    if body == "json" and set(fld.content_args) - {"raw_control_chars"}:
        body = ""  # dialect knobs (unquoted keys, lifted strings): the scanner reads JSON only
    if body == "xml" and _xml_args_unusual(fld):
        body = ""
    name_capture = name_key = None
    if isinstance(name, str) and name.startswith("{") and name.endswith("}") and name.count("{") == 1:
        ref = name[1:-1]
        if ref.startswith("content."):
            name_key = ref[len("content."):] if ref.count(".") == 1 else None
        elif ref != "content" and "." not in ref:
            name_capture = ref
    args_key = _content_key(args) if body == "json" else None
    return _Shape(name_capture=name_capture, name_keys=(name_key,) if name_key else (),
                  args_whole=args == "{content}", args_keys=(args_key,) if args_key else (), body=body)


def _json_calls_shape(fld: CompiledField, args: Mapping[str, Any]) -> _Shape:
    """One ``json-calls`` call object per region (``accept: ["object"]``, ``transform_each`` with
    ``{name}``/``{arguments}``): the name and the arguments are top-level keys, in their spellings."""
    transform = fld.transform if isinstance(fld.transform, Mapping) else {}
    if (list(args.get("accept", ["array"])) != ["object"] or args.get("name_as_key")
            or args.get("decode_string_arguments") or not fld.transform_each
            or transform.get("function") != {"name": "{name}", "arguments": "{arguments}"}):
        return _Shape()
    return _Shape(name_keys=tuple(args.get("name_keys", ["name"])),
                  args_keys=tuple(args.get("arguments_keys", ["arguments", "parameters"])), body="json")


def _content_key(ref: Any) -> str | None:
    """``key`` for a ``"{content.key}"`` placeholder (one level deep), else None."""
    if not isinstance(ref, str) or not (ref.startswith("{content.") and ref.endswith("}")):
        return None
    key = ref[len("{content.") : -1]
    return key if key and "." not in key and "{" not in key and "}" not in key else None


# The parameter layout ``XMLArgumentStream`` reads (Qwen3-Coder / Qwen 3.5).
_QWEN_PARAMETERS = {"param_open": "<parameter=(?P<key>[^>\\n]+)>", "value_close": "</parameter>",
                    "strip_newlines": True}


def _xml_args_unusual(fld: CompiledField) -> bool:
    """Parameters the early XML scanner cannot follow: values typed by the parser itself, merged
    duplicates, or an ``xml-params`` layout other than Qwen's ``<parameter=KEY>``."""
    args = fld.content_args
    if fld.content == "xml-params":
        return any(args.get(key) != value for key, value in _QWEN_PARAMETERS.items())
    return bool(args.get("value_parser") or args.get("merge_duplicates"))


_PLAIN = (str, int, bool, type(None))  # values whose JSON text equal values of the same type share


def _feed_scanner(call: _CallState, text: str) -> None:
    """Feed the call's scanner ``text``, after the text that waited for it (see ``_scan``)."""
    waiting = call.waiting
    if waiting:
        waiting.append(text)
        text = "".join(waiting)
        waiting.clear()
    call.scanner.feed(text)


def _streamed_json(call: _CallState, arguments: Any) -> str | None:
    """The arguments' JSON without serializing them again, when every key already went out early, in
    order, with a plain value (string, integer, boolean, null) equal to the final one: the fragments
    and ``}``. None otherwise (the caller serializes)."""
    sent = call.values
    if not call.early or not sent or type(arguments) is not dict or len(arguments) != len(sent):
        return None
    for (key, value), (final_key, final_value) in zip(sent.items(), arguments.items(), strict=True):
        if key != final_key or type(value) is not type(final_value) or type(value) not in _PLAIN \
                or value != final_value:
            return None
    return "".join(call.emitted) + (call.pending or "") + "}"


class _CallRoutes(_TextRoutes):
    """Routes tool-call regions' events to deltas."""

    def _route_call(self, kind: str, event: dict[str, Any], fld: CompiledField, *, live: bool) -> None:
        if kind == "region_open":
            call = self._call = _CallState()
            if self.buffer_calls:
                return  # nothing of a call goes out before it is complete
            shape = _call_shape(fld)
            if shape.name_capture is not None and live and self.parser.current_region == TOOLS_FIELD:
                name = self.parser.current_captures.get(shape.name_capture)
                if isinstance(name, str):
                    self._header(call, name)
            call.scanner = self._scanner(call, shape)
            call.xml = shape.body == "xml"
        elif kind == "region_chunk":
            current = self._call
            if current is not None and current.scanner is not None:
                self._scan(current, event["text"])
        elif kind == "region_close":
            values = _call_list(event["value"])
            first = self._call or _CallState()
            self._call = None
            for position, value in enumerate(values):
                self._close_call(first if position == 0 else _CallState(), value)
            if not values and first.index is not None:  # read item by item, the streamed call failed
                codes = [problem["code"] for problem in event.get("malformed") or ()]
                self._dropped[first.index] = "truncated" if "truncated" in codes else codes[0] if codes else "empty"
        elif kind == "region_malformed":
            if self._call is not None and self._call.index is not None:
                self._dropped[self._call.index] = event["code"]  # its header stays: the final chunk names it
            self._call = None

    def _scan(self, call: _CallState, text: str) -> None:
        """Feed the call's scanner. Its callbacks fire only at a character that ends a key: the ``,`` or
        ``}`` after a JSON value (at most one level down; ``ArgumentStream.can_fire``), the ``>`` of the tag
        after an XML value. Text without one waits and goes in with the next text that has one: the same
        callbacks in the same feed, with one scanner call per key instead of one per feed."""
        if (">" in text) if call.xml else call.scanner.can_fire(text):
            _feed_scanner(call, text)
        else:
            call.waiting.append(text)

    def _close_call(self, call: _CallState, value: Mapping[str, Any]) -> None:
        fn = value.get("function")
        if not isinstance(fn, Mapping):
            fn = {}
        where = f"tool_calls[{self._calls_made}].function"
        name = _call_name(fn, f"{where}.name")
        arguments = fn.get("arguments")
        final = _streamed_json(call, arguments) or arguments_json(arguments, f"{where}.arguments")
        if call.index is None or call.name != name:
            if call.index is not None:
                self.mismatches.append(f"tool_calls[{call.index}].name")
            call = _CallState()
            self._header(call, name)
        self._calls_made += 1
        self._sent_calls.append((name, final, arguments))
        sent = "".join(call.emitted)
        if final.startswith(sent):
            self._args(call, final[len(sent):])
        else:
            self.mismatches.append(f"tool_calls[{call.index}].arguments")

    def _header(self, call: _CallState, name: str) -> None:
        call.index = self._calls_sent
        self._calls_sent += 1
        call.id = self._make_id(call.index)
        call.name = name
        self._delta({"tool_calls": [{"index": call.index, "id": call.id, "type": "function",
                                     "function": {"name": name, "arguments": ""}}]})

    def _args(self, call: _CallState, fragment: str) -> None:
        if not fragment or call.index is None:
            return
        call.emitted.append(fragment)
        self._delta({"tool_calls": [{"index": call.index, "function": {"arguments": fragment}}]})

    def _scanner(self, call: _CallState, shape: _Shape) -> Any:
        """An incremental scanner over the call body, or None when nothing can stream early."""
        # The callbacks are partials of methods, not closures, so that a stream pickles mid-call.
        if shape.body == "json":
            stream = load("chatparse.tools.stream")
            on_key = functools.partial(self._on_json_key, call, shape)
            if not shape.args_keys:
                return stream.ArgumentStream(on_key_completed=on_key)
            # No header yet (arguments before "name"): all wait for the close.
            return stream.ArgumentStream(on_key_completed=on_key, nested_key=shape.args_keys,
                                         on_nested_key_completed=functools.partial(self._early_key, call))
        if shape.body == "xml" and shape.args_whole:
            xml_stream = load("chatparse.tools.xml_stream")
            return xml_stream.XMLArgumentStream(on_key_completed=functools.partial(self._early_key, call, hold_one=True))
        return None

    def _on_json_key(self, call: _CallState, shape: _Shape, key: str, value: Any) -> None:
        if shape.args_whole:
            self._early_key(call, key, value)
        elif key in shape.name_keys and call.index is None:
            if isinstance(value, str):
                self._header(call, value)

    def _early_key(self, call: _CallState, key: str, value: Any, *, hold_one: bool = False) -> None:
        """Send ``key``'s fragment when its final serialization is certain (XML: one key later)."""
        if not call.early or call.index is None or call.name is None:
            call.early = False  # name unknown yet: arguments wait for the close
            return
        if key in call.values:
            call.early = False  # a repeated key: the engine keeps the last value
            return
        typed = call.values[key] = self._typed(call.name, key, value) if self._params else value
        lead = "{" if not call.emitted and call.pending is None else ", "
        fragment = lead + _encode_string(key) + ": " + _encode(typed)
        if not hold_one:  # ``_args``, inline
            call.emitted.append(fragment)
            self._delta({"tool_calls": [{"index": call.index, "function": {"arguments": fragment}}]})
            return
        if call.pending is not None:
            self._args(call, call.pending)
        call.pending = fragment

    def _typed(self, name: str, key: str, value: Any) -> Any:
        """``value`` typed by the request's tools exactly as the engine types it at the close."""
        properties = self._params.get(name)
        if not properties or key not in properties:
            return value
        types = schema_types(properties[key])
        if not types:
            return value
        literals = self.parser.template.fields[TOOLS_FIELD].ext.python_literals
        if isinstance(value, str):
            return coerce_string(value, types, literals)
        if isinstance(value, list) and "array" not in types:
            return [coerce_string(v, types, literals) if isinstance(v, str) else v for v in value]
        return value
