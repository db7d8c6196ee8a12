"""``chatparse parse``: a dataset of generations (JSONL, Parquet or Arrow IPC; a file or stdin) in, every row
with its parsed message (or its located error) and its input line/row number out, in input order."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any

from chatparse.batch.rows import FINISH_REASON_FIELD, OUTPUT_FIELD, PREFIX_FIELD, TOOLS_FIELD, RowOptions
from chatparse.cli.io import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    CliError,
    eprint,
    is_terminal,
    json_bytes,
    read_text_file,
    refuse_same_file,
    report,
    resolve_template,
    text_arg,
)
from chatparse.cli.parse_run import (
    ERROR_KEY,
    LINE_KEY,
    ROW_KEY,
    ChunkResult,
    Pending,
    RunConfig,
    Worker,
    run_jobs,
    table_of,
    with_row_numbers,
)
from chatparse.cli.progress import Progress
from chatparse.cli.tables import (
    FORMATS,
    JsonlSink,
    LinesJob,
    Source,
    TableSink,
    open_sink,
    open_source,
    output_format,
)
from chatparse.errors import ChatparseError

DESCRIPTION = f"""\
Parse every row of a generation dataset into a message. Each JSONL line is an object whose
'{OUTPUT_FIELD}' holds the generated text and whose '{PREFIX_FIELD}' holds the prompt the model saw (a bare
JSON string is an output without a prompt); Parquet and Arrow IPC inputs have those columns.

JSONL output: each row keeps every input key and gains 'message' (or 'error': {{code, message,
location}}) and 'line' (its 1-based input line; 'row', 0-based, for table input). Parquet/Arrow output:
every input column, then typed columns role, thinking, content, tool_calls (list of {{name, arguments as
JSON text}}), malformed, message (the whole message as JSON), error_code, error_message, error_location,
then 'line' or 'row'. A row that fails never stops the run.

The prompt is never assumed: a row without a prefix (or with one that is not text) fails with
prefix_required / bad_prefix, unless --prefix gives one ('--prefix ""' opts out explicitly). Tools type
the calls' arguments: a row's own 'tools' (a list, or its JSON text) or --tools FILE for every row.

Nothing is lost: an output file is written beside its name and renamed into place at the end, so an error,
Ctrl-C or a kill leaves an existing file as it was; -o naming the input is refused. gzip input is read.
The summary line on stderr counts rows ok and failed (by code), rows with tool calls, and rows with
malformed regions (by code, e.g. truncated).
"""

EPILOG = f"""\
examples:
  chatparse parse -t qwen3 rollouts.jsonl > parsed.jsonl
  chatparse parse -t qwen3 -j 4 rollouts.parquet -o parsed.parquet --errors failed.jsonl
  chatparse parse -t Qwen/Qwen3-8B --output-field response --prefix-field prompt dump.jsonl
  chatparse parse -t qwen3 --ray rollouts.parquet -o parsed.parquet -j 2
  chatparse parse -t qwen3 --ray --ray-address auto s3-synced/rollouts/ -o parsed.parquet

