"""``XMLArgumentStream``: per-parameter events for Qwen3-Coder-style XML tool calls.

Reads ``<function=NAME>`` and ``<parameter=KEY>raw text</parameter>`` incrementally (a
held-back tail of at most one closing tag, so linear), types each value with the tool's
schema when given, and ends in the same ``ArgumentStreamResult`` as ``ArgumentStream``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import regex

from chatparse.errors import InputTypeError
from chatparse.tools.coerce import coerce_value, required_keys
from chatparse.tools.errors import (
    ArgumentStreamError,
    ToolArgumentError,
    ToolDefinitionError,
    combine_argument_errors,
)
from chatparse.tools.jsonvalue import format_path
from chatparse.tools.stream import KeyCallback, KeyedStream, ProgressCallback

CLOSE_PARAMETER = "</parameter>"
MAX_TAG_CHARS = 512
_OPEN_TAG = re.compile(r"<(function|parameter)=([^<>\n]+)>\Z")
# The tags each part of a call may hold ("function", "parameter": their opening tags).
_BEFORE = frozenset({"<tool_call>", "</tool_call>", "function", "parameter", "</function>"})
_BETWEEN = frozenset({"parameter", "</function>"})
_AFTER_FUNCTION = frozenset({"</tool_call>"})
# A value ends at the first '</parameter>' the call's structure goes on after (the engine's xml-params and
# the qwen3_coder span rule): whitespace, then the next parameter, the call's close or the end of the
# turn; at the end of the text a '</parameter>' followed only by whitespace closes too. Any other
# '</parameter>' or '<parameter=' text is data of the value.
_PARAMETER_PREFIX = "<parameter="
_FOLLOW = regex.compile(r"\s{0,256}(?:<parameter=|</function>|</tool_call>|<\|im_end\|>|<\|endoftext\|>"
                        r"|<\|im_start\|>)")
_TRAILING_WS = regex.compile(r"\s{0,256}\Z")
# A parameter opener at the start of a line inside a value with no close text: a dropped close.
_LINE_OPENER = re.compile(rf"\n{_PARAMETER_PREFIX}([^>\n]{{1,{MAX_TAG_CHARS - len(_PARAMETER_PREFIX) - 1}}})>")
_LAYOUT_END = re.compile(r"\n[ \t]*\Z")
_WS = re.compile(r"\s*")
_OUTSIDE, _TAG, _VALUE, _FAILED = range(4)


class XMLArgumentStream(KeyedStream):
    """Feed the text of one XML tool call in any chunks; ``finish`` returns the result.

    One leading and one trailing newline of each value are dropped (the format's own
    layout). With ``parameters_schema`` each value is typed by ``coerce_value`` (``"5"`` for
    an integer becomes ``5``; a string parameter stays raw text), unknown parameters are
    rejected, and at a clean end missing required parameters make the result ``invalid``.
    """

    def __init__(
        self,
        on_key_completed: KeyCallback | None = None,
        on_string_progress: ProgressCallback | None = None,
        stream_key: str | None = None,
        *,
        parameters_schema: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(on_key_completed, on_string_progress, stream_key)
        if parameters_schema is not None and not isinstance(parameters_schema, Mapping):
            raise InputTypeError(f"XMLArgumentStream expected parameters_schema as a JSON Schema object (a dict), "
                                 f"found {type(parameters_schema).__name__}. Pass the tool's 'parameters'.")
        self.parameters_schema = parameters_schema
        self.function_name: str | None = None
        self._state = _OUTSIDE
        self._tag = ""
        self._held = ""  # value text that may still turn out to be "\n</parameter>"
        self._parts: list[str] = []
        self._value_started = False
        self._issues: list[ToolArgumentError] = []
        self._seen_text = False
        self._function_closed = False  # parameters after </function> belong to no call
        self._value_text = False  # the open value holds '</parameter>' text (data): its openers are data too
        self._params_seen = False

    def feed(self, chunk: str) -> None:
        """Scan one chunk. Never raises; bad input makes the final result ``invalid``."""
        if self._result is not None:
            return
        if not isinstance(chunk, str):
            self._fail("not_text", f"expected text chunks; found {type(chunk).__name__}")
            return
        self._received += len(chunk)
        try:
            position = 0
            while position < len(chunk) and self._state != _FAILED:
                position = self._step(chunk, position)
        except Exception as problem:  # a scanner bug must still not escape feed
            self._fail("internal_error", f"scanner failure: {problem!r}")

    def _step(self, chunk: str, i: int) -> int:
        if self._state == _OUTSIDE:
            return self._outside(chunk, i)
        if self._state == _TAG:
            return self._in_tag(chunk, i)
        return self._in_value(chunk, i)

    def _outside(self, chunk: str, i: int) -> int:
        i = _WS.match(chunk, i).end()  # type: ignore[union-attr]
        if i == len(chunk):
            return i
        if chunk[i] != "<":
            self._fail("unexpected_text", f"expected a <parameter=...> tag; found {chunk[i]!r}")
            return len(chunk)
        self._seen_text = True
        self._tag = ""
        self._state = _TAG
        return i

    def _in_tag(self, chunk: str, i: int) -> int:
        end = chunk.find(">", i)
        stop = len(chunk) if end < 0 else end + 1
        self._tag += chunk[i:stop]
        if len(self._tag) > MAX_TAG_CHARS:
            self._fail("unexpected_text", f"expected a tag of at most {MAX_TAG_CHARS} characters")
        elif end >= 0:
            self._read_tag(self._tag)
        return stop

    def _read_tag(self, tag: str) -> None:
        """The layout the engine's xml-params reads: ``<tool_call>`` and ``<function=NAME>`` before the
        parameters, nothing between them, ``</function>`` and ``</tool_call>`` after them. Any other tag is
        ``unexpected_text`` (where the engine reads it into the value before, nothing more is announced)."""
        self._state = _OUTSIDE
        match = _OPEN_TAG.match(tag)
        kind = match.group(1) if match is not None else tag
        allowed = _AFTER_FUNCTION if self._function_closed else _BETWEEN if self._params_seen else _BEFORE
        if kind not in allowed or (kind == "function" and self.function_name is not None):
            self._fail("unexpected_text", f"expected {' or '.join(sorted(allowed))}; found {tag!r}")
        elif kind == "</function>":
            self._function_closed = True
        elif kind == "function":
            self.function_name = match.group(2).strip()  # type: ignore[union-attr]
        elif kind == "parameter":
            self._begin_value(match.group(2).strip())  # type: ignore[union-attr]

    def _begin_value(self, key: str) -> None:
        if key in self._arguments or key in self._issue_keys():
            self._fail("duplicate_key", f"found the parameter {key!r} twice")
            return
        self._params_seen = True
        self._partial_key = key
        self._held = ""
        self._parts = []
        self._value_started = False
        self._state = _VALUE

    def _in_value(self, chunk: str, i: int) -> int:
        held = len(self._held)
        text = self._held + chunk[i:]
        close = text.find(CLOSE_PARAMETER)
        while close >= 0:
            m = _FOLLOW.match(text, close + len(CLOSE_PARAMETER), partial=True)
            if m is not None and not m.partial:  # the structure goes on after it: the value's close
                self._append(_LAYOUT_END.sub("", text[:close], count=1))
                self._end_value()
                end = close + len(CLOSE_PARAMETER)
                if end >= held:
                    return i + end - held
                leftover, at = text[end:held], 0  # held text after the close (the lookahead): read it now
                while at < len(leftover) and self._state != _FAILED:
                    at = self._step(leftover, at)
                return i
            if m is not None:  # undecided until more text comes: hold from the layout before the close on
                layout = _LAYOUT_END.search(text, 0, close)
                start = layout.start() if layout is not None else close
                self._append(text[:start])
                self._held = text[start:]
                return len(chunk)
            self._value_text = True  # close text the structure does not go on after: data
            close = text.find(CLOSE_PARAMETER, close + 1)
        keep = _unsafe_tail(text)
        self._held = text[len(text) - keep :]
        self._append(text[: len(text) - keep])
        return len(chunk)

    def _append(self, piece: str) -> None:
        if not self._value_started and piece:
            self._value_started = True
            piece = piece[1:] if piece.startswith("\n") else piece
        if piece:
            self._parts.append(piece)
            if self._partial_key == self.stream_key:
                self._progress(piece)

    def _end_value(self) -> None:
        raw = "".join(self._parts)
        self._held = ""
        self._state = _OUTSIDE
        pieces = [(self._partial_key or "", raw)]
        if not self._value_text and "\n<parameter=" in raw:  # closes dropped before openers on their own line
            pieces, start = [], 0
            for m in _LINE_OPENER.finditer(raw):
                pieces.append((self._partial_key or "", _LAYOUT_END.sub("", raw[start : m.start()], count=1)))
                self._partial_key, start = m.group(1).strip(), m.end() + (raw[m.end() : m.end() + 1] == "\n")
            pieces.append((self._partial_key or "", raw[start:]))
        self._value_text = False
        for key, text in pieces:
            if key in self._arguments or key in self._issue_keys():
                self._fail("duplicate_key", f"found the parameter {key!r} twice")
                return
            try:
                value, issues = self._typed(key, text)
            except ToolDefinitionError as problem:  # the schema cannot type the value: the result names it
                self._set_error(problem)
                self._state = _FAILED
                return
            if issues:
                self._issues.extend(issues)
                self._partial_key = None
                continue
            self._complete_key(key, value)

    def _typed(self, key: str, raw: str) -> tuple[Any, list[ToolArgumentError]]:
        schema = self.parameters_schema
        if schema is None:
            return raw, []
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or key not in properties:
            known = list(properties) if isinstance(properties, Mapping) else []
            where = format_path((key,))
            message = f"{where}: unknown argument {key!r}; known arguments: {', '.join(map(repr, known))}."
            return raw, [ToolArgumentError(message, code="unknown_argument", field=key, path=where, known=known)]
        return coerce_value(raw, properties[key], path=(key,), root=schema)

    def _issue_keys(self) -> set[str]:
        return {issue.field for issue in self._issues if issue.field}

    def _fail(self, code: str, message: str) -> None:
        self._set_error(ArgumentStreamError(
            f"Invalid XML tool call at offset {self._received}: {message}.", code=code,
            key=self._partial_key, offset=self._received,
        ))
        self._state = _FAILED

    def _closed(self) -> bool:
        return self._state == _OUTSIDE and self._seen_text

    def _started(self) -> bool:
        return self._seen_text

    def _close_at_end(self) -> None:
        close = self._held.find(CLOSE_PARAMETER) if self._state == _VALUE else -1
        if close >= 0 and not self._held[:close].strip(" \t\n") \
                and _TRAILING_WS.match(self._held, close + len(CLOSE_PARAMETER)) is not None:
            self._end_value()  # a close followed only by whitespace where the text ends
        if self._state == _OUTSIDE:
            self._check_required()
        if self._issues:
            self._set_error(combine_argument_errors(self._issues, self.function_name))

    def _check_required(self) -> None:
        required = required_keys(self.parameters_schema or {})
        for key in required:
            if key not in self._arguments and key not in self._issue_keys():
                listed = ", ".join(repr(k) for k in required)
                where = format_path((key,))
                self._issues.append(ToolArgumentError(
                    f"{where}: missing required argument {key!r} (required: {listed}).",
                    code="missing_argument", field=key, path=where, required=list(required),
                ))

    def _partial_text(self) -> str | None:
        return "".join(self._parts) if self._state == _VALUE else None


def _unsafe_tail(text: str) -> int:
    """How many trailing characters may still be part of ``"</parameter>"`` or of the layout before it
    (a newline and indentation, at most ``MAX_TAG_CHARS``)."""
    keep = 0
    for size in range(min(len(CLOSE_PARAMETER) - 1, len(text)), 0, -1):
        if text.endswith(CLOSE_PARAMETER[:size]):
            keep = size
            break
    # A newline and the indentation after it, right before a close, are layout, not value.
    at = len(text) - keep
    lead = at
    while lead > 0 and at - lead < MAX_TAG_CHARS and text[lead - 1] in " \t":
        lead -= 1
    if lead > 0 and text[lead - 1] == "\n":
        keep = len(text) - lead + 1
    return keep


__all__ = ["XMLArgumentStream"]
