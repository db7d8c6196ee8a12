"""Write an inferred ``Format`` as a v1 response template, with chatparse's extension keys where v1 cannot
say it (the real-output rules every built-in follows: the end of the turn, next-turn headers, EOS after the
end, stray markers, content as written, JSON-aware call bodies, truncated calls, several call blocks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chatparse.synthesize.calls import NAME_CLASS, CallFormat
from chatparse.synthesize.errors import NotInferableError
from chatparse.synthesize.infer import Format
from chatparse.synthesize.text import Lexer, escape, flex

CALL_TRANSFORM = {"type": "function", "function": {"name": "{name}", "arguments": "{arguments}"}}
NAMED_TRANSFORM = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
LOOKAHEAD_GAP = r"\s{0,16}"


def emit(fmt: Format, lexer: Lexer) -> dict[str, Any]:
    """The response template of ``fmt``."""
    fields: dict[str, Any] = {}
    drop: list[str] = []
    if fmt.reasoning is not None:
        fields["thinking"] = {"open": fmt.reasoning.open, "close": fmt.reasoning.close, "repeats": True,
                              "join": "\n", "content": "text"}
        drop.append(fmt.reasoning.close)
    if fmt.calls is not None:
        fields["tool_calls"], call_drop = _calls_field(fmt.calls, lexer, fmt.calls_end_turn)
        drop += call_drop
    fields["content"] = {"repeats": True, "join": "", "content": "text", "content_args": {"strip": False},
                         "chatparse": {"strip_joined": True}}
    layout = _messages_layout(fmt)
    if layout is not None and "write" in fields.get("tool_calls", {}).get("chatparse", {}):
        fields["content"]["chatparse"]["write"] = layout
        written = fields["tool_calls"]["chatparse"]["write"]
        written["call"] = fmt.calls.lead + written["call"] if fmt.calls is not None else written["call"]
    drop += [m for m in (fmt.content_open, fmt.content_close, *fmt.glue) if _droppable(m, lexer)]
    extensions: dict[str, Any] = {}
    if fmt.end:
        extensions["end"] = list(dict.fromkeys(fmt.end))
        if fmt.discard:
            extensions["discard_after_end"] = list(dict.fromkeys(fmt.discard))
    if fmt.next_turn:
        extensions["next_turn"] = list(dict.fromkeys(fmt.next_turn))
    drop = [m for m in dict.fromkeys(drop) if m not in fmt.end]
    if drop:
        extensions["drop"] = drop
    if fmt.reasoning is not None and fmt.reasoning.close in drop:
        # Reasoning the model opens without its opener ends at a lone close (docs/templates.md).
        fields["thinking"]["chatparse"] = {"lone_close": [fmt.reasoning.close]}
    anchor: Any = fmt.anchors[0] if len(fmt.anchors) == 1 else list(fmt.anchors)
    template: dict[str, Any] = {"defaults": {"role": "assistant"}, "start_anchor": anchor}
    if extensions:
        template["chatparse"] = extensions
    template["fields"] = fields
    return template


def _messages_layout(fmt: Format) -> dict[str, str] | None:
    """The content field's written form when the turn is made of messages (harmony): after reasoning the
    template writes the assistant header again (the glue is an anchor), then the answer inside its wrapper;
    a call is a message of its own after the header, written as after the prompt."""
    if fmt.reasoning is None or not fmt.content_open or not fmt.end or len(fmt.glue) != 1 or \
            fmt.glue[0] not in fmt.anchors:
        return None
    return {"open": fmt.content_open, "close": fmt.end[0], "layout": "messages", "header": fmt.glue[0]}


def _droppable(text: str, lexer: Lexer) -> bool:
    """A wrapper is dropped where no region is open when it is a marker or a label (``助手：``); a plain word
    could be part of an answer."""
    return bool(text) and (bool(lexer.markers(text)) or text.rstrip().endswith((":", "：")))


def _delimiter(text: str, lexer: Lexer, literal_key: str, pattern_key: str) -> dict[str, str]:
    """``{open: literal}`` for text without inner whitespace, else ``{open_pattern: regex}`` that allows
    any whitespace where the template wrote some."""
    stripped = text.strip()
    if not any(ch.isspace() for ch in stripped):
        return {literal_key: stripped}
    return {pattern_key: flex(stripped, lexer)}


def _end_or_value(close: str, lexer: Lexer, ext: dict[str, Any]) -> dict[str, Any]:
    if close.strip():
        return _delimiter(close, lexer, "close", "close_pattern")
    ext["ends_with_value"] = True
    return {}


def _calls_field(calls: CallFormat, lexer: Lexer, calls_end_turn: bool) -> tuple[dict[str, Any], list[str]]:
    drop = []
    items = bool(calls.item_open.strip() or calls.item_open_pattern)
    if items and calls.section_open.strip():
        drop.append(calls.section_open.strip())
    if items and calls.section_close.strip() and not calls_end_turn:
        drop.append(calls.section_close.strip())
    builders = {"json-object": _json_object, "json-array": _json_array, "name-json": _name_json,
                "xml-params": _xml_params, "python-calls": _python_calls, "bare-key-object": _bare_key}
    field = builders[calls.syntax](calls, lexer)
    if calls.write:
        field["chatparse"]["write"] = _write(calls.write, calls.section_close.strip() if calls_end_turn else "")
    return field, drop


def _write(form: Mapping[str, Any], turn_end: str) -> dict[str, Any]:
    """The written form; a close of all calls that ends the turn (``turn_end``) is the turn's end marker
    (written after the calls by the grammar), not part of the group."""
    out = dict(form)
    group = out.pop("group", None)
    if group and turn_end and group[1].rstrip().endswith(turn_end):
        close = group[1].rstrip()
        group = [group[0], close[: len(close) - len(turn_end)]]
    if group and any(group):
        out["group"] = list(group)
    return out


def _json_args(calls: CallFormat, accept: list[str]) -> dict[str, Any]:
    keys = calls.json_keys
    args: dict[str, Any] = {"accept": accept}
    if keys.get("name_as_key"):
        args["name_as_key"] = True
    else:
        args["name_keys"] = [keys["name_key"]]
        args["arguments_keys"] = [keys["arguments_key"]]
        if keys.get("string_arguments"):
            args["decode_string_arguments"] = True
    return args


def _first_key_lookahead(calls: CallFormat, array: bool) -> str:
    """Where a call object starts when nothing marks it: an object that begins as the rendered calls do
    (the name key, its string value, then the arguments key), so JSON quoted in an answer stays content."""
    keys = calls.json_keys
    order = list(keys.get("order", []))
    gap = LOOKAHEAD_GAP
    head = r"\[" + gap if array else ""
    first = order[0] if order else ""
    body = f"\\{{{gap}\"{escape(first)}\"{gap}:"
    if first == keys.get("name_key") and len(order) > 1:
        body += f'{gap}"[^"\\\\\\n]{{1,128}}"{gap},{gap}"{escape(order[1])}"{gap}:'
    return f"(?={head}{body})"


def _json_object(calls: CallFormat, lexer: Lexer) -> dict[str, Any]:
    ext: dict[str, Any] = {"structure": "json", "truncation": True, "extend": True}
    if calls.item_open.strip():
        if calls.section_open.strip():
            field: dict[str, Any] = {"open_pattern": _section_prefix(calls, lexer) + flex(calls.item_open, lexer)}
        else:
            field = _delimiter(calls.item_open, lexer, "open", "open_pattern")
        field.update(_end_or_value(calls.item_close, lexer, ext))
        accept = ["object"]
    elif calls.section_open.strip():  # calls one after another inside one wrapper
        field = _delimiter(calls.section_open, lexer, "open", "open_pattern")
        field.update(_end_or_value(calls.section_close, lexer, ext))
        accept = ["sequence", "object"]
    else:
        field = {"open_pattern": _first_key_lookahead(calls, array=False)}
        ext["ends_with_value"] = True
        accept = ["object"]
    return {**field, "repeats": True, "content": "json-calls", "content_args": _json_args(calls, accept),
            "transform_each": True, "transform": CALL_TRANSFORM, "chatparse": ext}


def _json_array(calls: CallFormat, lexer: Lexer) -> dict[str, Any]:
    ext: dict[str, Any] = {"structure": "json", "truncation": True, "extend": True}
    if calls.section_open.strip():
        field: dict[str, Any] = _delimiter(calls.section_open, lexer, "open", "open_pattern")
    else:
        field = {"open_pattern": _first_key_lookahead(calls, array=True)}
    field.update(_end_or_value(calls.section_close, lexer, ext))
    return {**field, "repeats": True, "content": "json-calls", "content_args": _json_args(calls, ["array"]),
            "transform_each": True, "transform": CALL_TRANSFORM, "chatparse": ext}


def _section_prefix(calls: CallFormat, lexer: Lexer) -> str:
    """The wrapper around all calls as an optional prefix of each call's opener: a cut right after it is a
    truncated call, and a truncated call's raw text includes it (a stray wrapper is dropped)."""
    section = calls.section_open.strip()
    return f"(?:{flex(section, lexer)}\\s*)?" if section else ""


