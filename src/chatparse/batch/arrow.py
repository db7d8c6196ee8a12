"""Tables in, tables out: an Arrow table or record batch, a pandas DataFrame or a dict of columns (what
``datasets.Dataset.map(batched=True)`` and ``ray.data.Dataset.map_batches`` hand over) gains the parsed
message as typed columns; every input column passes through unchanged. Needs pyarrow for Arrow input."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from chatparse.batch.rows import (
    FINISH_REASON_FIELD,
    OUTPUT_FIELD,
    PREFIX_FIELD,
    TOOLS_FIELD,
    Outcome,
    RowOptions,
    RowParser,
    failed,
)
from chatparse.engine.parser import OnMalformed
from chatparse.errors import UsageError
from chatparse.limits import Limits
from chatparse.template.compile import CompiledTemplate

MESSAGE_COLUMN = "message"
# The typed columns, in order; ``message`` (renamable) is the whole message as JSON, lossless.
COLUMNS = ("role", "thinking", "content", "tool_calls", "malformed", MESSAGE_COLUMN,
           "error_code", "error_message", "error_location")


def require(module: str, purpose: str, extra: str) -> Any:
    """An optional dependency, or a ``missing_dependency`` UsageError naming the extra that installs it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"{purpose} need {module.split('.')[0]}, which is not installed: install the '{extra}' "
                         f"extra from a chatparse checkout (pip install '.[{extra}]'; chatparse is not on PyPI)",
                         code="missing_dependency") from None


def _pa() -> Any:
    return require("pyarrow", "Arrow tables", "batch")


def column_types() -> dict[str, Any]:
    """The Arrow type of each typed column (by its default name)."""
    pa = _pa()
    text = pa.string()
    return {
        "role": text,
        "thinking": text,
        "content": text,
        "tool_calls": pa.list_(pa.struct([("name", text), ("arguments", text)])),
        "malformed": pa.list_(pa.struct([("field", text), ("code", text), ("raw", text), ("error", text)])),
        MESSAGE_COLUMN: text,
        "error_code": text,
        "error_message": text,
        "error_location": pa.struct([("field", text), ("key", text), ("offset", pa.int64()), ("path", text)]),
    }


