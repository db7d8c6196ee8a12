"""Closing a region: its value (content parser, transform, recovery or a malformed report), storing it in
the message, the implicit region after it, and the reasoning a lone close decides (``chatparse.lone_close``)."""

from __future__ import annotations

from typing import Any

import regex

from chatparse.content.registry import BadItem, Repaired
from chatparse.engine.holdback import _HoldBack
from chatparse.engine.scanner import Hit
from chatparse.engine.state import Event
from chatparse.engine.tool_typing import coerce_tool_calls
from chatparse.errors import (
    ChatparseError,
    ContentNestingError,
    ContentParseError,
    OutputError,
    excerpt,
    region_failure,
)
from chatparse.template.compile import CompiledField


def process_region(field: CompiledField, body: str, captures: dict[str, Any]) -> Any:
    """A region's value: its content parser over ``body``, then the field's transform (a ``Repaired``
    value stays wrapped around its transformed value)."""
    value = run_content_parser(field, body)
    if isinstance(value, Repaired):
        return Repaired(_transformed(field, value.value, captures), value.repairs)
    return _transformed(field, value, captures)


def _transformed(field: CompiledField, value: Any, captures: dict[str, Any]) -> Any:
    fill = field.fill
    if fill is None:
        return value
    if not field.transform_each:
        return fill({**captures, "content": value})
    if not isinstance(value, list):
        raise ContentParseError(
            f"Field '{field.name}': transform_each requires the parsed content to be a list, got "
            f"{type(value).__name__}. Use a parser that yields a list (json, python-call-list) or drop "
            "transform_each.", code="transform_each_not_list", field=field.name,
        )
    out = []
    for item in value:
        if not isinstance(item, dict):
            raise ContentParseError(
                f"Field '{field.name}': transform_each requires each list element to be a dict, got "
                f"{type(item).__name__}.", code="transform_each_not_dict", field=field.name,
            )
        out.append(fill({**captures, **item}))
    return out


def recover_region(field: CompiledField, body: str, captures: dict[str, Any], *,
                   cut_last: bool = False) -> tuple[list[Any], list[BadItem]]:
    """A list region item by item (the parser's ``recover``), each kept item transformed on its own; an
    item whose transform fails joins the bad ones with its raw text. ``cut_last``: the token limit cut the
    region, so a last item that runs to the end of the body is a cut one (its close never came)."""
    recover = field.parser.recover
    assert recover is not None
    try:
        good, bad = recover(body, field.content_args)
    except RecursionError:
        raise ContentNestingError(f"Field '{field.name}': the region nests too deeply to parse (region "
                                  f"{excerpt(body)})", field=field.name) from None
    good, bad = list(good), list(bad)
    if cut_last and good and not any(item.at_end for item in bad) \
            and body.rstrip().endswith(good[-1][1].rstrip()):
        bad.append(BadItem(good.pop()[1], "the token limit cut the text before this call's close came",
                           at_end=True))
    fill = field.fill
    if fill is None:
        return [value for value, _ in good], bad
    if not field.transform_each:
        return [fill({**captures, "content": value}) for value, _ in good], bad
    items = []
    for value, raw in good:
        try:
            if not isinstance(value, dict):
                raise ContentParseError(f"Field '{field.name}': transform_each requires each item to be a dict, "
                                        f"found {type(value).__name__}", field=field.name)
            items.append(fill({**captures, **value}))
        except OutputError as exc:
            bad.append(BadItem(raw, str(exc), code=exc.code))
    return items, bad


def run_content_parser(field: CompiledField, body: str) -> Any:
    """Run the field's parser; any failure becomes a ``ContentParseError`` naming field, parser, excerpt."""
    parser = field.parser
    try:
        return parser.parse(body, field.content_args)
    except ChatparseError:
        raise
    except RecursionError as exc:
        raise ContentNestingError(region_failure(field.name, parser.name, exc, body), field=field.name,
                                  parser=parser.name) from None
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, OverflowError, regex.error,
            TimeoutError) as exc:
        raise ContentParseError(region_failure(field.name, parser.name, exc, body), field=field.name,
                                parser=parser.name) from None


