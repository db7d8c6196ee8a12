"""``AnswerStream``: a provisional, display-only view of a streaming answer; final only via ``finish()``.

The view shows the status once its string has closed and names a known status, and the answer text
so far. It is a different type from ``GroundedAnswer`` on purpose: nothing with side effects may
start from it. The status is final only when ``check_answer`` passes on the whole text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from chatparse.answers.check import AnswerCheck, check_answer, check_evidence
from chatparse.answers.model import MAX_RAW_BYTES, STATUSES
from chatparse.errors import InputTypeError, UsageError
from chatparse.strict_json import JSON_ESCAPES

_HEX: Final = frozenset("0123456789abcdefABCDEF")
_TRACKED: Final = ("status", "answer")


@dataclass(frozen=True)
class ProvisionalView:
    """What may be displayed while streaming. ``provisional`` is always True: do not act on it."""

    status: str | None
    answer_text: str
    provisional: Literal[True] = True


class _TopLevelScanner:
    """Incremental scan of the top-level object's ``status`` and ``answer`` string values.

    Each character is looked at once; malformed input just yields less, the checker decides later.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escape: str | None = None
        self.high_surrogate: int | None = None
        self.expect: Literal["key", "value"] | None = None
        self.role: Literal["key", "status", "answer"] | None = None
        self.key: list[str] = []
        self.current_key: str | None = None
        self.values: dict[str, list[str]] = {name: [] for name in _TRACKED}
        self.status_closed = False

    def feed(self, chunk: str) -> None:
        for char in chunk:
            if self.in_string:
                self._string_char(char)
            else:
                self._structure_char(char)

    def _structure_char(self, char: str) -> None:
        top = self.depth == 1
        if char == '"':
            self._open_string(top)
        elif char in "{[":
            if top and self.expect == "value":
                self.expect = None
            self.depth += 1
            if self.depth == 1:
                self.expect = "key"
        elif char in "}]":
            self.depth -= 1
        elif top and char == ":":
            self.expect = "value"
        elif top and char == ",":
            self.expect = "key"
        elif top and self.expect == "value" and char not in " \t\n\r":
            self.expect = None  # a number, true/false/null: not a tracked string

    def _open_string(self, top: bool) -> None:
        self.in_string = True
        self.role = None
        if top and self.expect == "key":
            self.role, self.key = "key", []
        elif top and self.expect == "value" and self.current_key in _TRACKED:
            self.role = "status" if self.current_key == "status" else "answer"
            self.values[self.role] = []
            if self.role == "status":
                self.status_closed = False
        self.expect = None

    def _string_char(self, char: str) -> None:
        if self.escape is not None:
            self._escape_char(char)
        elif char == "\\":
            self.escape = ""
        elif char == '"':
            self._close_string()
        else:
            self._emit(char)

    def _close_string(self) -> None:
        self.in_string = False
        self.high_surrogate = None
        if self.role == "key":
            self.current_key = "".join(self.key)
        elif self.role == "status":
            self.status_closed = True
        self.role = None

    def _escape_char(self, char: str) -> None:
        pending = self.escape or ""
        if pending == "" and char != "u":
            self.escape = None
            self._emit(JSON_ESCAPES.get(char, ""))
            return
        if pending and char not in _HEX:
            self.escape = None  # malformed escape: shown as nothing; check_answer rejects it later
            return
        pending += char
        if len(pending) < 5:
            self.escape = pending
            return
        self.escape = None
        self._code_unit(int(pending[1:], 16))

    def _code_unit(self, unit: int) -> None:
        if 0xD800 <= unit <= 0xDBFF:
            self.high_surrogate = unit
        elif 0xDC00 <= unit <= 0xDFFF and self.high_surrogate is not None:
            self._emit(chr(0x10000 + ((self.high_surrogate - 0xD800) << 10) + (unit - 0xDC00)))
        elif not 0xD800 <= unit <= 0xDFFF:
            self._emit(chr(unit))

    def _emit(self, text: str) -> None:
        self.high_surrogate = None if text else self.high_surrogate
        if self.role == "key":
            self.key.append(text)
        elif self.role is not None:
            self.values[self.role].append(text)

    def view(self) -> ProvisionalView:
        status = self._joined("status") if self.status_closed else None
        return ProvisionalView(status=status if status in STATUSES else None, answer_text=self._joined("answer"))

    def _joined(self, role: str) -> str:
        """The value so far, its pieces joined into one (so a view after each feed copies the text once
        instead of re-joining every character again)."""
        pieces = self.values[role]
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
        return pieces[0] if pieces else ""


class AnswerStream:
    """Feed JSON text chunks; read ``view`` for display; call ``finish()`` for the checked result."""

    def __init__(self, evidence: Mapping[str, str]) -> None:
        check_evidence(evidence, "AnswerStream()")
        self._evidence = dict(evidence)
        self._chunks: list[str] = []
        self._scanner = _TopLevelScanner()
        self._scanned = 0  # characters the scanner has seen
        self._result: AnswerCheck | None = None

    def feed(self, chunk: str) -> ProvisionalView:
        if self._result is not None:
            raise UsageError(
                "expected feed() before finish(), found the stream already finished", code="stream_finished"
            )
        if not isinstance(chunk, str):
            raise InputTypeError(f"AnswerStream.feed() expected a str chunk, found {type(chunk).__name__}. "
                                 "Decode bytes before feeding them.", found=type(chunk).__name__)
        self._chunks.append(chunk)
        # Past MAX_RAW_BYTES characters the output is too large whatever follows: the view stops there, so
        # a runaway generation costs each feed a bounded copy of the text.
        room = MAX_RAW_BYTES - self._scanned
        if room > 0:
            self._scanner.feed(chunk[:room])
            self._scanned += min(room, len(chunk))
        return self._scanner.view()

    @property
    def view(self) -> ProvisionalView:
        return self._scanner.view()

    @property
    def text(self) -> str:
        return "".join(self._chunks)

    def finish(self) -> AnswerCheck:
        """Run ``check_answer`` on the whole text; only its ``answer`` is final."""
        if self._result is None:
            self._result = check_answer(self.text, self._evidence)
        return self._result


__all__ = ["AnswerStream", "ProvisionalView"]
