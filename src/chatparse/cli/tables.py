"""Input and output formats of ``chatparse parse``: JSONL (a UTF-8 BOM is skipped), Parquet and Arrow IPC,
from files or stdin. Readers cut the input into numbered jobs; writers take finished chunks in order."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from chatparse.batch.arrow import require
from chatparse.cli.io import CliError, OutputFile, open_binary, write_error

FORMATS = ("jsonl", "parquet", "arrow")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow",
             ".arrows": "arrow"}
_JSONL_SUFFIXES = ("", ".jsonl", ".ndjson", ".json", ".jsonlines", ".txt", ".out")
_NAMES = {"parquet": "a Parquet file", "arrow": "an Arrow IPC file or stream"}
BOM = b"\xef\xbb\xbf"
GZIP = b"\x1f\x8b"
ZSTD = b"\x28\xb5\x2f\xfd"
SNIFF = 4096
LINES_PER_JOB = 256
ROWS_PER_JOB = 1024


@dataclass
class LinesJob:
    """JSONL lines; ``start`` is the 1-based number of the first (blank lines are kept, to keep the count)."""

    start: int
    lines: list[bytes]


@dataclass
class BatchJob:
    """A slice of a table; ``start`` is the 0-based index of its first row."""

    start: int
    batch: Any  # pyarrow.RecordBatch


@dataclass
class Source:
    """An opened input: its format, the jobs, the row count when known and the Arrow schema of a table."""

    format: str
    jobs: Iterator[LinesJob] | Iterator[BatchJob]
    total: int | None = None
    schema: Any = None
    _handles: list[BinaryIO] = field(default_factory=list)

    def close(self) -> None:
        for handle in self._handles:  # files this source opened (never stdin)
            handle.close()


def format_for(path: str, given: str | None, default: str = "jsonl") -> str:
    """The format named by the option, else by the file's suffix, else ``default`` (also for stdin/stdout)."""
    if given:
        return given
    return default if path == "-" else _SUFFIXES.get(Path(path).suffix.lower(), default)


def output_format(path: str, given: str | None, option: str) -> str:
    """The format of an output file: the option's, else its suffix's. A suffix chatparse does not write
    (``.csv``, ``.gz``) is refused, so the file never holds something other than its name says."""
    if given or path == "-":
        return format_for(path, given)
    suffix = Path(path).suffix.lower()
    if suffix in _SUFFIXES or suffix in _JSONL_SUFFIXES or Path(path).name.startswith("/dev/") or \
            path.startswith("/dev/"):
        return format_for(path, None)
    raise CliError(f"Expected {option} to end in .jsonl, .parquet or .arrow, found {path!r}; chatparse does not "
                   f"write {suffix} files. Name the file with one of those suffixes, or say the format with "
                   f"--{'output' if option == '-o' else 'errors'}-format", code="bad_format", path=path)


def pyarrow_module() -> Any:
    require("pyarrow.parquet", "Parquet and Arrow files", "batch")
    return require("pyarrow", "Parquet and Arrow files", "batch")


def open_source(path: str, given: str | None) -> Source:
    handle = open_binary(path)
    if not hasattr(handle, "peek"):
        handle = io.BufferedReader(handle)  # type: ignore[arg-type,type-var]  # to peek
    head = handle.peek(SNIFF)[:SNIFF]
    if head.startswith(GZIP):
        return _gzip_source(path, handle, given)
    if head.startswith(ZSTD):
        handle.close()
        raise CliError(f"Expected JSONL, Parquet or Arrow input, found zstd-compressed data in {path!r}; "
                       f"decompress it on the way in: zstdcat {path} | chatparse parse ...", code="compressed_input",
                       path=path)
    kind = given or _sniff(head) or format_for(path, None)
    if kind == "jsonl":
        if given is None and b"\0" in head.removeprefix(BOM)[:SNIFF]:
            handle.close()
            raise CliError(f"Expected JSONL, Parquet or Arrow input, found binary data in {path!r} (a NUL byte in "
                           "its first bytes); name the format with --input-format if it is one of these",
                           code="binary_input", path=path)
        total = _count_lines(path) if path != "-" else None
        return Source("jsonl", _line_jobs(handle), total, _handles=[] if path == "-" else [handle])
    return _table_source(path, handle, kind)


