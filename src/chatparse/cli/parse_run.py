"""The work of ``chatparse parse``: each job (JSONL lines or a table slice) becomes finished output rows, in
this process or in ``-j N`` worker processes, handed back in input order. A row's failure is part of its
result and never stops the run."""

from __future__ import annotations

import json
import signal
import sys
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from chatparse.batch.arrow import COLUMNS, MESSAGE_COLUMN, BatchParser
from chatparse.batch.rows import Outcome, RowOptions, failed
from chatparse.cli.io import CliError, json_bytes
from chatparse.cli.tables import BatchJob, LinesJob

LINE_KEY = "line"  # JSONL input: 1-based line number
ROW_KEY = "row"  # table input: 0-based row index
ERROR_KEY = "error"


@dataclass(frozen=True)
class RunConfig:
    """Everything a worker needs (picklable): the template as loadable source, the row options, the output
    shape."""

    template: Any
    options: RowOptions
    message_field: str = MESSAGE_COLUMN
    table_output: bool = False
    split_errors: bool = False
    column_prefix: str = ""


@dataclass
class ChunkResult:
    """A job's output: ``good`` and (with ``split_errors``) ``bad`` rows, as JSONL lines, an Arrow batch or
    ``Pending`` rows (JSONL input, table output: built into a table at the end)."""

    consumed: int
    rows: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    good: Any = None
    bad: Any = None
    with_calls: int = 0  # parsed rows with at least one tool call
    with_malformed: int = 0  # parsed rows with at least one malformed region
    malformed: Counter[str] = field(default_factory=Counter)  # rows with a malformed region, by its code

    def count_message(self, message: dict[str, Any]) -> None:
        self.count(bool(message.get("tool_calls")), [item.get("code") for item in message.get("malformed") or ()
                                                     if isinstance(item, dict)])

    def count(self, calls: bool, malformed_codes: list[Any]) -> None:
        self.with_calls += calls
        if malformed_codes:
            self.with_malformed += 1
            self.malformed.update({str(code): 1 for code in malformed_codes})


@dataclass
class Pending:
    """Rows of JSONL input bound for a table: line numbers, input records (None: no record) and outcomes."""

    numbers: list[int] = field(default_factory=list)
    records: list[dict[str, Any] | None] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)

    def add(self, number: int, record: dict[str, Any] | None, outcome: Outcome) -> None:
        self.numbers.append(number)
        self.records.append(record)
        self.outcomes.append(outcome)

    def extend(self, other: Pending) -> None:
        self.numbers += other.numbers
        self.records += other.records
        self.outcomes += other.outcomes