class BatchParser:
    """A picklable callable ``batch -> batch`` (the template compiles once per process, on first use).

    ``output_column``, ``prefix_column``, ``tools_column`` and ``finish_reason_column`` name the input
    columns; ``prefix`` stands in
    for a missing prompt (``None``: such a row fails with ``prefix_required``; ``""`` opts out); ``tools``
    is one tool list for every row (a row's own ``tools``, a list or its JSON text, wins). Output columns
    are ``column_prefix`` + role, thinking, content, tool_calls (list of {name, arguments as JSON text}),
    malformed, the whole message as JSON (``message_column``), error_code, error_message, error_location.
    A failed row has null message columns and its error; one bad row never fails the batch. ``limits``:
    the engine's regex time budgets (``chatparse.Limits``)."""

    def __init__(
        self,
        template: Any,
        *,
        output_column: str = OUTPUT_FIELD,
        prefix_column: str = PREFIX_FIELD,
        tools_column: str = TOOLS_FIELD,
        finish_reason_column: str = FINISH_REASON_FIELD,
        prefix: str | None = None,
        tools: Sequence[Any] | None = None,
        on_malformed: OnMalformed = "recover",
        message_column: str = MESSAGE_COLUMN,
        column_prefix: str = "",
        limits: Limits | None = None,
    ) -> None:
        self.template_source = template.to_dict() if isinstance(template, CompiledTemplate) else template
        self.options = RowOptions(output_field=output_column, prefix_field=prefix_column, tools_field=tools_column,
                                  finish_reason_field=finish_reason_column, prefix=prefix, tools=tools, on_malformed=on_malformed, limits=limits)
        self.names = {name: column_prefix + (message_column if name == MESSAGE_COLUMN else name)
                      for name in COLUMNS}
        self._rows: RowParser | None = RowParser(template, self.options)  # fails early on a bad template

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_rows": None}  # compiled templates stay in their process

    @property
    def rows(self) -> RowParser:
        if self._rows is None:
            self._rows = RowParser(self.template_source, self.options)
        return self._rows

    def schema(self, input_schema: Any) -> Any:
        """The output schema for an Arrow input schema."""
        pa = _pa()
        self._check_columns(input_schema.names)
        types = column_types()
        return pa.schema([*input_schema, *(pa.field(self.names[c], types[c]) for c in COLUMNS)])

    def __call__(self, batch: Any) -> Any:
        """The batch with the typed columns added, as the same kind of object."""
        kind = type(batch).__module__.split(".")[0]
        if kind == "pyarrow":
            return self._arrow(batch)
        if kind == "pandas":
            return self._pandas(batch)
        if kind == "datasets" and hasattr(batch, "pa_table"):
            # datasets infers a dict batch's types from its values (an all-null column has none), so its
            # Arrow table is parsed instead: every batch then has the same schema
            return self._arrow(batch.pa_table)
        if isinstance(batch, Mapping):
            return self._columns(batch)
        raise UsageError(f"Expected a pyarrow Table or RecordBatch, a pandas DataFrame or a dict of columns, found "
                         f"{type(batch).__name__}", code="bad_batch")

    def outcomes(self, names: Sequence[str], column: Any, length: int) -> list[Outcome]:
        """Each row's outcome; ``column(name)`` returns a column's values as a list."""
        self._check_columns(names)
        o = self.options
        if o.output_field not in names:
            raise UsageError(f"Expected a column '{o.output_field}' with the generated text, found the columns "
                             f"{list(names)}; name it with output_column=", code="missing_column",
                             key=o.output_field)
        if o.prefix_field not in names and o.prefix is None:
            raise UsageError(f"Expected a column '{o.prefix_field}' with the prompts, found the columns "
                             f"{list(names)}; name it with prefix_column=, or pass prefix=\"\" to opt out",
                             code="missing_column", key=o.prefix_field)
        absent = [None] * length
        outputs = column(o.output_field)
        prefixes = column(o.prefix_field) if o.prefix_field in names else absent
        tools = column(o.tools_field) if o.tools_field in names else absent
        reasons = column(o.finish_reason_field) if o.finish_reason_field in names else absent
        parse = self.rows.parse_values
        return [parse(out, pre, tl, why) for out, pre, tl, why in zip(outputs, prefixes, tools, reasons, strict=True)]

    def columns(self, outcomes: Sequence[Outcome]) -> dict[str, list[Any]]:
        """The typed columns of these outcomes as Python lists, keyed by output name."""
        values: dict[str, list[Any]] = {name: [] for name in COLUMNS}
        for outcome in outcomes:
            row = _row_values(outcome)
            for name in COLUMNS:
                values[name].append(row.get(name))
        return {self.names[name]: values[name] for name in COLUMNS}

    def arrays(self, outcomes: Sequence[Outcome]) -> list[Any]:
        """The typed columns as Arrow arrays, in ``COLUMNS`` order."""
        pa = _pa()
        types = column_types()
        lists = self.columns(outcomes)
        return [pa.array(lists[self.names[name]], type=types[name]) for name in COLUMNS]

    def _check_columns(self, names: Sequence[str]) -> None:
        taken = [name for name in self.names.values() if name in names]
        if taken:
            raise UsageError(f"The input already has the output column(s) {taken}; rename them, or give the new "
                             "columns a prefix (column_prefix=, --column-prefix)", code="column_collision")

    def _arrow(self, batch: Any) -> Any:
        pa = _pa()
        schema = self.schema(batch.schema)
        outcomes = self.outcomes(batch.schema.names, lambda n: batch.column(n).to_pylist(), batch.num_rows)
        arrays = [*batch.columns, *self.arrays(outcomes)]
        if isinstance(batch, pa.RecordBatch):
            return pa.RecordBatch.from_arrays(arrays, schema=schema)
        return pa.Table.from_arrays(arrays, schema=schema)

    def _pandas(self, frame: Any) -> Any:
        outcomes = self.outcomes(list(frame.columns), lambda n: [_none_if_na(v) for v in frame[n].tolist()],
                                 len(frame))
        out = frame.copy()
        for name, values in self.columns(outcomes).items():
            out[name] = values
        return out

    def _columns(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        lengths = {len(values) for values in batch.values()}
        if len(lengths) > 1:
            raise UsageError(f"Expected columns of one length, found lengths {sorted(lengths)}", code="bad_batch")
        outcomes = self.outcomes(list(batch), lambda n: _as_list(batch[n]), lengths.pop() if lengths else 0)
        return {**batch, **self.columns(outcomes)}


def parse_batch(batch: Any, template: Any, **options: Any) -> Any:
    """``BatchParser(template, **options)(batch)``: one call for one batch."""
    return BatchParser(template, **options)(batch)


def _none_if_na(value: Any) -> Any:
    """pandas' missing values (NaN in a text column, pd.NA) as None, the missing value of a row."""
    if (isinstance(value, float) and value != value) or type(value).__name__ == "NAType":
        return None
    return value


def _as_list(values: Any) -> list[Any]:
    return values.tolist() if hasattr(values, "tolist") else list(values)


def _row_values(outcome: Outcome) -> dict[str, Any]:
    """One row of the typed columns (default names); a message UTF-8 cannot store becomes an error."""
    message = outcome.message
    if message is not None:
        text = json.dumps(message, ensure_ascii=False, default=str)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate (from a JSON '\ud800' escape in the input)
            outcome = failed("unencodable_text", f"The message holds a lone surrogate at character {exc.start} of "
                             "its JSON, which UTF-8 (Arrow, Parquet) cannot store; JSONL output keeps it escaped")
        else:
            return {
                "role": _text(message.get("role")),
                "thinking": _text(message.get("thinking")),
                "content": _text(message.get("content")),
                "tool_calls": [_call(call) for call in message.get("tool_calls") or ()],
                "malformed": [_malformed(item) for item in message.get("malformed") or ()],
                MESSAGE_COLUMN: text,
            }
    error = outcome.error or {}
    return {
        "error_code": error.get("code"),
        "error_message": error.get("message"),
        "error_location": {"field": _text(error.get("field")), "key": _text(error.get("key")),
                           "offset": error.get("offset") if isinstance(error.get("offset"), int) else None,
                           "path": _text(error.get("path"))},
    }


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _call(call: Any) -> dict[str, str | None]:
    """A tool call as {name, arguments}: OpenAI's {'function': {...}} shape or a bare {name, arguments}."""
    if not isinstance(call, Mapping):
        return {"name": None, "arguments": _text(call)}
    function = call.get("function")
    source = function if isinstance(function, Mapping) else call
    return {"name": _text(source.get("name")), "arguments": _text(source.get("arguments"))}


def _malformed(item: Any) -> dict[str, str | None]:
    if not isinstance(item, Mapping):
        return {"field": None, "code": None, "raw": _text(item), "error": None}
    return {key: _text(item.get(key)) for key in ("field", "code", "raw", "error")}


__all__ = ["COLUMNS", "MESSAGE_COLUMN", "BatchParser", "column_types", "parse_batch", "require"]
