"""The probe conversations: sentinel texts, the tools the probes declare, and assistant messages that vary
one thing at a time, in the forms chat templates expect (arguments as a dict or a JSON string, call ids
that some templates render instead of the name, reasoning as a field or as content blocks)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

# Sentinels: short, unique, plain ASCII words inside ordinary sentences (templates trim and escape text).
SYSTEM = "You are a careful assistant. Sys7kq."
USER = "What is the weather in Seoul for two days? Usr7kq"
USER_2 = "Thanks. Now the time, please. Usr8kq"
SYSTEM_2 = "Answer briefly from now on. Sys8kq."
CONTENT = "It is sunny in Cnt7kq."
REASONING = "The user wants the weather Rsn7kq."
TOOL_RESULT = "Res7kq: 21 degrees and sunny"


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


TOOLS: list[dict[str, Any]] = [
    _tool("get_weather", "Get the weather forecast for a city.",
          {"city": {"type": "string", "description": "City name"},
           "days": {"type": "integer", "description": "Number of days"}}, ["city"]),
    _tool("write_file", "Write text to a file.",
          {"path": {"type": "string", "description": "File path"},
           "content": {"type": "string", "description": "Text to write"}}, ["path", "content"]),
    _tool("get_time", "Get the current time.", {}, []),
    _tool("create_event", "Create a calendar event.",
          {"title": {"type": "string", "description": "Event title"},
           "attendees": {"type": "array", "items": {"type": "string"}, "description": "Attendee names"},
           "location": {"type": "object", "description": "Where it takes place"},
           "all_day": {"type": "boolean", "description": "Whether it lasts all day"},
           "priority": {"type": "number", "description": "Priority from 0 to 5"},
           "reminder": {"type": "integer", "nullable": True, "description": "Minutes before, or null"}}, ["title"]),
    _tool("search_notes", "Search the notes.",
          {"query": {"type": "string", "description": "What to look for"},
           "filters": {"type": "object", "description": "Field filters"},
           "limit": {"type": "integer", "description": "At most this many"}}, ["query"]),
]
TOOL_NAMES = tuple(t["function"]["name"] for t in TOOLS)


@dataclass(frozen=True)
class Call:
    name: str
    arguments: Mapping[str, Any]


CALL_A = Call("get_weather", {"city": "Seoul", "days": 2})
CALL_B = Call("write_file", {"path": "notes/a.txt", "content": "first line"})
CALL_NONE = Call("get_time", {})
CALL_TYPED = Call("create_event", {"title": "Sync", "attendees": ["ann", "bo"],
                                   "location": {"room": 5, "floor": {"level": 2}}, "all_day": False,
                                   "priority": 2.5, "reminder": None})

ID_STYLES = ("functions", "nine", "plain")


def call_id(style: str, name: str, index: int) -> str:
    """A tool-call id: ``functions.NAME:IDX`` (Kimi's convention, rendered by some templates instead of the
    name), nine alphanumerics (Mistral templates require them) or ``call_IDX``."""
    if style == "functions":
        return f"functions.{name}:{index}"
    if style == "nine":
        return f"call{index:05d}"
    return f"call_{index}"


@dataclass(frozen=True)
class Form:
    """How the probes write what a template reads: ``arguments`` ``"dict"`` or ``"json"`` (a JSON string),
    ``ids`` (an ``ID_STYLES`` entry), ``empty`` (the content of a message with calls only: ``""`` or None)
    and ``reasoning`` (``"field"``: ``reasoning_content`` and ``reasoning``; ``"blocks"``: content blocks)."""

    arguments: str = "dict"
    ids: str = "functions"
    empty: str | None = ""
    reasoning: str = "field"

    def label(self) -> str:
        return (f"arguments as {'a dict' if self.arguments == 'dict' else 'a JSON string'}, ids "
                f"{call_id(self.ids, 'NAME', 0)!r}, content {self.empty!r} beside calls, reasoning "
                f"{'as reasoning_content' if self.reasoning == 'field' else 'as thinking content blocks'}")


FORMS = tuple(Form(arguments=a, ids=i, empty=e) for a in ("dict", "json") for e in ("", None) for i in ID_STYLES)


def tool_call(call: Call, index: int, form: Form) -> dict[str, Any]:
    arguments: Any = copy.deepcopy(dict(call.arguments))
    if form.arguments == "json":
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id(form.ids, call.name, index), "type": "function",
            "function": {"name": call.name, "arguments": arguments}}


def assistant(form: Form, *, content: str | None = None, reasoning: str | None = None,
              calls: Sequence[Call] = ()) -> dict[str, Any]:
    """An assistant message as a chat template reads it."""
    message: dict[str, Any] = {"role": "assistant"}
    text = content if content is not None else (form.empty if calls else "")
    if reasoning is not None and form.reasoning == "blocks":
        blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": reasoning}]
        if text:
            blocks.append({"type": "text", "text": text})
        message["content"] = blocks
    else:
        message["content"] = text
        if reasoning is not None:
            message["reasoning_content"] = reasoning
            message["reasoning"] = reasoning
    if calls:
        message["tool_calls"] = [tool_call(call, i, form) for i, call in enumerate(calls)]
    return message


def tool_result(form: Form, call: Call, index: int = 0, content: str = TOOL_RESULT) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id(form.ids, call.name, index), "name": call.name,
            "content": content}


def base(with_system: bool) -> list[dict[str, Any]]:
    """The conversation every probe starts from."""
    user = {"role": "user", "content": USER}
    return [{"role": "system", "content": SYSTEM}, user] if with_system else [user]


def with_form(form: Form, **changes: Any) -> Form:
    return replace(form, **changes)
