"""Progress of a long run on stderr: a live bar with rate and ETA on a terminal (rich), nothing while it runs
elsewhere; in both cases one summary line at the end that counts failed rows apart from parsed ones, and
among the parsed ones those with tool calls and those with malformed regions (by code)."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any

from chatparse.cli.io import eprint, is_terminal


class Progress:
    """Counts rows and failures; draws a bar only when ``live`` (stderr is a terminal and not ``--quiet``)."""

    def __init__(self, command: str, total: int | None, *, live: bool, quiet: bool) -> None:
        self.command = command
        self.quiet = quiet
        self.rows = 0
        self.codes: Counter[str] = Counter()
        self.with_calls = 0
        self.with_malformed = 0
        self.malformed: Counter[str] = Counter()
        self.started = time.monotonic()
        self._bar: Any = None
        self._task: Any = None
        if live and not quiet:
            self._start_bar(total)

    @classmethod
    def for_stderr(cls, command: str, total: int | None, *, quiet: bool) -> Progress:
        return cls(command, total, live=is_terminal(sys.stderr), quiet=quiet)

    @property
    def failed(self) -> int:
        return sum(self.codes.values())

    def _start_bar(self, total: int | None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn(f"[bold]{self.command}"), BarColumn(), TaskProgressColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]:,.0f} rows/s"), TextColumn("[red]{task.fields[failed]} failed"),
            TimeRemainingColumn(), console=Console(stderr=True), transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(self.command, total=total, rate=0.0, failed=0)

    def advance(self, consumed: int, rows: int, codes: Counter[str]) -> None:
        """``consumed`` input units (lines, blank ones too, or rows) of which ``rows`` were rows."""
        self.rows += rows
        self.codes.update(codes)
        if self._bar is not None:
            self._bar.update(self._task, advance=consumed, rate=self.rows / max(self.elapsed, 1e-9),
                             failed=self.failed)

    def add(self, result: Any) -> None:
        """A ``ChunkResult``: its rows, failures, and rows with calls or malformed regions."""
        self.with_calls += result.with_calls
        self.with_malformed += result.with_malformed
        self.malformed.update(result.malformed)
        self.advance(result.consumed, result.rows, result.codes)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def summary(self, detail: str = "") -> str:
        seconds = self.elapsed
        line = (f"{self.rows:,} row{'' if self.rows == 1 else 's'} in {seconds:.1f} s "
                f"({self.rows / max(seconds, 1e-9):,.0f} rows/s{detail}): "
                f"{self.rows - self.failed:,} ok, {self.failed:,} failed")
        if self.codes:
            line += f" ({_by_code(self.codes)})"
        line += f"; {self.with_calls:,} with tool calls, {self.with_malformed:,} with malformed output"
        if self.malformed:
            line += f" ({_by_code(self.malformed)})"
        return line

    def finish(self, detail: str = "") -> None:
        """Stop the bar and print the summary line (unless quiet)."""
        self.stop()
        if not self.quiet:
            eprint(f"chatparse {self.command}: {self.summary(detail)}")


def _by_code(codes: Counter[str]) -> str:
    return ", ".join(f"{code} {n:,}" for code, n in codes.most_common())
