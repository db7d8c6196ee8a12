"""Shared CLI plumbing: exit codes, one error line format, reading files and ``@FILE`` arguments without
tracebacks, resolving ``--template`` (name, file, model directory or model id) and writing JSON lines."""

from __future__ import annotations

import difflib
import errno
import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, BinaryIO

from chatparse.errors import ChatparseError
from chatparse.template.compile import CompiledTemplate, load_template

EXIT_OK = 0
EXIT_FAILED = 1  # some inputs failed (rows, lines, checks); the rest was processed
EXIT_USAGE = 2  # usage or setup error: bad options, unreadable input, unknown or invalid template
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT): an existing output file is left as it was
EXIT_TERMINATED = 143  # SIGTERM, the same way

EXIT_CODES_HELP = """exit codes:
  0  every input was processed without error
  1  some inputs failed (each is reported with its code and location; the rest was processed)
  2  usage or setup error (bad option, missing or unreadable file, unknown or invalid template,
     a failed write: disk full, read-only or missing directory)
  130 interrupted (Ctrl-C), 143 terminated (SIGTERM): an existing output file is left unchanged"""

_NOT_FOUND = ("template_not_found", "unknown_template")


class CliError(ChatparseError):
    """A usage or setup error of the command line (exit code 2)."""

    code = "usage_error"


def eprint(*parts: Any, end: str = "\n") -> None:
    print(*parts, file=sys.stderr, end=end, flush=True)


def report(command: str, exc: ChatparseError) -> int:
    """One line on stderr, ``chatparse CMD: error [code] (location): message``; returns exit code 2."""
    where = ", ".join(f"{k}={v}" for k, v in exc.location.items())
    message = " ".join(safe_text(str(exc)).split())  # one line, whatever a library's message holds
    eprint(f"chatparse {command}: error [{exc.code}]{' (' + where + ')' if where else ''}: {message}")
    return EXIT_USAGE


def safe_text(text: str) -> str:
    """Text any terminal encoding can print: lone surrogates (from JSON escapes) shown escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# --- reading ----------------------------------------------------------------------------------------------


def open_binary(path: str) -> BinaryIO:
    """An input file (``-``: stdin) opened for bytes; a missing file or a directory is a ``CliError``."""
    if path == "-":
        if sys.stdin is None:
            raise CliError("Expected input on stdin, found stdin closed; pass an input file", code="no_stdin",
                           path="-")
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise CliError(f"Expected an input file, found no file at {path!r}", code="file_not_found",
                       path=path) from None
    except IsADirectoryError:
        raise CliError(f"Expected an input file, found the directory {path!r}; pass a file (or - for stdin)",
                       code="is_a_directory", path=path) from None
    except OSError as exc:
        raise CliError(f"Cannot read {path!r}: {exc.strerror}", code="unreadable_input", path=path) from None


def read_text_file(path: str, what: str) -> str:
    """A whole UTF-8 text file; missing, directory or binary is a ``CliError`` naming ``what`` it was for."""
    with open_binary(path) as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"Expected UTF-8 text for {what} in {path!r}, found bytes that are not UTF-8 at byte "
                       f"{exc.start} (a binary file?)", code="invalid_utf8", path=path, offset=exc.start) from None


def text_arg(value: str, what: str) -> str:
    """An option's text, or the contents of the file named by ``@FILE``."""
    return read_text_file(value[1:], what) if value.startswith("@") else value


def same_file(first: str, second: str) -> bool:
    """Whether two paths name one file (the same path, a symlink or a hard link to it); ``-`` never does."""
    if first == "-" or second == "-":
        return False
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def refuse_same_file(output: str, output_option: str, input_path: str, input_option: str) -> None:
    """Writing over a file this run reads would destroy it: a setup error, before anything is opened."""
    if same_file(output, input_path):
        raise CliError(f"Expected {output_option} to name a new file, found {output!r}, which is the {input_option} "
                       f"{input_path!r} (the same file, a link or a symlink to it); writing it would destroy the "
                       "input. Name another output file", code="output_is_input", path=output)


