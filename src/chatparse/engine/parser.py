"""The streaming response parser: text in, region events out, one message at the end.

Sans-I/O. State is one open region (``_current``, its captures and body) plus the unresolved tail of
the input (``_buf`` from ``_pos``). Consumed text is dropped between feeds, so a feed costs time in
proportion to its own chunk and the held-back tail, never to what came before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from chatparse.engine.feeding import _Feeding
from chatparse.engine.finalize import _fault
from chatparse.engine.state import ON_MALFORMED, Event, OnMalformed
from chatparse.errors import (
    ChatparseError,
    InputTypeError,
)
from chatparse.limits import Limits
from chatparse.template.compile import CompiledTemplate

# What a parser derives from its template (``_attach_template``): not pickled, derived again on load.
_DERIVED = frozenset({"_watch", "_scan_orders", "_triggers", "_shared", "_memo", "_heads", "_deep_tables",
                      "_quiet_table", "_floors", "_known"})


class ResponseParser(_Feeding):
    """Parse one generation as it streams. See ``parse_response`` for the one-shot form.

    ``prefix`` (required) is the prompt sent to the model; it is cut after the template's last start
    anchor and run through the parser first, so regions the chat template pre-wrote (an opened
    ``<think>``) are known. Its events are in ``initial_events``.
    """

    def __init__(
        self,
        template: Any,
        prefix: str | None = None,
        *,
        tools: Iterable[Any] | None = None,
        on_malformed: OnMalformed = "raise",
        limits: Limits | None = None,
    ) -> None:
        super().__init__(template, prefix, tools=tools, on_malformed=on_malformed, limits=limits)
        self._attach_template()
        if not isinstance(prefix, str):
            raise InputTypeError(f"prefix must be a str, found {type(prefix).__name__}")
        if prefix:
            try:
                self._consume_prefix(prefix)
            except ChatparseError:
                raise
            except Exception as exc:
                raise _fault(exc) from exc
        self._start_lone()

    def __getstate__(self) -> dict[str, Any]:
        """A parser pickles (``copy.deepcopy``, ``multiprocessing``) with its stream state; what it derives
        from the template is derived again on load (``_attach_template``), and the template's shared
        tables are not pickled."""
        state = {k: v for k, v in self.__dict__.items() if k not in _DERIVED}
        state["_quiet"] = self._quiet is not None  # armed: the entry is looked up again on load
        state["_forming_table"] = self._forming_table is not None
        for key in ("_lone_field", "_lone"):  # compiled fields: by name (the template is pickled as its source)
            fld = state.get(key)
            state[key] = fld.name if fld is not None else None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        armed, forming = state.pop("_quiet"), state.pop("_forming_table")
        self.__dict__.update(state)
        for key in ("_lone_field", "_lone"):
            name = getattr(self, key, None)
            setattr(self, key, self._template.fields[name] if name is not None else None)
        self._known = None  # a scan answer handed within one feed (see ``_feed_forming``)
        self._attach_template()
        region = None if self._current == self._implicit else self._current
        self._quiet = self._quiet_table.get(region) if armed else None
        self._forming_table = self._memo_for(region, self._pos) if forming else None

    @property
    def template(self) -> CompiledTemplate:
        return self._template

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def current_region(self) -> str | None:
        """The field of the region open now (None when none is open)."""
        return self._current if self._opened else None

    @property
    def current_captures(self) -> dict[str, Any]:
        """Named groups captured by the open delimiter of the region open now (e.g. a tool name)."""
        return dict(self._captures)

    @property
    def held(self) -> int:
        """Characters received but neither emitted nor consumed yet (a delimiter may still be forming).
        At most ``limits.max_holdback`` plus the template's longest literal delimiter after any feed, plus
        ``limits.lone_hold`` at the start of an output that may open reasoning implicitly."""
        return len(self._buf) - self._pos + (self._pending_size if self._pending is not None else 0)


__all__ = ["ON_MALFORMED", "Event", "OnMalformed", "ResponseParser"]
