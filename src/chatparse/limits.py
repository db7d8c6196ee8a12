"""Limits below every layer: the streaming engine's run-time limits (regex time budgets, the hold-back cap)
and the load-time limits on a template's patterns (``check_pattern_limits``).

A response template comes from a public model hub, so its regexes are as untrusted as the model output
they parse. Every delimiter search runs under the ``regex`` module's ``timeout=``; the timeout of one
search is the smallest of what is left of the per-search, per-feed and per-message budgets, so a
catastrophic pattern ends with a named ``RegexBudgetError`` instead of a hang. Searches are timed by the
wall clock, and the ``regex`` module's own ``timeout=`` counts the CPU time of the whole process: both
run out early on a busy machine or in a server whose other threads work meanwhile. So when a budget runs
out, the CPU time of the parser's own thread during its searches decides (see ``RegexBudget``): only a
pattern that is slow on its own fails, whatever other threads do.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter, process_time
from typing import Any

from chatparse.errors import RegexBudgetError, TemplateError, TemplateWarning, UsageError
from chatparse.regex_info import quantifier_facts


@dataclass(frozen=True, slots=True)
class Limits:
    """``search_timeout``/``feed_budget``/``message_budget``: seconds of regex time allowed for one
    search, for all searches of one ``feed`` (or ``finalize``) and for the whole message.
    ``max_holdback``: characters that may be held back (a delimiter possibly still forming) beyond the
    template's longest literal delimiter; past it the held text is released to the current region.
    ``per_char``: extra seconds allowed per character of input, so that legitimate work on a huge feed
    (a 10 MB one-shot parse, a 100k-token stream) is never mistaken for a catastrophic pattern;
    10 µs/char adds 10 s per MB, far above legitimate regex cost (about 1 µs/char).
    ``transform_copies``: placeholder uses one field's transform may hold. Each use copies the region's value
    (or a capture) into the field's value, so a field's value is at most this many times the region's text
    plus the transform's literals: a transform repeating ``{content}`` 99,000 times would turn a 10 KB output
    into a 990 MB message. Templates are checked against the default when they load
    (``transform_too_large``); a parser given a lower value checks its template when it starts.
    ``lone_hold``: characters of the output's first text held back while they may be reasoning the model
    opened without its opener (``chatparse.lone_close``: they are reasoning if a lone close follows,
    content otherwise). Past it they stream as content; a lone close after that still makes them
    reasoning in the message, and the content region's ``region_close`` event says so (``moved_to``)."""

    search_timeout: float = 0.05
    feed_budget: float = 0.1
    message_budget: float = 1.0
    max_holdback: int = 4096
    per_char: float = 1e-5
    transform_copies: int = 64
    lone_hold: int = 256

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
        copies = self.transform_copies
        if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
            raise UsageError(f"Limits.transform_copies must be a positive int, found {copies!r}", code="bad_option")


DEFAULT_LIMITS = Limits()
MAX_RETRIES = 16  # searches retried after a timeout on a busy machine, at most, per search
# The CPU time of the calling thread: a parser's own work, whatever the process's other threads do (the
# process's CPU time where the platform has no per-thread clock). A system call: read only on slow paths.
own_cpu: Callable[[], float] = getattr(time, "thread_time", process_time)


def stalled(cpu_before: float, wall_before: float, timeout: float) -> bool:
    """Whether a search that timed out (started at ``wall_before`` on the wall clock and ``cpu_before`` on
    ``own_cpu``, given ``timeout``) waited rather than worked: its thread ran neither for half of the time
    it was given nor for half of the time it took. A catastrophic pattern does both, or the second on a
    busy machine (the ``regex`` module's timeout counts other threads' CPU time too, so it comes sooner);
    a search whose thread was descheduled, or waited for the GIL, does neither."""
    used = own_cpu() - cpu_before
    return used < timeout / 2 and used < (perf_counter() - wall_before) / 2


