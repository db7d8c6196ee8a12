"""``ArgumentStream``: an incremental JSON scanner for streamed tool-call arguments.

A character state machine that keeps its state between chunks and never re-reads input:
linear time. It fires ``on_key_completed`` per top-level key (and, if asked,
``on_nested_key_completed`` per key of the object that is one top-level key's value), streams
one string key's decoded text through ``on_string_progress``, never raises from
``feed``/``finish`` and ends in an ``ArgumentStreamResult`` (``complete`` | ``truncated`` |
``invalid``).
"""

from __future__ import annotations

from collections.abc import Callable

from chatparse.tools.errors import ArgumentStreamError
from chatparse.tools.json_structure import _JsonStructure
from chatparse.tools.json_values import _AFTER_VALUE, _DONE, _ESCAPE, _FAILED, _START, _STRING, _WHOLE
from chatparse.tools.keyed_stream import (
    CUT_REASONS,
    END_REASONS,
    ArgumentStreamResult,
    KeyCallback,
    KeyedStream,
    ProgressCallback,
)
from chatparse.tools.near_json import MAX_DEPTH


class ArgumentStream(_JsonStructure):
    """Feed JSON argument text in any chunks; ``finish(finish_reason)`` returns the result.

    ``on_key_completed(key, value)`` fires once per top-level key, when its value and the
    following ``,`` or ``}`` arrived (or at ``finish`` for a value that visibly closed).
    ``on_string_progress(stream_key, text)`` receives the decoded pieces of that key's
    string value while it arrives; their concatenation is the final value. With
    ``nested_key`` (a key, or a tuple of alternative spellings), ``on_nested_key_completed(key, value)``
    fires likewise for each key of the object that is that top-level key's value (``{"name": …,
    "arguments": {…}}``), when that key's value and the following ``,`` or ``}`` arrived; these keys are not
    top-level keys (the result still lists ``nested_key`` once, as one argument). A callback that
    raises is not called again (nor is any other) and the result becomes ``invalid``
    (``callback_failed``).
    Raw control characters inside strings are kept, as ``json.loads(strict=False)`` does.
    """

    def __init__(
        self,
        on_key_completed: KeyCallback | None = None,
        on_string_progress: ProgressCallback | None = None,
        stream_key: str | None = None,
        *,
        max_depth: int = MAX_DEPTH,
        nested_key: str | tuple[str, ...] | None = None,
        on_nested_key_completed: KeyCallback | None = None,
    ) -> None:
        super().__init__(on_key_completed, on_string_progress, stream_key, max_depth=max_depth,
                         nested_key=nested_key, on_nested_key_completed=on_nested_key_completed)
        self._handlers: list[Callable[[str, int], int]] = [
            self._start, self._value, self._key_or_end, self._key, self._colon, self._value_or_end,
            self._after_value, self._string, self._escape, self._number, self._literal_char,
            self._done, self._failed, self._whole,
        ]

    def can_fire(self, text: str) -> bool:
        """Whether feeding ``text`` now could fire a callback. ``False`` only when it surely cannot: no
        string progress is watched, and ``text`` has no ``,`` or ``}`` (a key completes at the one after
        its value; a ``]`` fires nothing, as only ``,`` or ``}`` may follow a completed value), or, inside
        a value read whole, no ``]`` or ``}`` (its commas end nothing; a closer goes in at once, so the
        state is known when the separator after the value comes), or, inside a string, no ``"`` (nothing
        fires before it ends; a quote goes in at once, for the same reason). Such text may wait and go in
        with later text (the caller joins it): the same callbacks fire, in the same later feed, with fewer
        calls; a long string goes in once, when it ends."""
        if self.on_string_progress is not None:
            return True
        state = self._state
        if state == _WHOLE:
            return "]" in text or "}" in text
        if state == _STRING or state == _ESCAPE:
            return '"' in text
        return "," in text or "}" in text

    def feed(self, chunk: str) -> None:
        """Scan one chunk. Never raises; bad input makes the final result ``invalid``."""
        if self._result is not None:
            return  # finished: later text cannot change the result
        if not isinstance(chunk, str):
            self._fail("not_text", f"expected text chunks; found {type(chunk).__name__}", 0)
            return
        self._chunk_start = self._received
        self._received += len(chunk)
        try:
            position, end, handlers = 0, len(chunk), self._handlers
            while position < end:
                position = handlers[self._state](chunk, position)
            self._flush_progress()
        except Exception as problem:  # a scanner bug must still not escape feed
            self._fail("internal_error", f"scanner failure: {problem!r}", 0)

    def finish(self, finish_reason: str | None = "stop") -> ArgumentStreamResult:
        """End the stream (see ``KeyedStream.finish``). A container value still being read whole is
        re-read character-wise first, so what arrived of it counts as it would without that path."""
        if self._result is None and self._state == _WHOLE:
            text = "".join(self._whole_parts)
            self._whole_parts.clear()
            try:
                self._replay_whole(text)
            except Exception as problem:  # a scanner bug must still not escape finish
                self._fail("internal_error", f"scanner failure: {problem!r}", 0)
        return super().finish(finish_reason)

    def _fail(self, code: str, message: str, i: int, *, at: int | None = None) -> int:
        """Fail at ``i`` of the chunk (``at``: at that offset of the whole text instead)."""
        offset = self._chunk_start + i if at is None else at
        self._set_error(ArgumentStreamError(
            f"Invalid arguments JSON at offset {offset}: {message}.", code=code, key=self._partial_key, offset=offset
        ))
        self._state = _FAILED  # its handler swallows the rest of every chunk
        self._streaming = False
        return i

    def _closed(self) -> bool:
        return self._state == _DONE

    def _started(self) -> bool:
        return self._state != _START

    def _close_at_end(self) -> None:
        """A value whose closing quote or bracket arrived is whole even without a separator."""
        if self._state in (_AFTER_VALUE, _DONE):
            self._commit_pending()

    def _partial_text(self) -> str | None:
        in_value_string = self._state in (_STRING, _ESCAPE) and not self._is_key
        return "".join(self._parts) if in_value_string and len(self._containers) == 1 else None


__all__ = ["CUT_REASONS", "END_REASONS", "ArgumentStream", "ArgumentStreamResult", "KeyCallback", "KeyedStream",
           "ProgressCallback"]