class Worker:
    """Turns jobs into ``ChunkResult``s with one compiled template."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.batch = BatchParser(config.template, output_column=config.options.output_field,
                                 prefix_column=config.options.prefix_field, tools_column=config.options.tools_field,
                                 finish_reason_column=config.options.finish_reason_field,
                                 prefix=config.options.prefix, tools=config.options.tools,
                                 on_malformed=config.options.on_malformed, message_column=config.message_field,
                                 column_prefix=config.column_prefix, limits=config.options.limits)
        added = [*self.batch.names.values(), LINE_KEY] if config.table_output else \
            [config.message_field, ERROR_KEY, LINE_KEY]
        self.added = frozenset(added)

    def run(self, job: LinesJob | BatchJob) -> ChunkResult:
        return self.lines(job) if isinstance(job, LinesJob) else self.table(job)

    # --- JSONL input ---------------------------------------------------------------------------------------

    def lines(self, job: LinesJob) -> ChunkResult:
        result = ChunkResult(consumed=len(job.lines))
        pending = (Pending(), Pending())
        lines: tuple[list[bytes], list[bytes]] = ([], [])
        for offset, raw in enumerate(job.lines):
            if not raw.strip():
                continue
            number = job.start + offset
            record, outcome = self.read(raw)
            if outcome is None and record is not None:
                outcome = self.parse(record)
                if outcome.error and outcome.error["code"] == "key_collision":
                    # its colliding keys would overwrite the ones chatparse adds; the others identify the row
                    record = {key: value for key, value in record.items() if key not in self.added}
            assert outcome is not None
            result.rows += 1
            if not outcome.ok:
                result.codes[outcome.error["code"] if outcome.error else "error"] += 1
            elif outcome.message is not None:
                result.count_message(outcome.message)
            part = int(self.config.split_errors and not outcome.ok)  # 1: bound for the errors file
            if self.config.table_output:
                pending[part].add(number, record, outcome)
            else:
                lines[part].append(json_bytes(self.json_row(record, outcome, number)))
        result.good, result.bad = pending if self.config.table_output else lines
        return result

    def read(self, raw: bytes) -> tuple[dict[str, Any] | None, Outcome | None]:
        """A line's record, or the outcome that says why it has none."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, failed("invalid_utf8", f"Expected UTF-8 text, found bytes that are not UTF-8 at byte "
                                f"{exc.start} of the line ({exc.reason})", offset=exc.start)
        try:
            data = json.loads(text.rstrip("\r\n"))
        except json.JSONDecodeError as exc:
            return None, failed("invalid_json", f"Expected a JSON object, found invalid JSON: {exc.msg} at column "
                                f"{exc.colno}", offset=exc.pos)
        except RecursionError:
            return None, failed("too_deep", "Expected a JSON object, found JSON nested too deeply to read")
        if isinstance(data, str):
            data = {self.config.options.output_field: data}
        if not isinstance(data, dict):
            return None, failed("bad_line", f"Expected a JSON object per line (or a JSON string: the output), "
                                f"found a JSON {type(data).__name__}")
        if self.config.table_output and "\\u" in text and not _utf8(data):
            return None, failed("unencodable_text", "The line holds a lone surrogate (a '\\ud8xx' escape), which "
                                "UTF-8 (Parquet, Arrow) cannot store; write JSONL output, which keeps it")
        return data, None

    def parse(self, record: dict[str, Any]) -> Outcome:
        taken = sorted(self.added.intersection(record))
        if taken:
            return failed("key_collision", f"The input row already has the key(s) {taken}, which chatparse parse "
                          "adds to its output; rename them in the input (--message-field names the message key)",
                          key=taken[0])
        try:
            return self.batch.rows.parse_row(record)
        except Exception as exc:  # a bug, never a reason to stop the batch
            return failed("internal_error", f"Unexpected {type(exc).__name__}: {str(exc)[:200]}")

    def json_row(self, record: dict[str, Any] | None, outcome: Outcome, number: int) -> dict[str, Any]:
        row = dict(record) if record is not None else {}
        if outcome.ok:
            row[self.config.message_field] = outcome.message
        else:
            row[ERROR_KEY] = outcome.error
        row[LINE_KEY] = number
        return row

    # --- table input ----------------------------------------------------------------------------------------

    def table(self, job: BatchJob) -> ChunkResult:
        typed = with_row_numbers(self.batch(job.batch), job.start)
        return self.route(typed, job.batch.schema.names, consumed=job.batch.num_rows)

    def route(self, typed: Any, input_names: list[str], consumed: int) -> ChunkResult:
        """A typed batch (with its row numbers) split into good and bad rows and encoded for the output."""
        import pyarrow.compute as pc

        codes = typed.column(self.batch.names["error_code"])
        result = ChunkResult(consumed=consumed, rows=typed.num_rows,
                             codes=Counter(code for code in codes.to_pylist() if code is not None))
        calls = pc.fill_null(pc.list_value_length(typed.column(self.batch.names["tool_calls"])), 0)
        result.with_calls = pc.sum(pc.greater(calls, 0)).as_py() or 0
        for items in typed.column(self.batch.names["malformed"]).to_pylist():
            if items:
                result.count(False, [item["code"] for item in items])
        good, bad = typed, None
        if self.config.split_errors:
            failed_rows = pc.is_valid(codes)
            good, bad = typed.filter(pc.invert(failed_rows)), typed.filter(failed_rows)
        if self.config.table_output:
            result.good, result.bad = good, bad
        else:
            result.good = self.typed_json(good, input_names)
            result.bad = self.typed_json(bad, input_names) if bad is not None else []
        return result

    def typed_json(self, typed: Any, input_names: list[str]) -> list[bytes]:
        """JSONL rows of a typed batch: the input columns, then the message (or the error) and the row."""
        names = self.batch.names
        lines = []
        for row in typed.to_pylist():
            out = {name: row[name] for name in input_names}
            if row[names["error_code"]] is None:
                out[self.config.message_field] = json.loads(row[names[MESSAGE_COLUMN]])
            else:
                location = {k: v for k, v in (row[names["error_location"]] or {}).items() if v is not None}
                out[ERROR_KEY] = {"code": row[names["error_code"]], "message": row[names["error_message"]],
                                  **location}
            out[ROW_KEY] = row[ROW_KEY]
            lines.append(json_bytes(out))
        return lines


