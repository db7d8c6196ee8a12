"""Run-time limits of the streaming engine: regex time budgets and the hold-back cap.

A response template comes from a public model hub, so its regexes are as untrusted as the model output
they parse. Every delimiter search runs under the ``regex`` module's ``timeout=``; the timeout of one
search is the smallest of what is left of the per-search, per-feed and per-message budgets, so a
catastrophic pattern ends with a named ``RegexBudgetError`` instead of a hang. Searches are timed by the
wall clock, which a busy machine stretches; when a budget runs out, the CPU time the message really used
decides (see ``RegexBudget``), so only a pattern that is slow on its own fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter, process_time
from typing import Any

from chatparse.errors import RegexBudgetError, UsageError


@dataclass(frozen=True, slots=True)
class Limits:
    """``search_timeout``/``feed_budget``/``message_budget``: seconds of regex time allowed for one
    search, for all searches of one ``feed`` (or ``finalize``) and for the whole message.
    ``max_holdback``: characters that may be held back (a delimiter possibly still forming) beyond the
    template's longest literal delimiter; past it the held text is released to the current region.
    ``per_char``: extra seconds allowed per character of input, so that legitimate work on a huge feed
    (a 10 MB one-shot parse, a 100k-token stream) is never mistaken for a catastrophic pattern;
    10 µs/char adds 10 s per MB, far above legitimate regex cost (about 1 µs/char).
    ``lone_hold``: characters of the output's first text held back while they may be reasoning the model
    opened without its opener (``chatparse.lone_close``: they are reasoning if a lone close follows,
    content otherwise). Past it they stream as content; a lone close after that still makes them
    reasoning in the message, and the content region's ``region_close`` event says so (``moved_to``)."""

    search_timeout: float = 0.05
    feed_budget: float = 0.1
    message_budget: float = 1.0
    max_holdback: int = 4096
    per_char: float = 1e-5
    lone_hold: int = 2048

    def __post_init__(self) -> None:
        for name in ("search_timeout", "feed_budget", "message_budget"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise UsageError(f"Limits.{name} must be a positive number of seconds, found {value!r}",
                                 code="bad_option")
        for name in ("max_holdback", "lone_hold"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"Limits.{name} must be a non-negative int, found {value!r}", code="bad_option")


DEFAULT_LIMITS = Limits()
MAX_RETRIES = 16  # searches retried after a wall-clock timeout on a busy machine, at most, per search


class RegexBudget:
    """The time left for regex work: per feed (reset by ``start_feed``) and per message.

    Searches are timed by the wall clock (``perf_counter`` is cheap; the ``regex`` module's ``timeout=``
    is wall-clock too). A busy machine stretches wall-clock time without the pattern being slow, so when
    a budget runs out the process's CPU time decides: while the message has used less CPU than its
    message budget allows, the wall-clock budgets are refilled and the search is retried; a retried search
    that times out again while burning the CPU it was given is a catastrophic pattern. Benign input on a
    loaded machine therefore never fails, and a catastrophic pattern still ends in bounded CPU time."""

    __slots__ = ("cpu_allowed", "cpu_start", "feed_left", "limits", "message_left", "search_allowance")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.feed_left = limits.feed_budget
        self.message_left = limits.message_budget
        self.search_allowance = limits.search_timeout
        self.cpu_start = process_time()
        self.cpu_allowed = limits.message_budget  # CPU seconds the message may spend (grows per character)

    def start_feed(self, size: int = 0) -> None:
        """A new feed of ``size`` characters: its budget, grown in proportion to its size."""
        extra = size * self.limits.per_char
        self.feed_left = self.limits.feed_budget + extra
        self.message_left += extra
        self.cpu_allowed += extra
        self.search_allowance = self.limits.search_timeout + extra

    def credit(self, size: int) -> None:
        """``size`` characters arrived without a feed of their own (the parser's fast path)."""
        extra = size * self.limits.per_char
        self.message_left += extra
        self.cpu_allowed += extra

    def run(self, method: Callable[..., Any], field: str | None, key: str, *args: Any, **kwargs: Any) -> Any:
        """Call a ``regex`` pattern method with the timeout that is left; charge the time it took."""
        cpu_before: float | None = None  # measured only for a retried search (process_time is not free)
        retries = 0
        while True:
            timeout = min(self.search_allowance, self.feed_left, self.message_left)
            if timeout <= 0:
                if self._busy():
                    self._refill()
                    continue
                raise self._error(field, key, timeout)
            start = perf_counter()
            try:
                return method(*args, timeout=timeout, **kwargs)
            except TimeoutError:  # an OSError subclass: catch it by name, before anything broader
                burned = cpu_before is not None and process_time() - cpu_before >= timeout / 2
                retries += 1
                if burned or retries > MAX_RETRIES or not self._busy():
                    raise self._error(field, key, timeout) from None
                self._refill()
                cpu_before = process_time()
            finally:
                elapsed = perf_counter() - start
                self.feed_left -= elapsed
                self.message_left -= elapsed

    def _busy(self) -> bool:
        """True while the message has used less CPU time than its budget allows: the wall clock ran out
        because the machine was busy, not because the regex was slow."""
        return process_time() - self.cpu_start < self.cpu_allowed

    def _refill(self) -> None:
        limits = self.limits
        self.search_allowance = max(self.search_allowance, limits.search_timeout)
        self.feed_left = max(self.feed_left, 0.0) + limits.feed_budget
        self.message_left = max(self.message_left, 0.0) + limits.message_budget

    def _error(self, field: str | None, key: str, timeout: float) -> RegexBudgetError:
        limits = self.limits
        if timeout >= self.search_allowance:
            which, seconds = "search_timeout", self.search_allowance
        elif self.message_left <= self.feed_left:
            which, seconds = "message_budget", limits.message_budget
        else:
            which, seconds = "feed_budget", limits.feed_budget
        where = f"field '{field}' {key}" if field else key
        return RegexBudgetError(
            f"The {where} regex exceeded its time budget ({which}={seconds:g} s): the pattern backtracks "
            "catastrophically on this output. Rewrite the pattern without nested or overlapping quantifiers, "
            "or raise the limit via Limits.",
            field=field or None, key=key, budget=which, seconds=seconds,
        )