{EXIT_CODES_HELP}
"""


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of 1 or more, found {value}")
    return value


def add_parser(sub: Any) -> None:
    p = sub.add_parser("parse", help="parse a dataset of generations (JSONL, Parquet, Arrow) into messages",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("input", nargs="?", default="-", help="JSONL, Parquet or Arrow IPC file, or - for stdin (default)")
    p.add_argument("--template", "-t", required=True,
                   help="built-in name (any case), template file, model directory or Hugging Face model id")
    p.add_argument("-o", "--output", default="-", help="output file, or - for stdout (default; pretty on a terminal)")
    p.add_argument("--input-format", choices=FORMATS, help="default: from the file's first bytes or its suffix")
    p.add_argument("--output-format", choices=FORMATS,
                   help="default: from the output file's suffix (.parquet, .arrow), else jsonl")
    p.add_argument("--output-field", default=OUTPUT_FIELD, metavar="NAME",
                   help=f"input key or column with the generated text (default: {OUTPUT_FIELD})")
    p.add_argument("--prefix-field", "--prefix-key", default=PREFIX_FIELD, metavar="NAME",
                   help=f"input key or column with the prompt (default: {PREFIX_FIELD})")
    p.add_argument("--prefix", metavar="TEXT|@FILE",
                   help="prompt for rows without one (\"\" opts out of prompts); default: such rows fail")
    p.add_argument("--tools", metavar="FILE", help="JSON list of tools for every row (a row's own 'tools' wins)")
    p.add_argument("--finish-reason-field", default=FINISH_REASON_FIELD, metavar="NAME",
                   help=f"input key or column with the engine's finish reason (default: {FINISH_REASON_FIELD}; "
                        "'length' makes a call left open truncated)")
    p.add_argument("--message-field", default="message", metavar="NAME",
                   help="output key (JSONL) or column (tables, as JSON text) of the message (default: message)")
    p.add_argument("--column-prefix", default="", metavar="TEXT",
                   help="prefix for the added table columns (role, content, ...), for an input that has them")
    p.add_argument("--on-malformed", choices=("recover", "keep", "raise"), default="recover",
                   help="a tool call that does not parse: 'recover' (default) keeps the calls beside it and lists "
                        "the bad one under \"malformed\" with its raw text; 'keep' sets the whole region aside; "
                        "'raise' fails the row")
    p.add_argument("--keep-malformed", action="store_const", const="keep", dest="on_malformed",
                   help="same as --on-malformed keep")
    p.add_argument("--errors", metavar="FILE",
                   help="write failed rows here instead of into the output (format by suffix; JSONL when the "
                        "output is JSONL)")
    p.add_argument("-j", "--jobs", type=positive_int, default=1, metavar="N",
                   help="worker processes (default 1); output order is kept")
    p.add_argument("--ray", action="store_true",
                   help="run on Ray Data (Parquet input: a file or a directory): a local instance with -j CPUs, "
                        "or the cluster at --ray-address; needs the 'ray' extra")
    p.add_argument("--ray-address", metavar="ADDRESS",
                   help="with --ray: the Ray cluster to use ('auto': the running one); implies --ray")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar and no summary line on stderr (errors are always shown)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ChatparseError as exc:
        return report("parse", exc)


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is: the workers end, the output is left as it was."""



def _run(args: argparse.Namespace) -> int:
    out_format = output_format(args.output, args.output_format, "-o")
    if args.errors:
        output_format(args.errors, None, "--errors")
    refuse_same_file(args.output, "-o", args.input, "input")
    if args.errors:
        refuse_same_file(args.errors, "--errors", args.input, "input")
        refuse_same_file(args.errors, "--errors", args.output, "-o output")
    template, _ = resolve_template(args.template)
    options = RowOptions(output_field=args.output_field, prefix_field=args.prefix_field, tools_field=TOOLS_FIELD,
                         prefix=text_arg(args.prefix, "--prefix") if args.prefix is not None else None,
                         tools=tools_file(args.tools) if args.tools else None, on_malformed=args.on_malformed,
                         finish_reason_field=args.finish_reason_field)
    if args.output == "-" and out_format != "jsonl" and is_terminal(sys.stdout):
        raise CliError(f"Refusing to write {out_format} to a terminal; name a file with -o", code="binary_output")
    if args.errors and out_format == "jsonl" and output_format(args.errors, None, "--errors") != "jsonl":
        raise CliError(f"With JSONL output the --errors file is JSONL too, found {args.errors!r}; name it .jsonl "
                       "(a Parquet or Arrow output may have an errors file of any format)", code="bad_option")
    config = RunConfig(template, options, args.message_field, table_output=out_format != "jsonl",
                       split_errors=args.errors is not None, column_prefix=args.column_prefix)
    worker = Worker(config)
    pretty = args.output == "-" and out_format == "jsonl" and is_terminal(sys.stdout)
    if args.ray or args.ray_address:
        return _run_ray(args, worker, out_format)
    if args.input == "-" and sys.stdin is not None and is_terminal(sys.stdin):
        eprint("chatparse parse: reading JSONL from stdin (Ctrl-D ends it; pass a file to read one)")
    source = open_source(args.input, args.input_format)
    try:
        if source.schema is not None:
            _check_schema(source.schema.names, worker)
            jobs: Iterator[Any] = source.jobs
        else:
            jobs = _checked_lines(source.jobs, options)  # type: ignore[arg-type]
        output = Output(args, worker, out_format, source)
        # a bar on the terminal that shows the rows would be drawn through them: the summary line only
        progress = Progress("parse", source.total, live=is_terminal(sys.stderr) and not pretty, quiet=args.quiet)
        code = _drive(args, output, progress, run_jobs(config, jobs, args.jobs))
    finally:
        source.close()
    if code is None:
        progress.finish(f", {args.jobs} worker{'s' if args.jobs > 1 else ''}")
        return EXIT_FAILED if progress.failed else EXIT_OK
    return code


