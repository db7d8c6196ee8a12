"""Text regions to ``content`` / reasoning deltas: streamed as they come when the field's value is the
concatenated chunks, reconciled with each region's value at its close otherwise."""

from __future__ import annotations

from typing import Any

from chatparse.openai.message import CONTENT_FIELD
from chatparse.openai.state import _StreamState, _strips, _TextState, _update_streams
from chatparse.template.compile import CompiledField


class _TextRoutes(_StreamState):
    """Routes text regions' events to deltas."""

    def _route_text(self, kind: str, event: dict[str, Any], fld: CompiledField) -> None:
        name = event["field"]
        state = self._text.get(name)
        if state is None:
            state = self._text[name] = _TextState(name, fld.join, fld.parser.streamable, _strips(fld),
                                                  whole=fld.ext.strip_joined)
            _update_streams(state)
        if state.whole:
            self._route_whole_text(kind, event, state)
            return
        if kind == "region_open":
            state.started, state.held, state.region_start = False, "", len(state.sent)
        elif kind == "region_chunk":
            if not event["dirty"] and state.streams:
                self._text_chunk(name, state, event["text"])
        elif kind == "region_close":
            value = event["value"]
            text = value if isinstance(value, str) else ""
            join = fld.join if isinstance(value, str) else None
            joined = join is not None
            if joined and not text and self.parser.template.ext.end:
                # an empty block (a prompt's pre-written '<think></think>') adds nothing, as in the parser
                state.started, state.held, state.region_start = False, "", len(state.sent)
                return
            # What this region adds to the field's value: the join string and its text, or (a field
            # without join) its text replacing the value.
            expected = (join + text if join is not None and state.values else text) \
                if joined or not state.closed_once else None
            if joined:
                state.values.append(value)
            else:
                state.values = [text]
            state.closed_once = True
            _update_streams(state)
            state.started, state.held = False, ""
            if expected is not None and state.synced:
                self._reconcile_region(name, state, expected)
            else:  # a repeated field without join: the whole value against everything sent
                target = join.join(state.values) if join is not None else text
                self._reconcile_text(name, state, target)
            state.region_start = len(state.sent)

    def _route_whole_text(self, kind: str, event: dict[str, Any], state: _TextState) -> None:
        """A ``strip_joined`` field streams as one text: its pieces and joins as written, the leading
        whitespace of the whole dropped and trailing whitespace held until text follows it."""
        name, join = event["field"], state.join
        if kind == "region_open" and state.closed_once and join:
            self._text_chunk(name, state, join)
        elif kind == "region_chunk" and not event["dirty"]:
            self._text_chunk(name, state, event["text"])
        elif kind == "region_close":
            state.closed_once = True

    def _text_chunk(self, name: str, state: _TextState, text: str) -> None:
        if not state.started:
            text = text.lstrip()
            if not text:
                return
            state.started = True
            if not state.whole and state.join is not None and state.values:
                text = state.join + text
        combined = state.held + text
        kept = combined.rstrip()
        state.held = combined[len(kept):]
        self._emit_text(name, state, kept)
        if state.streams and state.streamable:  # its chunks are never dirty (the registry's contract)
            state.key = CONTENT_FIELD if name == CONTENT_FIELD else self._reasoning_key
            self._fast = state

    def _reconcile_region(self, name: str, state: _TextState, expected: str) -> None:
        """At a region's close, everything before it already matched: only its own text is compared."""
        sent = "".join(state.sent[state.region_start:])
        if expected.startswith(sent):
            self._emit_text(name, state, expected[len(sent):])
        else:
            state.synced = False
            if name not in self.mismatches:
                self.mismatches.append(name)

    def _reconcile_text(self, name: str, state: _TextState, target: str) -> None:
        sent = "".join(state.sent)
        state.sent = [sent] if sent else []
        state.region_start = len(state.sent)
        if target.startswith(sent):
            self._emit_text(name, state, target[len(sent):])
            state.synced = True
        else:
            state.synced = False
            if name not in self.mismatches:
                self.mismatches.append(name)

    def _emit_text(self, name: str, state: _TextState, text: str) -> None:
        if not text:
            return
        state.sent.append(text)
        self._delta({CONTENT_FIELD if name == CONTENT_FIELD else self.reasoning_key: text})
