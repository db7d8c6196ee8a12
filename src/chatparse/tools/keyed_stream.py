"""What every argument stream shares (JSON and XML): callbacks per completed key, string progress, the
result at ``finish`` by ``finish_reason`` (``ArgumentStreamResult``), and the ``KeyedStream`` base."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from chatparse.errors import ChatparseError
from chatparse.finish import (
    INTERRUPTED_REASONS,
    LIMIT_REASONS,
    STOP_REASONS,
    UnknownFinishReasonError,
    finish_kind,
)
from chatparse.tools.errors import ArgumentStreamError

Status = Literal["complete", "truncated", "invalid"]
KeyCallback = Callable[[str, Any], object]
ProgressCallback = Callable[[str, str], object]
# The shared vocabulary (``chatparse.finish``): a stream the token limit cut, or that a filter, abort or
# error stopped, ends ``truncated``; one whose turn ended is ``complete`` only when its object closed.
END_REASONS = STOP_REASONS
CUT_REASONS = LIMIT_REASONS | INTERRUPTED_REASONS


@dataclass(frozen=True)
class ArgumentStreamResult:
    """What a finished stream holds: for ``truncated``/``invalid``, only keys whose values closed.

    ``partial_key`` is the top-level key whose value was still arriving, ``partial_text`` the
    decoded text that arrived for it when that value is a string (provisional, never final).
    """

    status: Status
    arguments: dict[str, Any]
    completed_keys: tuple[str, ...]
    partial_key: str | None
    received_chars: int
    error: ChatparseError | None = None
    finish_reason: str | None = None
    partial_text: str | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "complete"


class KeyedStream:
    """What every per-key argument stream shares: callbacks, completion bookkeeping, ``finish``."""

    def __init__(
        self,
        on_key_completed: KeyCallback | None,
        on_string_progress: ProgressCallback | None,
        stream_key: str | None,
    ) -> None:
        self.on_key_completed = on_key_completed
        self.on_string_progress = on_string_progress
        self.stream_key = stream_key
        self._received = 0
        self._arguments: dict[str, Any] = {}  # top-level values, filled as they complete
        self._completed: list[str] = []
        self._partial_key: str | None = None
        self._error: ChatparseError | None = None
        self._callback_error: ArgumentStreamError | None = None
        self._result: ArgumentStreamResult | None = None

    @property
    def received_chars(self) -> int:
        return self._received

    @property
    def completed_keys(self) -> tuple[str, ...]:
        return tuple(self._completed)

    def finish(self, finish_reason: str | None = "stop") -> ArgumentStreamResult:
        """End the stream. A cut (``length``) gives ``truncated``; never raises; idempotent."""
        if self._result is None:
            try:
                self._result = self._final_result(finish_reason)
            except Exception as problem:
                self._set_error(ArgumentStreamError(f"Scanner failure: {problem!r}", code="internal_error"))
                self._result = self._make_result("invalid", self._error, finish_reason)
        return self._result

    # --- hooks for the concrete scanners ----------------------------------------------

    def _closed(self) -> bool:
        """Whether the argument text ended cleanly (nothing left open)."""
        raise NotImplementedError

    def _started(self) -> bool:
        """Whether any significant text arrived."""
        raise NotImplementedError

    def _close_at_end(self) -> None:
        """Commit whatever is whole at the end of input (called only when no error occurred)."""

    def _partial_text(self) -> str | None:
        return None

    # --- shared bookkeeping -----------------------------------------------------------

    def _complete_key(self, key: str, value: Any) -> None:
        self._arguments[key] = value
        self._completed.append(key)
        self._partial_key = None
        if self.on_key_completed is not None:
            self._call(self.on_key_completed, key, value)

    def _progress(self, piece: str) -> None:
        if piece and self.on_string_progress is not None and self.stream_key is not None:
            self._call(self.on_string_progress, self.stream_key, piece)

    def _call(self, callback: Callable[[str, Any], object], key: str, value: Any) -> None:
        if self._callback_error is not None:
            return  # the consumer is in an unknown state: tell it nothing more
        try:
            callback(key, value)
        except Exception as problem:
            error = ArgumentStreamError(
                f"The callback for key {key!r} raised {type(problem).__name__}: {problem}",
                code="callback_failed", key=key, offset=self._received, exception=problem,
            )
            error.__cause__ = problem
            self._callback_error = error

    def _set_error(self, error: ChatparseError) -> None:
        if self._error is None:
            self._error = error

    def _final_result(self, finish_reason: str | None) -> ArgumentStreamResult:
        if self._error is None:
            self._close_at_end()
        if self._error is not None:
            return self._make_result("invalid", self._error, finish_reason)
        if self._callback_error is not None:
            return self._make_result("invalid", self._callback_error, finish_reason)
        try:
            kind = finish_kind(finish_reason)
        except UnknownFinishReasonError as error:
            return self._make_result("invalid", error, finish_reason)
        if kind in ("limit", "interrupted"):
            return self._make_result("truncated", self._truncation_error(str(finish_reason)), finish_reason)
        if self._closed():
            return self._make_result("complete", None, finish_reason)
        return self._make_result("invalid", self._incomplete_error(), finish_reason)

    def _where(self) -> str:
        return f" inside the value of {self._partial_key!r}" if self._partial_key else ""

    def _truncation_error(self, finish_reason: str) -> ArgumentStreamError:
        return ArgumentStreamError(
            f"The output was cut (finish_reason={finish_reason!r}){self._where()} after {self._received} "
            f"characters; completed keys: {self._completed}.",
            code="truncated_arguments", key=self._partial_key, offset=self._received,
        )

    def _incomplete_error(self) -> ArgumentStreamError:
        if not self._started():
            return ArgumentStreamError(
                "Expected an arguments object; found no text.", code="empty_arguments", offset=self._received
            )
        return ArgumentStreamError(
            f"The arguments ended before they were closed{self._where()} (offset {self._received}).",
            code="incomplete_arguments", key=self._partial_key, offset=self._received,
        )

    def _make_result(self, status: Status, error: ChatparseError | None, reason: str | None) -> ArgumentStreamResult:
        return ArgumentStreamResult(
            status=status,
            arguments={key: self._arguments[key] for key in self._completed},
            completed_keys=tuple(self._completed),
            partial_key=None if status == "complete" else self._partial_key,
            received_chars=self._received,
            error=error,
            finish_reason=reason,
            partial_text=None if status == "complete" else self._partial_text(),
        )