def _name_group(follow: str) -> str:
    """The name's group: lazy when a separator follows it, greedy (up to whitespace or a marker) otherwise."""
    return f"(?P<name>{NAME_CLASS}+?)" if follow else f"(?P<name>{NAME_CLASS}+)"


def _name_json(calls: CallFormat, lexer: Lexer) -> dict[str, Any]:
    ext: dict[str, Any] = {"structure": "json", "truncation": True}
    head = _section_prefix(calls, lexer) + (calls.item_open_pattern or flex(calls.item_open, lexer))
    opener = head + _name_group(calls.name_after) + calls.name_after
    field: dict[str, Any] = {"open_pattern": opener}
    field.update(_end_or_value(calls.item_close, lexer, ext))
    return {**field, "repeats": True, "content": "json",
            "content_args": {"raw_control_chars": True}, "transform": NAMED_TRANSFORM, "chatparse": ext}


def _xml_params(calls: CallFormat, lexer: Lexer) -> dict[str, Any]:
    xml = calls.xml
    follow = calls.name_after
    opener = _section_prefix(calls, lexer) + flex(calls.item_open, lexer) + _name_group(follow) + follow
    param_open = (escape(xml["param_prefix"]) + '(?P<key>[^<>"\\n]+?)' + xml["connector"])
    if xml["strip_newlines"] and param_open.endswith(r"\s*"):
        param_open = param_open[: -len(r"\s*")]
    args: dict[str, Any] = {"param_open": param_open, "value_close": xml["value_close"],
                            "value_ends": "next_param" if xml["strip_newlines"] else "close"}
    if xml["strip_newlines"]:
        args["strip_newlines"] = True
    kinds = xml.get("kinds") or {}
    if kinds:
        args["value_parsers"] = {k: ({"name": "text", "args": {"strip": False}} if how == "text"
                                     else {"name": "json", "args": {"allow_non_json": True}})
                                 for k, how in sorted(kinds.items())}
        args["default_parser"] = {"name": "json", "args": {"allow_non_json": True}}
    # With layout newlines the template writes "\n" + close: a value cut right after close text of its own
    # (without that newline) is still open.
    span_close = ("\n" if xml["strip_newlines"] else "") + xml["value_close"]
    # A value's close counts only where the call's structure goes on after it (the next parameter, the
    # call's close, the end of the text): close text inside a value is data (docs/templates.md).
    call_close = calls.item_close.strip()
    call_close = call_close[: call_close.index(">") + 1] if ">" in call_close else call_close
    follow = r"\s{0,256}(?:" + "|".join([escape(xml["param_prefix"]), escape(call_close), r"\Z"]) + ")"
    ext: dict[str, Any] = {"structure": {"spans": [[xml["param_prefix"], span_close, follow]]}, "truncation": True}
    if xml["strip_newlines"]:  # the layout of the formats whose models drop a value's close (Qwen3-Coder)
        ext["span_fallback"] = True
    if xml.get("python_values"):
        ext["python_literals"] = True
    if not calls.item_close.strip():
        raise NotInferableError("expected a closing text after each call's parameters, found none (XML-like "
                                "parameters need one to know where a call ends)", code="no_call_close",
                                probe="two calls")
    field: dict[str, Any] = {"open_pattern": opener}
    field.update(_end_or_value(calls.item_close, lexer, ext))
    return {**field, "repeats": True, "content": "xml-params", "content_args": args, "transform": NAMED_TRANSFORM,
            "chatparse": ext}


