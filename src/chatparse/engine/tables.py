"""What a parser derives from its template, once: the delimiters each state watches (fresh scanners),
the shared memo of scan answers, the scan floors and the quiet fast path's triggers (shared by every parser
of the template, in ``CompiledTemplate.engine_tables``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatparse.engine.scanner import DelimiterScanner
from chatparse.engine.state import _QuietEntry, _State
from chatparse.template.compile import CompiledField

# Delimiter kinds: a region's open, a region's close, the end of the turn (``chatparse.end``), a stray
# marker dropped where no region is open (``chatparse.drop``), a next turn's header (``chatparse.next_turn``).
_OPEN, _CLOSE, _END, _DROP, _NEXT = 0, 1, 2, 3, 4
_Watch = tuple[int, CompiledField | None, DelimiterScanner]
# (trigger pattern, its one or two characters or None, lead-run test or None)
_Floor = tuple[Any, tuple[str, ...] | None, Callable[[str], bool] | None]


class _ScanMemo:
    """The remembered scan answers of one template (see ``_scan_delimiters``), shared by its parsers.
    Per (state, context length, whether the context reaches the buffer start): text from the context on
    -> answer. ``heads``: literal delimiters at the first position a delimiter can start, whatever follows
    them (see ``_head_decides``): per the same key, head text -> (kind, field, groups), and the head
    lengths. ``size`` counts the answers stored since the last ``clear`` (bounded by ``_MEMO_SIZE``).

    Parsers in other threads may read and add at the same time: every answer stored is a correct one,
    so all a race can do is lose an answer (it is computed again). ``clear`` empties every table in place
    (parsers keep the tables they hold, and these stay bounded)."""

    __slots__ = ("heads", "size", "tables")

    def __init__(self) -> None:
        self.tables: dict[tuple[str | None, int, bool], dict[str, Any]] = {}
        self.heads: dict[tuple[str | None, int, bool], tuple[dict[str, Any], list[int]]] = {}
        self.size = 0

    def clear(self) -> None:
        for table in list(self.tables.values()):
            table.clear()
        self.heads.clear()
        self.size = 0


def _literal_first(watch: list[_Watch]) -> list[int]:
    """The positions of a watch list, literal delimiters first (they answer without a regex)."""
    return [i for i, (_, _, scanner) in enumerate(watch) if scanner.delim.literals is not None] + \
        [i for i, (_, _, scanner) in enumerate(watch) if scanner.delim.literals is None]


def _union_test(tests: list[Callable[[str], bool]]) -> Callable[[str], bool] | None:
    """One membership test for several character classes (one set lookup when they are sets)."""
    if len(tests) <= 1:
        return tests[0] if tests else None
    sets = [getattr(test, "__self__", None) for test in tests]
    if all(isinstance(x, frozenset) for x in sets):
        return frozenset().union(*sets).__contains__  # type: ignore[arg-type]
    return lambda c: any(test(c) for test in tests)


class _Tables(_State):
    """Derives the per-template tables (``_attach_template``, again after unpickling)."""

    def _attach_template(self) -> None:
        """What the parser derives from its template: the watch lists (fresh scanners: they only remember
        where a delimiter cannot occur) and the tables shared by every parser of the template."""
        self._watch = self._build_watchlists()
        # Per watch list: the order scanners are asked in when a forming delimiter can end the scan: those
        # that most recently found one first, then literal ones (they answer cheaply).
        self._scan_orders = {id(watch): _literal_first(watch) for watch in self._watch.values()}
        self._triggers = self._template.triggers
        # Remembered scan answers (see ``_scan_delimiters``), shared by every parser of the template: an
        # answer depends only on the template's delimiters, the state and the text (never on the limits,
        # the tools or the stream), so a server's later streams find the headers its first one saw.
        # Parsers in other threads may attach at once: each table is stored once (``setdefault``), and
        # every parser uses the one stored first.
        tables = self._template.engine_tables
        shared = tables.get("memo")
        if shared is None:
            shared = tables.setdefault("memo", _ScanMemo())
        self._shared: _ScanMemo = shared
        self._memo: dict[tuple[str | None, int, bool], dict[str, Any]] = shared.tables
        self._heads: dict[tuple[str | None, int, bool], tuple[dict[str, Any], list[int]]] = shared.heads
        self._deep_tables: dict[str | None, dict[str, Any]] = {}  # per state, the table ``_memo_for`` gives most
        # The quiet fast path (see ``feed``) and the scan floors, built once per template.
        fast = tables.get("fast")
        if fast is None:
            fast = tables.setdefault("fast", (self._build_quiet_table(), self._build_floor_table()))
        self._quiet_table: dict[str | None, _QuietEntry | None] = fast[0]
        self._floors: dict[str | None, _Floor | None] = fast[1]
        # Per state: the context its watched delimiters may look back at.
        self._contexts = {state: max((s.delim.info.context for _, _, s in watch), default=0)
                          for state, watch in self._watch.items()}

    def _build_watchlists(self) -> dict[str | None, list[_Watch]]:
        """What to look for in each state: in an explicit region its close; otherwise every open and
        the implicit field's close. The end of the turn is watched everywhere, stray markers where no
        explicit region is open."""
        template = self._template
        fields = template.fields
        scanners = {}
        for f in fields.values():
            for kind, delim in ((_OPEN, f.open), (_CLOSE, f.close)):
                if delim is not None:
                    scanners[(kind, f.name)] = DelimiterScanner(delim, self._budget, self._hold_cap)
        always: list[_Watch] = []
        if template.end is not None:
            always.append((_END, None, DelimiterScanner(template.end, self._budget, self._hold_cap)))
        if template.next_turn is not None:
            always.append((_NEXT, None, DelimiterScanner(template.next_turn, self._budget, self._hold_cap)))
        idle: list[_Watch] = [(_OPEN, f, scanners[(_OPEN, f.name)]) for f in fields.values() if f.open is not None]
        if self._implicit is not None and fields[self._implicit].close is not None:
            idle.append((_CLOSE, fields[self._implicit], scanners[(_CLOSE, self._implicit)]))
        if template.drop is not None:
            idle.append((_DROP, None, DelimiterScanner(template.drop, self._budget, self._hold_cap)))
        watch: dict[str | None, list[_Watch]] = {None: idle + always}
        for f in fields.values():
            if f.open is not None:
                watch[f.name] = ([(_CLOSE, f, scanners[(_CLOSE, f.name)])] if f.close is not None else []) + always
        return watch

    def _build_quiet_table(self) -> dict[str | None, _QuietEntry | None]:
        fields = self._template.fields
        table: dict[str | None, _QuietEntry | None] = {}
        for state, trigger in self._triggers.items():
            name = self._implicit if state is None else state
            if trigger is None or name is None:
                table[state] = None
                continue
            charset = trigger.charset
            single = next(iter(charset)) if len(charset) == 1 else None
            tests = [d.info.lead for d in trigger.leads if d.info.lead is not None]
            lead = _union_test(tests)
            # The fast path holds a chunk's trailing run itself only where that is exactly what the
            # full scan would hold: one lead class, always forming.
            runs = all(d.info.lead_forming for d in trigger.leads) and len({getattr(t, "__self__", t) for t in tests}) == 1
            table[state] = (single, trigger.chars, lead, runs, name, not fields[name].parser.streamable)
        return table

    def _build_floor_table(self) -> dict[str | None, _Floor | None]:
        """Per state: the trigger pattern and the union of the lead-run tests (the scan floor: see ``_scan_delimiters``)."""
        table: dict[str | None, _Floor | None] = {}
        for state, trigger in self._triggers.items():
            tests = [] if trigger is None else [d.info.lead for d in trigger.leads if d.info.lead is not None]
            few = tuple(trigger.charset) if trigger is not None and 0 < len(trigger.charset) <= 2 else None
            table[state] = None if trigger is None else (trigger.chars, few, _union_test(tests))
        return table
