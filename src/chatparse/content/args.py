"""Load-time checks of ``content_args`` shared by the extension parsers, their regex cache, and the time
budget every regex a template gives a content parser runs under."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from time import perf_counter
from typing import Any

import regex

from chatparse.errors import RegexBudgetError
from chatparse.limits import MAX_RETRIES, own_cpu, stalled

Args = Mapping[str, Any]
_PATTERN_CACHE: dict[str, Any] = {}


class WrittenArguments(dict[str, Any]):
    """A call's arguments read from a structured body (``xml-element-tree``), with the text each value the
    reader structured or typed was read from: ``written[path]`` (a path of keys and list indexes from the
    arguments, ``("lines", 0, "sku")``) is the element's inner text exactly as written. The request's tools
    decide what a value is (``engine.tool_typing``): a parameter whose schema is ``string`` gets that text
    back; the typing step returns a plain ``dict``."""

    __slots__ = ("written",)

    def __init__(self, values: Mapping[str, Any], written: dict[tuple[str | int, ...], str]) -> None:
        super().__init__(values)
        self.written = written


class regex_deadline:
    """Run a content parser with ``seconds`` for the regexes its template gave it (``timed``): ``with
    regex_deadline(seconds): ...``. A class, not a generator-based context manager: it wraps the parse of
    every region with content_args.

    The deadline is on the wall clock, and the ``regex`` module's ``timeout=`` counts the process's CPU
    time: a busy machine or a server's other threads use both up. So, as in ``RegexBudget``, the content
    parser's own thread decides (its CPU time since the deadline was set: one clock read per region): a
    search that timed out while the thread waited (``stalled``) gets the deadline again, at most
    ``MAX_RETRIES`` times; one that timed out while the thread worked, or a parser that used ``seconds``
    of its own CPU time, is the template's catastrophic pattern."""

    __slots__ = ("_cpu_start", "_seconds", "_token", "_wall_start", "end")

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds

    def __enter__(self) -> None:
        self._wall_start = perf_counter()
        self._cpu_start = own_cpu()
        self.end = self._wall_start + self._seconds
        self._token = _DEADLINE.set(self)

    def __exit__(self, *exc: object) -> None:
        _DEADLINE.reset(self._token)

    def run(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``method(*args, timeout=..., **kwargs)`` within the deadline."""
        retries = 0
        while True:
            timeout = self.end - perf_counter()
            if timeout <= 0:
                self._refill()
                continue
            try:
                return method(*args, timeout=timeout, **kwargs)
            except TimeoutError:
                retries += 1
                if retries > MAX_RETRIES or not stalled(self._cpu_start, self._wall_start, self._seconds):
                    raise budget_error() from None
                self._refill()

    def _refill(self) -> None:
        if own_cpu() - self._cpu_start >= self._seconds:
            raise budget_error()
        self.end = perf_counter() + self._seconds


# The deadline of the content parser running now (None: no limit).
_DEADLINE: ContextVar[regex_deadline | None] = ContextVar("chatparse_content_deadline", default=None)


def timed(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a ``regex`` pattern method under what is left of the content parser's time budget; a
    template's catastrophic pattern ends with ``RegexBudgetError`` instead of a hang."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return method(*args, **kwargs)
    return deadline.run(method, *args, **kwargs)


def timed_finditer(pattern: Any, text: str) -> Iterator[Any]:
    """``pattern.finditer(text)`` under the content parser's time budget (the matches are found in one
    call, so that a search stalled on a busy machine is retried whole)."""
    deadline = _DEADLINE.get()
    if deadline is None:
        yield from pattern.finditer(text)
        return
    yield from deadline.run(_all_matches, pattern, text)


def _all_matches(pattern: Any, text: str, *, timeout: float) -> list[Any]:
    return list(pattern.finditer(text, timeout=timeout))


def budget_error() -> RegexBudgetError:
    return RegexBudgetError(
        "A content parser's regex from content_args exceeded its time budget: the pattern backtracks "
        "catastrophically on this region. Rewrite it without nested or overlapping quantifiers.",
        key="content_args", budget="content",
    )


def compiled(pattern: str) -> Any:
    """``pattern`` compiled with DOTALL, once."""
    if pattern not in _PATTERN_CACHE:
        _PATTERN_CACHE[pattern] = regex.compile(pattern, regex.DOTALL)
    return _PATTERN_CACHE[pattern]


def excerpt(text: str, limit: int = 60) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "…"


def check_allowed(parser: str, args: Args, allowed: Mapping[str, type | tuple[type, ...]] | set[str]) -> None:
    """Reject unknown ``content_args`` keys (and, given a type table, values of the wrong type)."""
    for key, value in args.items():
        if key not in allowed:
            raise ValueError(f"{parser}: unknown content_args key {key!r}. Valid keys: {sorted(allowed)}")
        if isinstance(allowed, Mapping) and not isinstance(value, allowed[key]):
            raise ValueError(f"{parser}: content_args[{key!r}] has the wrong type {type(value).__name__}")


def check_choice(parser: str, args: Args, key: str, choices: Iterable[str]) -> None:
    valid = sorted(choices)
    if key in args and args[key] not in valid:
        raise ValueError(f"{parser}: content_args[{key!r}] must be one of {valid}, found {args[key]!r}")


def check_string_list(parser: str, args: Args, key: str) -> None:
    if key in args and not all(isinstance(item, str) and item for item in args[key]):
        raise ValueError(f"{parser}: content_args[{key!r}] must be a list of non-empty strings")


def check_regex(parser: str, args: Args, key: str) -> Any:
    pattern = args[key]
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"{parser}: content_args[{key!r}] must be a non-empty regex string, found {pattern!r}")
    try:
        return compiled(pattern)
    except regex.error as exc:
        raise ValueError(f"{parser}: content_args[{key!r}] is not a valid regex: {exc}") from exc