class RegexBudget:
    """The time left for regex work: per feed (reset by ``start_feed``) and per message.

    Searches are timed by the wall clock (``perf_counter`` is cheap), and the ``regex`` module's
    ``timeout=`` counts the whole process's CPU time: a busy machine, or other threads of a server,
    use both up without the pattern being slow. So when a budget runs out the parser's own CPU time
    decides: the budgets are refilled and the search retried, and from then on each search of the
    message is measured on its thread's CPU clock (``own_cpu``; two system calls a search, only on a
    message that ran out once). A retried search that times out while working the time it was given
    (``stalled`` says no), or a message whose measured searches used its whole message budget of CPU,
    is a catastrophic pattern. Benign input on a loaded machine or in a busy server therefore never
    fails, and a catastrophic pattern still ends in bounded CPU time (at most about twice the budget)."""

    __slots__ = ("cpu_allowed", "cpu_used", "feed_left", "limits", "measured", "message_left", "search_allowance")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.feed_left = limits.feed_budget
        self.message_left = limits.message_budget
        self.search_allowance = limits.search_timeout
        self.measured = False  # searches are measured on the thread's CPU clock (after a first refill)
        self.cpu_used = 0.0  # CPU seconds the measured searches used
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
        retries = 0
        while True:
            timeout = min(self.search_allowance, self.feed_left, self.message_left)
            if timeout <= 0:
                if self.cpu_used < self.cpu_allowed:
                    self._refill()
                    continue
                raise self._error(field, key, timeout)
            measured = self.measured
            cpu = own_cpu() if measured else 0.0
            start = perf_counter()
            try:
                return method(*args, timeout=timeout, **kwargs)
            except TimeoutError:  # an OSError subclass: catch it by name, before anything broader
                retries += 1
                if (measured and not stalled(cpu, start, timeout)) or retries > MAX_RETRIES \
                        or self.cpu_used >= self.cpu_allowed:
                    raise self._error(field, key, timeout) from None
                self._refill()
            finally:
                elapsed = perf_counter() - start
                self.feed_left -= elapsed
                self.message_left -= elapsed
                if measured:
                    self.cpu_used += own_cpu() - cpu

    def _refill(self) -> None:
        limits = self.limits
        self.measured = True
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


# Load-time limits: a template comes from a public hub, and the regex compiler itself is attack surface
# (``(?:a{1000}){10000}``, 18 characters, takes seconds and gigabytes to compile). Checked on the raw text
# before compiling.
MAX_PATTERN_LENGTH = 4096
MAX_REPEAT_COUNT = 1000
MAX_REPEAT_PRODUCT = 100_000


def check_pattern_limits(source: str, *, field: str | None, key: str, scope: str) -> None:
    """Reject patterns too long or with counted repeats too large to compile safely; warn (TemplateWarning)
    on nested quantifiers such as ``(a+)+``, which can backtrack catastrophically."""
    if len(source) > MAX_PATTERN_LENGTH:
        raise _pattern_error(f"{scope}: expected a {key} of at most {MAX_PATTERN_LENGTH} characters, found "
                    f"{len(source)}. Shorten the pattern.", "pattern_too_long", field=field, key=key)
    facts = quantifier_facts(source)
    if facts.max_count > MAX_REPEAT_COUNT:
        raise _pattern_error(f"{scope}: expected counted repeats ({{n}}, {{n,m}}) of at most {MAX_REPEAT_COUNT} in {key}, "
                    f"found {facts.max_count}. Use an unbounded quantifier or a smaller count.",
                    "repeat_too_large", field=field, key=key)
    if facts.count_product > MAX_REPEAT_PRODUCT:
        raise _pattern_error(f"{scope}: nested counted repeats in {key} expand to {facts.count_product} copies (at most "
                    f"{MAX_REPEAT_PRODUCT}). Flatten or shrink the repeats.", "repeat_too_large",
                    field=field, key=key)
    if facts.nested_quantifier:
        warnings.warn(f"{scope}: {key} {source[:80]!r} repeats a group that itself contains an unbounded "
                      "quantifier (like '(a+)+'); it can backtrack catastrophically and will then hit the regex "
                      "time budget (code nested_quantifier).", TemplateWarning, stacklevel=2)


def _pattern_error(message: str, code: str, *, field: str | None, key: str) -> TemplateError:
    return TemplateError(message, code=code, field=field, key=key)