class _Closing(_HoldBack):
    """A region's value, stored; the implicit region after it; lone closes and dropped markers."""

    def _close_region(self, events: list[Event], name: str, field: CompiledField, body: str, cut: bool,
                      close_text: str, limit: bool = False) -> None:
        if cut and not limit:
            closed = self._closed_at_end(field, body)
            if closed is not None:
                body, close_text, cut = closed[0], closed[1], False
        if cut and field.ext.truncation and not self._complete(field, body, limit):
            raw = self._open_text + body
            cause = "the token limit cut the text" if limit else "the text ends"
            self._report(events, name, "truncated", raw, f"{cause} inside a '{name}' region ({excerpt(raw)})")
            return
        checked = cut and field.ext.truncation
        recover = field.parser.recover is not None and (self._on_malformed == "recover" or checked)
        try:
            if recover:
                value, problems = self._recovered_value(field, body, cut=checked, close_text=close_text,
                                                        limit=checked and limit)
            else:
                value, problems = process_region(field, body, self._captures), []
            repairs: list[dict[str, Any]] = []
            if isinstance(value, Repaired):
                raw = self._open_text + body + close_text
                repairs = [{"field": name, "code": code, "raw": raw, "note": note} for code, note in value.repairs]
                value = value.value
            # With or without tools: arguments a reader structured become plain dicts (tool_typing).
            value = coerce_tool_calls(value, self._tool_params, field.ext.python_literals)
            if recover and not value and len(problems) == 1 and problems[0]["whole"]:
                # The region's one item failed: the region failed (one event, as without recovery).
                problem = problems[0]
                self._report(events, name, problem["code"], problem["raw"], problem["error"])
                return
            if checked and not recover and self._lacks_required(value):
                # A call cut between two parameters parses, but a parameter the tool requires is missing.
                raw = self._open_text + body
                self._report(events, name, "truncated", raw, f"the text ends inside a '{name}' region before "
                             f"every required parameter was written ({excerpt(raw)})")
                return
            self._store(field, value)
        except OutputError as exc:
            if self._on_malformed == "raise":
                raise
            self._report(events, name, exc.code, self._open_text + body + close_text, str(exc))
            return
        event: Event = {"type": "region_close", "field": name, "value": value}
        if repairs:
            event["repaired"] = repairs
            self._output.setdefault("repaired", []).extend(
                {"field": r["field"], "code": r["code"], "raw": r["raw"]} for r in repairs)
        if problems:
            event["malformed"] = [{k: v for k, v in p.items() if k != "whole"} for p in problems]
            self._output.setdefault("malformed", []).extend(
                {"field": p["field"], "code": p["code"], "raw": p["raw"]} for p in problems)
        events.append(event)
        self._reset_to_implicit()

    def _closed_at_end(self, field: CompiledField, body: str) -> tuple[str, str] | None:
        """A guarded region the end of the text cut inside a span, whose body holds the region's own
        literal close followed by nothing, or by an end marker or a next-turn header, and parses up to that
        close: ``(body, close)``, and what follows the end marker is the turn's trailing text. The end of
        the turn after the close is the structure going on (a value that lost its closing tag before the
        call's close, GLM's last ``</arg_value>``), so the region closed there; None otherwise."""
        close, structure = field.close, field.ext.structure
        if not field.ext.guard or close is None or close.literals is None or structure is None or structure.syntax:
            return None  # JSON or Python strings: a cut string is a cut call
        ext = self._template.ext
        for literal in close.literals:
            at = body.find(literal)
            while at > 0:
                after = body[at + len(literal) :].lstrip()
                marker = next((m for m in ext.end if after.startswith(m)), None)
                if not after or marker is not None or any(after.startswith(h) for h in ext.next_turn):
                    try:
                        run_content_parser(field, body[:at])
                    except OutputError:
                        return None  # not a whole body before it either: the cut stays a cut
                    if after:
                        self._trailing.append(after[len(marker) :] if marker is not None else after)
                    return body[:at], literal
                at = body.find(literal, at + len(literal))
        return None

    def _complete(self, field: CompiledField, body: str, limit: bool = False) -> bool:
        """Whether a region cut by the end of the text holds a whole body: its syntax is closed (or,
        without one, its content parses). ``limit``: the token limit cut it, so a region that is one value
        (one call) is not whole, whatever its syntax says: its close never came.

        A region of several items (a list parser's) keeps its whole items, the cut one reported
        (``_recovered_value``), unless its body is one bracketed list (``[a(...), b(...)``, a JSON array):
        a call list is one unit, cut as a whole when its close bracket never came (whatever the finish
        reason: nothing but the end of the text can have stopped it) or, under ``limit``, when the
        region's close never came."""
        if not body.strip():
            return False  # cut right after the opener
        if field.parser.recover is not None:
            if not body.lstrip().startswith("["):
                return True
            return not limit and self._syntax_closed(field, body)
        if limit:
            return False
        return self._syntax_closed(field, body)

    def _syntax_closed(self, field: CompiledField, body: str) -> bool:
        """Whether the body's syntax (or, without a tracked one, its content parser) says it is whole."""
        if self._tracker is not None:  # every character of the body went through _emit_to
            if self._tracker.complete():
                return True
            # A value written without the layout the span's close expects (``v</parameter>`` on one line)
            # leaves the span open; with ``span_fallback`` a body that ends with the call's own close (the
            # ``trailer`` its content parser reads) is still a whole call when its content parses.
            args = field.content_args if field.ext.span_fallback else {}
            trailer, value_close = args.get("trailer"), args.get("value_close")
            if not trailer or not isinstance(value_close, str) or not body.rstrip().endswith(trailer) \
                    or not body.rstrip()[: -len(trailer)].rstrip().endswith(value_close):
                return False
        try:
            run_content_parser(field, body)
        except OutputError:
            return False
        return True

    def _lacks_required(self, value: Any) -> bool:
        """A tool call (``{"function": {"name", "arguments"}}``) without a parameter its tool requires."""
        fn = value.get("function") if isinstance(value, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("arguments"), dict):
            return False
        required = self._tool_required.get(fn.get("name"), ())  # type: ignore[arg-type]
        return any(key not in fn["arguments"] for key in required)

    def _recovered_value(self, field: CompiledField, body: str, *, cut: bool, close_text: str,
                         limit: bool = False) -> tuple[Any, list[dict[str, Any]]]:
        """A list region parsed item by item: the items that parse (and transform) are kept; each other
        item is reported with its raw text (``truncated`` for one the end of the text cut off) and the
        error (the region's whole text when the item is all the region holds). ``limit``: the token limit
        cut the region, so when its items are JSON or Python values (a value's closing bracket is not a
        call's close) the last one, which ends the body, is cut too; an item with a close marker of its own
        (an XML ``<invoke>…</invoke>``) is whole once that marker came."""
        structure = field.ext.structure
        syntax = structure.syntax if structure is not None else None
        items, bad = recover_region(field, body, self._captures, cut_last=limit and syntax is not None)
        problems = []
        for item in bad:
            whole = item.raw.strip() == body.strip()
            raw = self._open_text + body + close_text if whole else item.raw
            code = "truncated" if cut and item.at_end else item.code
            if self._on_malformed == "raise" and code != "truncated":
                raise ContentParseError(
                    f"Field '{field.name}': {item.error} (item {excerpt(item.raw)})", field=field.name,
                    parser=field.parser.name,
                )
            problems.append({"field": field.name, "code": code, "raw": raw, "error": item.error, "whole": whole})
        return items, problems

    def _store(self, field: CompiledField, value: Any) -> None:
        name = field.name
        if field.join is not None:
            if not isinstance(value, str):
                raise ContentParseError(
                    f"Field '{name}': 'join' requires each match to parse to a string, got "
                    f"{type(value).__name__}. Use a text parser or drop 'join'.",
                    code="join_not_string", field=name,
                )
            self._join(name, field.join, value)
        elif field.repeats:
            if field.ext.extend and isinstance(value, list):
                self._output.setdefault(name, []).extend(value)
            else:
                self._output.setdefault(name, []).append(value)
        else:
            self._output[name] = value

    def _join(self, name: str, separator: str, value: str) -> None:
        if name in self._join_parts:
            self._join_parts[name][1].append(value)
            return
        previous = self._output.get(name)
        if previous is not None and not isinstance(previous, str):
            self._output[name] = previous + separator + value  # fails as the reference does
        self._join_parts[name] = (separator, [value] if previous is None else [previous, value])
        self._output[name] = value if previous is None else previous

    def _report(self, events: list[Event], name: str, code: str, raw: str, error: str) -> None:
        """A region (or an opener) that gives no value: kept under ``malformed`` with its raw text."""
        self._output.setdefault("malformed", []).append({"field": name, "code": code, "raw": raw})
        events.append({"type": "region_malformed", "field": name, "code": code, "error": error, "raw": raw})
        self._reset_to_implicit()

    def _start_lone(self) -> None:
        """After the prompt: when it wrote nothing of the lone-close field (no block opened or closed)
        and no region is open, the output's first text is undecided. Streaming holds its events (up to
        ``limits.lone_hold`` characters) until a lone close makes it that field's, or anything else
        (another marker, an open, the end) makes it content."""
        field = self._lone_field
        if field is None or self._current != self._implicit or self._prefix_lone \
                or any(event["field"] != self._implicit for event in self.initial_events):
            return
        if self._opened and "".join(self._body).strip():
            return  # the prompt wrote part of the answer
        # Layout after the header ('<｜Assistant｜>\n') opened the content region: its events wait too.
        self._pending, self.initial_events = self.initial_events, []
        self._lone = field
        self._arm()  # no fast path while undecided

    def _settle(self, events: list[Event]) -> None:
        """The undecided text is content: the events held for it go out."""
        pending = self._pending
        if self._lone_words or pending is None:  # (past the hold: a long text, not layout)
            self._resume = False  # text after the calls that no lone close followed: the answer
        self._lone = self._pending = None
        self._pending_size = 0
        self._lone_words = False
        if pending and self._keep_events:
            events.extend(pending)

    def _dropped(self, events: list[Event], hit: Hit) -> None:
        """A stray marker was dropped. A lone close of the lone-close field while the text is undecided
        moves that text to the field; any other marker settles it as content."""
        lone = self._lone
        if lone is None:
            field = self._lone_field
            if self._in_prefix and field is not None and self._buf[hit.start : hit.end] in field.ext.lone_close:
                self._prefix_lone = True
            return
        if self._buf[hit.start : hit.end] not in lone.ext.lone_close:
            if self._lone_words or self._pending is None:  # a marker alone (a section's end) decides nothing
                self._settle(events)
            return
        pending = self._pending
        self._lone = self._pending = None
        self._pending_size = 0
        self._resume = self._lone_words = False
        if not self._opened:
            return  # nothing before the close
        body = "".join(self._body)
        name = lone.name
        self._current = name
        if pending is not None:  # held: the stream shows the block as the field's
            events.append({"type": "region_open", "field": name})
            if self._keep_events:
                events.append({"type": "region_chunk", "field": name, "text": body, "dirty": not lone.parser.streamable})
            self._close_region(events, name, lone, body, False, self._buf[hit.start : hit.end])
            return
        # Past the hold the text went out as content chunks: the content region's close says where it went.
        moved: list[Event] = []
        self._close_region(moved, name, lone, body, False, self._buf[hit.start : hit.end])
        for event in moved:
            if event["type"] in ("region_close", "region_malformed"):
                event["moved_to"] = name
                event["field"] = self._implicit
            events.append(event)

    def _reset_to_implicit(self) -> None:
        self._zw_data = -1
        self._fallback = None
        self._current = self._implicit
        self._captures = {}
        self._body = []
        self._opened = False
        self._open_text = ""
        self._tracker = None