def _gzip_source(path: str, handle: BinaryIO, given: str | None) -> Source:
    """gzip input (``rollouts.jsonl.gz``): read through ``gzip``; JSONL is streamed, a table is read whole."""
    import gzip

    inner: Any = gzip.GzipFile(fileobj=handle, mode="rb")
    reader = io.BufferedReader(inner)
    owned: list[BinaryIO] = [reader] if path == "-" else [reader, handle]
    try:
        head = reader.peek(SNIFF)[:SNIFF]
    except (OSError, EOFError) as exc:
        for opened in owned:
            opened.close()
        raise CliError(f"Expected gzip data in {path!r}, found data gzip cannot read: {exc}",
                       code="unreadable_input", path=path) from None
    kind = given or _sniff(head) or "jsonl"
    if kind == "jsonl":
        return Source("jsonl", _line_jobs(reader), None, _handles=owned)
    data = io.BytesIO(reader.read())
    for opened in owned:
        opened.close()
    return _table_source("-", data, kind, name=path)  # type: ignore[arg-type]


def _sniff(head: bytes) -> str | None:
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1") or head.startswith(b"\xff\xff\xff\xff"):
        return "arrow"
    return None


def _count_lines(path: str) -> int | None:
    """Lines in a regular file (for the progress bar); None for pipes and devices."""
    try:
        if not Path(path).is_file():
            return None
        count = last = 0
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                count += block.count(b"\n")
                last = block[-1]
        return count + (last not in (0, 10))
    except OSError:
        return None


def _line_jobs(handle: BinaryIO) -> Iterator[LinesJob]:
    start, lines = 1, []
    for number, line in enumerate(_read_lines(handle), 1):
        if number == 1:
            line = line.removeprefix(BOM)
        lines.append(line)
        if len(lines) == LINES_PER_JOB:
            yield LinesJob(start, lines)
            start, lines = number + 1, []
    if lines:
        yield LinesJob(start, lines)


def _read_lines(handle: BinaryIO) -> Iterator[bytes]:
    """The lines of a (possibly compressed) input; data that cannot be read midway is a ``CliError``."""
    iterator = iter(handle)
    number = 0
    while True:
        try:
            line = next(iterator)
        except StopIteration:
            return
        except (OSError, EOFError) as exc:
            raise CliError(f"Expected readable input after line {number}, found data that cannot be read: {exc}",
                           code="unreadable_input", offset=number) from None
        number += 1
        yield line


def _table_source(path: str, handle: BinaryIO, kind: str, name: str | None = None) -> Source:
    pa = pyarrow_module()
    source: Any = handle if path != "-" else io.BytesIO(handle.read())  # Parquet needs to seek
    owned = [] if path == "-" else [handle]
    label = name or path
    try:
        if kind == "parquet":
            parquet = pa.parquet.ParquetFile(source)
            batches = parquet.iter_batches(batch_size=ROWS_PER_JOB)
            return Source("parquet", _batch_jobs(batches), parquet.metadata.num_rows, parquet.schema_arrow, owned)
        if kind == "arrow":  # a file is memory-mapped: its batches are read in place
            return _arrow_source(pa, pa.memory_map(path) if path != "-" else source, owned)
    except (pa.ArrowException, OSError) as exc:
        for opened in owned:
            opened.close()
        raise CliError(f"Expected {_NAMES[kind]} in {label!r}, found data pyarrow cannot read: {exc}",
                       code="unreadable_input", path=label) from None
    raise CliError(f"Unknown input format {kind!r}; expected one of {', '.join(FORMATS)}", code="bad_format")


def _arrow_source(pa: Any, source: Any, owned: list[BinaryIO]) -> Source:
    """The IPC file format (``ARROW1``, random access) or the stream format."""
    head = source.read(6)
    source.seek(0)
    if head == b"ARROW1":
        reader = pa.ipc.open_file(source)
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        return Source("arrow", _batch_jobs(iter(batches)), sum(b.num_rows for b in batches), reader.schema, owned)
    stream = pa.ipc.open_stream(source)
    return Source("arrow", _batch_jobs(stream), None, stream.schema, owned)