def with_row_numbers(typed: Any, start: int) -> Any:
    import pyarrow as pa

    rows = pa.array(range(start, start + typed.num_rows), type=pa.int64())
    return pa.RecordBatch.from_arrays([*typed.columns, rows], names=[*typed.schema.names, ROW_KEY]) \
        if isinstance(typed, pa.RecordBatch) else typed.append_column(ROW_KEY, rows)


def table_of(pending: Pending, worker: Worker) -> Any:
    """JSONL rows bound for a table: input keys as columns (in order of first appearance; a key whose values
    Arrow cannot put in one type is kept as JSON text), the typed columns and the line numbers."""
    import pyarrow as pa

    keys: dict[str, None] = {}
    for record in pending.records:
        keys.update(dict.fromkeys(record or ()))
    columns: dict[str, Any] = {}
    for key in keys:
        values = [record.get(key) if record else None for record in pending.records]
        try:
            columns[key] = pa.array(values)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            columns[key] = pa.array([None if v is None else json_bytes(v).decode("utf-8").rstrip("\n")
                                     for v in values], type=pa.string())
    for name, array in zip(COLUMNS, worker.batch.arrays(pending.outcomes), strict=True):
        columns[worker.batch.names[name]] = array
    columns[LINE_KEY] = pa.array(pending.numbers, type=pa.int64())
    return pa.table(columns)


def _utf8(data: Any) -> bool:
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --- running ---------------------------------------------------------------------------------------------------

_WORKER: Worker | None = None


def _init_worker(config: RunConfig) -> None:
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle, quietly
    _die_with_parent()
    _WORKER = Worker(config)


def _die_with_parent() -> None:
    """On Linux, a worker gets SIGTERM when the main process dies, however it dies (even SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_in_worker(job: LinesJob | BatchJob) -> ChunkResult:
    assert _WORKER is not None
    return _WORKER.run(job)


def run_jobs(config: RunConfig, jobs: Iterable[LinesJob | BatchJob], workers: int) -> Iterator[ChunkResult]:
    """Each job's result, in input order; ``workers`` > 1 runs them in that many processes, with at most
    two jobs per process in flight (the input is read as fast as it is parsed, never ahead)."""
    if workers <= 1:
        worker = Worker(config)
        yield from map(worker.run, jobs)
        return
    import multiprocessing
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")  # no fork of a process with a progress thread
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker, initargs=(config,))
    pending: deque[Future[ChunkResult]] = deque()
    done = False
    try:
        for job in jobs:
            pending.append(pool.submit(_run_in_worker, job))
            if len(pending) >= 2 * workers:
                yield _result(pending.popleft(), pool)
        while pending:
            yield _result(pending.popleft(), pool)
        done = True
    except BrokenProcessPool:
        raise CliError("A worker process died (killed, or out of memory?); nothing was written under the output's "
                       "name. Run again, with fewer workers (-j)", code="worker_died") from None
    finally:
        if done:
            pool.shutdown(wait=True)
        else:  # an error, Ctrl-C or SIGTERM: the workers end now, not after their jobs
            _stop(pool)


def _result(future: Any, pool: Any) -> ChunkResult:
    """The job's result, watching the workers while it waits: a worker that died (killed, out of memory) is
    ``BrokenProcessPool`` within a second, even where the pool's own manager thread would hang on the dead
    worker's queue (CPython's ProcessPoolExecutor can, when a worker is killed with the call queue full)."""
    from concurrent.futures.process import BrokenProcessPool

    while True:
        try:
            return cast(ChunkResult, future.result(timeout=0.5))
        except TimeoutError:
            try:  # the pool's manager thread may change the table while it is read: look again next time
                processes = list((getattr(pool, "_processes", None) or {}).values())
            except RuntimeError:
                continue
            if any(process.exitcode is not None for process in processes):
                raise BrokenProcessPool("a worker process ended before its jobs were done") from None


# Set when a process pool was stopped before its work was done (an error, a dead worker, Ctrl-C): the CLI then
# exits without waiting for the pool's threads, which may still write to the dead workers' pipes and print a
# traceback while the interpreter shuts down (``cli.main``).
POOL_STOPPED = False


def _stop(pool: Any) -> None:
    global POOL_STOPPED
    POOL_STOPPED = True
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        if process.is_alive():
            process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.join(timeout=5)