def _drive(args: argparse.Namespace, output: Output, progress: Progress, results: Iterator[ChunkResult]) -> int | None:
    """Write every result, then put the output in place; on any error, Ctrl-C or SIGTERM the output's
    temporary files go and an existing output stays as it was. Returns the exit code of an interruption."""
    try:
        with _sigterm_as_interrupt(), closing(results):  # type: ignore[type-var]
            for result in results:
                output.put(result)
                progress.add(result)
            output.close()
    except KeyboardInterrupt as exc:
        output.abort()
        progress.stop()
        eprint(f"chatparse parse: {'terminated' if isinstance(exc, Terminated) else 'interrupted'} after "
               f"{progress.rows:,} row{'' if progress.rows == 1 else 's'}; {_left_as_it_was(args, output)}")
        return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
    except BaseException:
        output.abort()
        raise
    finally:
        progress.stop()
    return None


def _left_as_it_was(args: argparse.Namespace, output: Output) -> str:
    files = [path for path in (args.output, args.errors) if path and path != "-"]
    said = [f"{path} left unchanged" if existed else f"nothing written to {path}"
            for path, existed in ((path, path in output.existed) for path in files)]
    if args.output == "-":
        said.insert(0, "the output on stdout is incomplete")
    return "; ".join(said)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    def terminated(_signum: int, _frame: Any) -> None:
        raise Terminated

    try:
        previous = signal.signal(signal.SIGTERM, terminated)
    except ValueError:  # not the main thread (main() called from a thread): nothing to take over
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def tools_file(path: str) -> list[Any]:
    text = read_text_file(path, "--tools")
    try:
        tools = json.loads(text)
    except (ValueError, RecursionError):
        raise CliError(f"Expected a JSON list of tools in {path!r}, found text that is not JSON", code="bad_tools",
                       path=path) from None
    if not isinstance(tools, list):
        raise CliError(f"Expected a JSON list of tools in {path!r}, found a JSON {type(tools).__name__}",
                       code="bad_tools", path=path)
    return tools


SAMPLE_ROWS = 256  # JSONL rows read to decide that a field name is in none of them


def _checked_lines(jobs: Iterator[LinesJob], options: RowOptions) -> Iterator[LinesJob]:
    """The jobs, after the first one's rows were checked for the fields every row needs."""
    first = next(jobs, None)
    if first is None:
        return iter(())
    keys: dict[str, None] = {}
    rows = 0
    for raw in first.lines[:SAMPLE_ROWS]:
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, str):
            record = {options.output_field: record}
        if isinstance(record, dict):
            rows += 1
            keys.update(dict.fromkeys(record))
    if rows:
        _check_fields(list(keys), options, f"the first {rows:,} row{'' if rows == 1 else 's'}", "key")
    return itertools.chain([first], jobs)


def _check_fields(names: list[str], options: RowOptions, where: str, kind: str) -> None:
    """A field every row needs that the input does not have: a setup error naming the flag that fixes it."""
    found = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
    if options.output_field not in names:
        raise CliError(f"Expected the generated text under the {kind} '{options.output_field}', found no such {kind} "
                       f"in {where} (found: {found}); name the {kind} with --output-field NAME",
                       code="missing_field", key=options.output_field)
    if options.prefix is None and options.prefix_field not in names:
        raise CliError(f"Expected the prompt under the {kind} '{options.prefix_field}', found no such {kind} in "
                       f"{where} (found: {found}); name the {kind} with --prefix-field NAME, or pass --prefix TEXT "
                       "(--prefix '' for outputs without a prompt)", code="missing_field", key=options.prefix_field)


def _check_schema(names: list[str], worker: Worker) -> None:
    """A table input's problems that would fail every row are setup errors, found before any parsing."""
    _check_fields(list(names), worker.config.options, "the input's columns", "column")
    typed = [name for name in worker.batch.names.values() if name in names]
    if typed:
        raise CliError(f"The input already has the column(s) {typed}, which chatparse parse adds; rename them, or "
                       "give the added columns a prefix with --column-prefix TEXT", code="column_collision")
    added = [ROW_KEY] + ([] if worker.config.table_output else [worker.config.message_field, ERROR_KEY])
    taken = [name for name in added if name in names]
    if taken:
        raise CliError(f"The input already has the column(s) {taken}, which chatparse parse adds; rename them "
                       "(--message-field names the message)", code="column_collision")


