"""One row of a generation dataset to a message or a located error: the row rules shared by the CLI and the
Arrow functions. A row's own problems (no text, no prefix, bad tools) are errors of that row, never
silent defaults; nothing here stops a batch."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chatparse.engine.parser import OnMalformed, ResponseParser
from chatparse.errors import ChatparseError, UsageError
from chatparse.limits import Limits
from chatparse.template.compile import CompiledTemplate, load_template

OUTPUT_FIELD = "output"
PREFIX_FIELD = "prefix"
TOOLS_FIELD = "tools"
FINISH_REASON_FIELD = "finish_reason"


class RowError(ChatparseError, ValueError):
    """A row of the input cannot be parsed as it stands (no text, no prefix, tools that are no list)."""

    code = "bad_row"


@dataclass(frozen=True, slots=True)
class Outcome:
    """A row's result: the message, or the error as ``{"code", "message", **location}``."""

    message: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def error_dict(exc: ChatparseError) -> dict[str, Any]:
    """The JSON form of an error: its code, its message and its location keys."""
    return {"code": exc.code, "message": str(exc), **exc.location}


def failed(code: str, message: str, **location: Any) -> Outcome:
    return Outcome(error={"code": code, "message": message, **location})


@dataclass(frozen=True)
class RowOptions:
    """Which keys hold the text, the prompt and the tools, and what stands in for an absent one.

    ``prefix`` is used for a row without one (``None``: such a row is an error; ``""`` opts out of
    prefixes explicitly). ``tools`` is one tool list for every row; a row's own ``tools`` wins. ``limits``
    are the engine's regex time budgets and hold-back cap (``chatparse.Limits``). A row's
    ``finish_reason`` (as engines write it, in the vocabulary of ``chatparse.finish``, any case:
    ``"length"``, ``"max_tokens"``, ``"MAX_TOKENS"`` when the token limit cut the text) is passed to the
    parser: a call whose close never came in a cut row is reported ``truncated``; an unknown one is the
    row's error (``unknown_finish_reason``)."""

    output_field: str = OUTPUT_FIELD
    prefix_field: str = PREFIX_FIELD
    tools_field: str = TOOLS_FIELD
    finish_reason_field: str = FINISH_REASON_FIELD
    prefix: str | None = None
    tools: Sequence[Any] | None = None
    on_malformed: OnMalformed = "recover"
    limits: Limits | None = None

    def __post_init__(self) -> None:
        if self.prefix is not None and not isinstance(self.prefix, str):
            raise UsageError(f"prefix must be a str or None, found {type(self.prefix).__name__}", code="bad_prefix")
        if self.tools is not None and (isinstance(self.tools, str | bytes) or not isinstance(self.tools, Sequence)):
            raise UsageError(f"tools must be a list of tools, found {type(self.tools).__name__}", code="bad_tools")


class RowParser:
    """Parses rows (mappings) or column values with one template and one set of ``RowOptions``."""

    def __init__(self, template: Any, options: RowOptions | None = None) -> None:
        self.template: CompiledTemplate = load_template(template)
        self.options = options or RowOptions()

    def parse_row(self, row: Mapping[str, Any]) -> Outcome:
        """The row's message, or its error; never raises for a row's content."""
        o = self.options
        return self.parse_values(row.get(o.output_field), row.get(o.prefix_field), row.get(o.tools_field),
                                 row.get(o.finish_reason_field))

    def parse_values(self, output: Any, prefix: Any, tools: Any, finish_reason: Any = None) -> Outcome:
        o = self.options
        if not isinstance(output, str):
            return _missing_text(o.output_field, output)
        if prefix is None:
            if o.prefix is None:
                return failed(
                    "prefix_required",
                    f"Expected the prompt under '{o.prefix_field}', found none. The prompt often pre-writes part "
                    "of the answer (an opened <think>), so it is never assumed empty: add the key, name it with "
                    "--prefix-field, or pass --prefix '' (prefix=\"\") to opt out for rows without one.",
                    key=o.prefix_field,
                )
            prefix = o.prefix
        elif not isinstance(prefix, str):
            return failed(
                "bad_prefix",
                f"Expected the prompt under '{o.prefix_field}' as text (the rendered chat template), found "
                f"{_kind(prefix)}. Render the conversation with the chat template first.",
                key=o.prefix_field,
            )
        if finish_reason is not None and not isinstance(finish_reason, str):
            return failed("bad_finish_reason", f"Expected '{o.finish_reason_field}' as text such as 'stop' or "
                          f"'length', found {_kind(finish_reason)}", key=o.finish_reason_field)
        try:
            row_tools = _tools(tools, o.tools_field) if tools is not None else o.tools
        except RowError as exc:
            return Outcome(error=error_dict(exc))
        try:
            message = self._parse(output, prefix, row_tools, finish_reason)
        except ChatparseError as exc:
            return Outcome(error=error_dict(exc))
        except RecursionError:
            return failed("too_deep", "The output nests too deeply to parse")
        return Outcome(message=message)

    def _parse(self, output: str, prefix: str, tools: Any, finish_reason: str | None) -> dict[str, Any]:
        """``parse_response``, keeping the parser's reason for each malformed region as its ``error``."""
        o = self.options
        parser = ResponseParser(self.template, prefix, tools=tools, on_malformed=o.on_malformed, limits=o.limits)
        events = [*parser.initial_events, *parser.feed(output)]
        message, last = parser.finalize(finish_reason=finish_reason)
        if message.get("malformed"):
            message["malformed"] = with_errors(message["malformed"], [*events, *last])
        return message


def with_errors(malformed: list[Any], events: list[dict[str, Any]]) -> list[Any]:
    """The message's ``malformed`` entries, each with the ``error`` its event gave (matched by field, code and
    raw text, in order)."""
    reasons: dict[tuple[Any, Any, Any], list[str]] = {}
    for event in events:
        items = [event] if event.get("type") == "region_malformed" else event.get("malformed") or ()
        for item in items:
            reasons.setdefault((item.get("field"), item.get("code"), item.get("raw")), []).append(str(item.get("error")))
    out = []
    for entry in malformed:
        found = reasons.get((entry.get("field"), entry.get("code"), entry.get("raw"))) if isinstance(entry, dict) \
            else None
        out.append({**entry, "error": found.pop(0)} if found else entry)
    return out


def _missing_text(field: str, value: Any) -> Outcome:
    if value is None:
        return failed("missing_output", f"Expected the generated text under '{field}', found no such key (name "
                      "the key with --output-field / output_field=)", key=field)
    return failed("bad_output", f"Expected the generated text under '{field}' as a string, found {_kind(value)}",
                  key=field)


def _tools(value: Any, field: str) -> list[Any]:
    """A row's tools: a list, or JSON text of one (tables often store nested tool schemas as JSON)."""
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()  # a numpy array (pandas, Ray's numpy batches)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise RowError(f"Expected '{field}' as a list of tools or its JSON text, found text that is not "
                           "JSON", code="bad_tools", key=field) from None
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    raise RowError(f"Expected '{field}' as a list of tools, found {_kind(value)}", code="bad_tools", key=field)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


__all__ = ["Outcome", "RowError", "RowOptions", "RowParser", "error_dict", "failed"]
