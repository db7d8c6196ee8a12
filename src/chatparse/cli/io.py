"""Shared CLI plumbing: reading JSONL generations, loading a template by name or file, error output."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import IO, Any

from chatparse.errors import ChatparseError
from chatparse.template.compile import CompiledTemplate, load_template


def open_input(path: str) -> IO[str]:
    return sys.stdin if path == "-" else open(path, encoding="utf-8")


def read_records(stream: IO[str], *, prefix_key: str = "prefix") -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """Yield ``(line_number, record, error)`` per non-blank line; a bare JSON string is an output."""
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, None, f"line {number}: expected a JSON object or string, found invalid JSON ({exc.msg})"
            continue
        if isinstance(data, str):
            yield number, {"output": data, "prefix": ""}, ""
        elif isinstance(data, dict) and isinstance(data.get("output"), str):
            prefix = data.get(prefix_key, "")
            record = {**data, "prefix": prefix if isinstance(prefix, str) else ""}
            yield number, record, ""
        else:
            yield number, None, f"line {number}: expected {{\"output\": str, \"{prefix_key}\": str}} or a JSON string"


def load_template_arg(value: str) -> CompiledTemplate:
    return load_template(value)


def error_line(exc: ChatparseError, line: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"error": {"code": exc.code, "message": str(exc), **exc.location}}
    if line is not None:
        out["line"] = line
    return out


def eprint(*parts: Any, end: str = "\n") -> None:
    print(*parts, file=sys.stderr, end=end, flush=True)