def _batch_jobs(batches: Any) -> Iterator[BatchJob]:
    """Slices of at most ``ROWS_PER_JOB`` rows; data that turns out unreadable midway is a ``CliError``."""
    import pyarrow

    start = 0
    iterator = iter(batches)
    while True:
        try:
            batch = next(iterator)
        except StopIteration:
            return
        except (pyarrow.ArrowException, OSError) as exc:
            raise CliError(f"Expected readable table data after row {start}, found data pyarrow cannot read: "
                           f"{exc}", code="unreadable_input", offset=start) from None
        for offset in range(0, batch.num_rows, ROWS_PER_JOB):
            piece = batch.slice(offset, ROWS_PER_JOB)
            yield BatchJob(start, piece)
            start += piece.num_rows


# --- writers -------------------------------------------------------------------------------------------------


class JsonlSink:
    """JSON lines to a file or stdout; ``pretty`` prints each row indented and highlighted (a terminal)."""

    format = "jsonl"

    def __init__(self, path: str, *, pretty: bool = False) -> None:
        self.output = OutputFile(path)
        self.path = path
        self.pretty = pretty
        self.rows = 0

    def write_lines(self, data: list[bytes]) -> None:
        self.rows += len(data)
        if self.pretty:
            from rich.console import Console

            console = Console(highlight=True, soft_wrap=True)
            for line in data:
                console.print_json(line.decode("utf-8"))
            return
        self.output.write(b"".join(data))

    def close(self) -> None:
        """Finish the file: renamed into place (a file) or flushed (stdout)."""
        self.output.commit()

    def abort(self) -> None:
        self.output.abort()


class TableSink:
    """Arrow record batches to a Parquet or Arrow IPC file (or stdout); the first batch fixes the schema."""

    def __init__(self, path: str, kind: str) -> None:
        self.pa = pyarrow_module()
        self.format = kind
        self.path = path
        self.output = OutputFile(path)
        self.writer: Any = None
        self.rows = 0

    def write_batch(self, batch: Any) -> None:
        """A record batch or a table (the schema of every write must be the first one's)."""
        if self.writer is None:
            self.open(batch.schema)
        self.rows += batch.num_rows
        self._writing(self.writer.write, batch)

    def open(self, schema: Any) -> None:
        if self.format == "parquet":
            self.writer = self._writing(self.pa.parquet.ParquetWriter, self.output.handle, schema)
        else:
            self.writer = self._writing(self.pa.ipc.new_file, self.output.handle, schema)

    def _writing(self, action: Any, *args: Any) -> Any:
        """A pyarrow write; a failed one (disk full) is a named error, the temporary file is dropped."""
        try:
            return action(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise write_error(self.path, exc, in_place=self.output.temp is None) from None
        except self.pa.ArrowException as exc:
            raise write_error(self.path, OSError(str(exc)), in_place=self.output.temp is None) from None

    def close(self) -> None:
        """Finish the file: the table's footer written, then renamed into place (a file) or flushed."""
        if self.writer is not None:
            self._writing(self.writer.close)
            self.writer = None
        self.output.commit()

    def abort(self) -> None:
        """Drop the table: its writer is closed quietly (it would write to a closed file at exit)."""
        writer, self.writer = self.writer, None
        if writer is not None:
            try:
                writer.close()
            except Exception:  # the disk is full, or the file is already gone: it is dropped anyway
                pass
            if hasattr(writer, "is_open"):
                writer.is_open = False
        self.output.abort()


def open_sink(path: str, kind: str, *, pretty: bool = False) -> JsonlSink | TableSink:
    if kind == "jsonl":
        return JsonlSink(path, pretty=pretty)
    if kind in ("parquet", "arrow"):
        return TableSink(path, kind)
    raise CliError(f"Unknown output format {kind!r}; expected one of {', '.join(FORMATS)}", code="bad_format")