class OutputFile:
    """An output opened for bytes. A regular file is written to a temporary file beside it and renamed into
    place by ``commit()``; ``abort()`` (an error, Ctrl-C) removes that file, so an existing output is never
    left half written. stdout and devices (``/dev/null``) are written in place."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.temp: str | None = None
        self.final = path
        if path == "-":
            if sys.stdout is None:
                raise CliError("Expected to write to stdout, found stdout closed; name an output file with -o",
                               code="no_stdout", path="-")
            self.handle: BinaryIO = sys.stdout.buffer
            return
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise write_error(path, exc) from None
        if mode is not None and not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):
                raise CliError(f"Expected an output file, found the directory {path!r}; name a file inside it",
                               code="is_a_directory", path=path)
            self.handle = self._open_in_place(path)  # a device or a pipe: nothing to rename over
            return
        self.final = os.path.realpath(path)  # a symlink keeps pointing at the file it names
        directory = os.path.dirname(self.final)
        if not os.path.isdir(directory):
            raise CliError(f"Cannot write {path!r}: the directory {directory!r} does not exist; create it first",
                           code="unwritable_output", path=path)
        try:
            fd, self.temp = tempfile.mkstemp(prefix=f".{os.path.basename(self.final)}.", suffix=".part",
                                             dir=directory)
        except OSError as exc:
            raise write_error(path, exc) from None
        os.fchmod(fd, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        self.handle = os.fdopen(fd, "wb")

    @staticmethod
    def _open_in_place(path: str) -> BinaryIO:
        try:
            return open(path, "wb")
        except OSError as exc:
            raise write_error(path, exc) from None

    def write(self, data: bytes) -> None:
        try:
            self.handle.write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise write_error(self.path, exc, in_place=self.temp is None) from None

    def commit(self) -> None:
        """Flush, close and rename the temporary file over the final name."""
        try:
            self.handle.flush()
            if self.path == "-":
                return
            if self.temp is not None:
                os.fsync(self.handle.fileno())
            self.handle.close()
            if self.temp is not None:
                os.replace(self.temp, self.final)
                self.temp = None
        except BrokenPipeError:
            raise
        except OSError as exc:
            in_place = self.temp is None
            self.abort()
            raise write_error(self.path, exc, in_place=in_place) from None

    def abort(self) -> None:
        """Drop what was written: the temporary file goes, the final name keeps what it held."""
        if self.path == "-":
            return
        try:
            self.handle.close()
        except OSError:
            pass  # e.g. the disk is full: the buffered bytes cannot be written, and are not wanted
        if self.temp is not None:
            try:
                os.unlink(self.temp)
            except OSError:
                pass
            self.temp = None


def open_output(path: str) -> OutputFile:
    return OutputFile(path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_WRITE_CODES = {errno.ENOSPC: "disk_full", errno.EDQUOT: "disk_full", errno.EROFS: "read_only_output",
                errno.EACCES: "unwritable_output", errno.EPERM: "unwritable_output"}


def write_error(path: str, exc: OSError, *, in_place: bool = False) -> CliError:
    """A failed write as one named error: the path, the system's reason, and that nothing was replaced."""
    where = "stdout" if path == "-" else repr(path)
    kept = "" if path == "-" or in_place else "; an existing file of that name is left unchanged"
    reason = exc.strerror or str(exc) or type(exc).__name__
    return CliError(f"Cannot write {where}: {reason}{kept}", code=_WRITE_CODES.get(exc.errno or 0, "write_failed"),
                    path=path)


# --- templates -----------------------------------------------------------------------------------------------


def resolve_template(value: str) -> tuple[Any, CompiledTemplate]:
    """``--template``: a built-in name (any case), a template file, a model directory or a Hugging Face model
    id (detected). Returns what workers can load again and the compiled template; ``CliError`` or the
    template's own ``TemplateError`` otherwise. A value written as a path (``./``, ``../``, ``/``, ``~``,
    ``.json``, ``.jinja``) that names nothing is ``file_not_found``, never a model id."""
    if looks_like_path(value) and not Path(value).expanduser().exists():
        raise CliError(f"Expected a template file or a model directory at {value!r}, found no such file or "
                       "directory. Check the path, or name a built-in template (`chatparse templates list`)",
                       code="file_not_found", path=value)
    try:
        return value, load_template(value)
    except ChatparseError as exc:
        if exc.code not in _NOT_FOUND:
            raise
    name = _builtin_name(value)
    if name is None and "/" in value and not Path(value).exists():
        name = _detected(value)
    if name is None:
        raise _unknown_template(value)
    return name, load_template(name)


def looks_like_path(value: str) -> bool:
    """Written as a path rather than a name or a model id (``org/model``)."""
    return value.startswith(("./", "../", "/", "~", ".\\")) or value in (".", "..") or \
        value.lower().endswith((".json", ".jinja", ".j2"))


def _builtin_name(value: str) -> str | None:
    from chatparse.templates import list_templates
    from chatparse.templates.registry import normalize_name

    wanted = normalize_name(value)
    return next((name for name in list_templates() if normalize_name(name) == wanted), None)


def _detected(model_id: str) -> str | None:
    from chatparse.templates import detect_template

    name = detect_template(model_id=model_id)
    if name is not None:
        eprint(f"chatparse: using the built-in template {name!r} for the model id {model_id!r}")
    return name


def _unknown_template(value: str) -> CliError:
    from chatparse.templates import list_templates
    from chatparse.templates.registry import normalize_name

    if "/" in value and not Path(value).exists():
        return CliError(
            f"Expected a template, found {value!r}: no built-in template is detected for that model id and no "
            "such file exists. Name a built-in template (`chatparse templates list`), or pass the model's "
            "directory (`chatparse detect DIR`).", code="unknown_template", key=value)
    names = {normalize_name(name): name for name in list_templates()}
    close = difflib.get_close_matches(normalize_name(value), list(names), n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(repr(names[c]) for c in close)}?" if close else ""
    return CliError(
        f"Expected a built-in template name, a template file, a model directory or a model id; found {value!r}, "
        f"which is none of these.{hint} `chatparse templates list` lists the built-in names.",
        code="unknown_template", key=value)


# --- writing ---------------------------------------------------------------------------------------------------


def json_bytes(obj: Any) -> bytes:
    """One JSON line as UTF-8; a lone surrogate (UTF-8 cannot hold it) is kept as its JSON escape."""
    text = json.dumps(obj, ensure_ascii=False, default=json_default)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(obj, default=json_default).encode("ascii") + b"\n"


def json_default(value: Any) -> Any:
    """Arrow and pandas values JSON lacks: dates as ISO text, bytes as UTF-8 text (else hex), others as str."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data.hex()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def is_terminal(stream: IO[Any]) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def write_json(obj: Any, *, pretty: bool | None = None, indent: int | None = 2) -> None:
    """A JSON value on stdout: highlighted (and indented) on a terminal, one plain line otherwise."""
    if pretty is None:
        pretty = is_terminal(sys.stdout)
    if pretty:
        from rich.console import Console

        Console(highlight=True, soft_wrap=True).print_json(json_bytes(obj).decode("utf-8"), indent=indent)
    else:
        sys.stdout.buffer.write(json_bytes(obj))
        sys.stdout.buffer.flush()