class Output:
    """The output and error sinks; JSONL rows bound for a table wait here until the input ends."""

    def __init__(self, args: argparse.Namespace, worker: Worker, out_format: str, source: Source | None) -> None:
        self.worker = worker
        pretty = args.output == "-" and out_format == "jsonl" and is_terminal(sys.stdout)
        self.existed = {path for path in (args.output, args.errors) if path and path != "-" and os.path.exists(path)}
        self.sink = open_sink(args.output, out_format, pretty=pretty)
        try:
            self.errors = open_sink(args.errors, output_format(args.errors, None, "--errors")) if args.errors \
                else None
        except BaseException:
            self.sink.abort()
            raise
        self.pending: dict[str, Pending] = {}
        if source is not None and source.schema is not None:
            schema = self._typed_schema(source.schema)
            for sink in (self.sink, self.errors):
                if isinstance(sink, TableSink):
                    sink.open(schema)

    def _typed_schema(self, schema: Any) -> Any:
        import pyarrow as pa

        return self.worker.batch.schema(schema).append(pa.field(ROW_KEY, pa.int64()))

    def put(self, result: ChunkResult) -> None:
        self._put(self.sink, result.good, "good")
        if self.errors is not None:
            self._put(self.errors, result.bad, "bad")

    def _put(self, sink: JsonlSink | TableSink, data: Any, part: str) -> None:
        if isinstance(data, Pending):
            if isinstance(sink, JsonlSink):  # JSONL errors file of a run whose output is a table
                sink.write_lines([_pending_line(self.worker, data, i) for i in range(len(data.numbers))])
            else:
                self.pending.setdefault(part, Pending()).extend(data)
        elif isinstance(sink, JsonlSink):
            sink.write_lines(data if isinstance(data, list) else self.worker.typed_json(data, _input_names(self.worker, data)))
        elif data is not None and not isinstance(data, list):
            sink.write_batch(data)
        elif data:
            raise CliError("internal: JSONL rows for a table output", code="internal_error")

    def close(self) -> None:
        """Finish both files, then put them in place."""
        for part, sink in (("good", self.sink), ("bad", self.errors)):
            if isinstance(sink, TableSink) and sink.writer is None:  # JSONL input (or no rows): build it now
                table = table_of(self.pending.pop(part, Pending()), self.worker)
                sink.open(table.schema)
                for batch in table.to_batches():
                    sink.write_batch(batch)
        self.sink.close()
        if self.errors is not None:
            self.errors.close()

    def abort(self) -> None:
        for sink in (self.sink, self.errors):
            if sink is not None:
                sink.abort()


def _pending_line(worker: Worker, pending: Pending, index: int) -> bytes:
    return json_bytes(worker.json_row(pending.records[index], pending.outcomes[index], pending.numbers[index]))


def _input_names(worker: Worker, typed: Any) -> list[str]:
    added = {*worker.batch.names.values(), ROW_KEY}
    return [name for name in typed.schema.names if name not in added]


def _run_ray(args: argparse.Namespace, worker: Worker, out_format: str) -> int:
    from chatparse.cli.ray_run import ray_tables

    tables = ray_tables(args.input, args.ray_address, worker.batch, cpus=args.jobs,
                        check=lambda names: _check_schema(names, worker))
    first = next(tables, None)  # Ray is started and the input read before any output is opened
    output = Output(args, worker, out_format, None)
    progress = Progress.for_stderr("parse", None, quiet=args.quiet)
    code = _drive(args, output, progress, _ray_results(worker, itertools.chain([first] if first else [], tables)))
    if code is None:
        progress.finish(", Ray")
        return EXIT_FAILED if progress.failed else EXIT_OK
    return code


def _ray_results(worker: Worker, tables: Iterator[tuple[Any, list[str]]]) -> Iterator[ChunkResult]:
    start = 0
    for table, names in tables:
        typed = with_row_numbers(table, start)
        start += table.num_rows
        yield worker.route(typed, names, consumed=table.num_rows)


__all__ = ["LINE_KEY", "ROW_KEY", "add_parser", "run"]