def _python_calls(calls: CallFormat, lexer: Lexer) -> dict[str, Any]:
    bracketed = bool(calls.python.get("bracketed"))
    opener = calls.section_open.rstrip()
    closer = calls.section_close.lstrip()
    if bracketed:
        opener, closer = opener[:-1], closer[1:]
    ext: dict[str, Any] = {"structure": "python", "truncation": True, "extend": True}
    if opener.strip():
        field: dict[str, Any] = _delimiter(opener, lexer, "open", "open_pattern")
        field.update(_end_or_value(closer, lexer, ext))
    else:
        first = r"\[" + LOOKAHEAD_GAP if bracketed else ""
        field = {"open_pattern": f"(?={first}[A-Za-z_][\\w.\\-]{{0,64}}\\()"}
        ext["ends_with_value"] = True
    if calls.python.get("quoted_values"):
        ext["python_literals"] = True
    separator = "newline" if calls.separator == "" and not bracketed else "comma_or_newline"
    args = {"brackets": "required" if bracketed else "forbidden", "separator": separator, "repairs": True}
    return {**field, "repeats": True, "content": "python-calls", "content_args": args, "transform_each": True,
            "transform": CALL_TRANSFORM, "chatparse": ext}


def _bare_key(calls: CallFormat, lexer: Lexer) -> dict[str, Any]:
    assert calls.delimiters is not None
    opener = _section_prefix(calls, lexer) + flex(calls.item_open, lexer) + r"(?P<name>[^\s{<>]+)"
    ext: dict[str, Any] = {"structure": {"syntax": "json", "spans": [list(calls.delimiters)]}, "truncation": True}
    field: dict[str, Any] = {"open_pattern": opener}
    field.update(_end_or_value(calls.item_close, lexer, ext))
    return {**field, "repeats": True, "content": "bare-key-object",
            "content_args": {"string_delims": [list(calls.delimiters)]}, "transform": NAMED_TRANSFORM,
            "chatparse": ext}
