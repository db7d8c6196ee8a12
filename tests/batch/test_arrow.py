"""Tables in, tables out: typed columns beside every input column, for Arrow, pandas, dicts of columns and
``datasets.Dataset.map(batched=True)``; a bad row fails alone."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from chatparse.batch import COLUMNS, BatchParser, parse_batch
from chatparse.errors import UsageError

pa = pytest.importorskip("pyarrow")

PREFIX = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
CALL = '<think>Call.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Seoul"}}</tool_call><|im_end|>'
BROKEN = '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "argu'


def rows() -> dict[str, list[Any]]:
    return {
        "id": [1, 2, 3, 4],
        "output": [CALL, "Just text<|im_end|>", BROKEN, CALL],
        "prefix": [PREFIX, PREFIX, PREFIX, None],
        "meta": [{"k": 1}, {"k": 2}, {"k": 3}, {"k": 4}],
    }


def check_values(values: dict[str, list[Any]]) -> None:
    assert values["id"] == [1, 2, 3, 4]  # passed through
    assert values["role"][:3] == ["assistant"] * 3
    assert values["thinking"][0] == "Call." and values["content"][1] == "Just text"
    assert values["tool_calls"][0] == [{"name": "get_weather", "arguments": '{"city": "Seoul"}'}]
    assert values["tool_calls"][1] == [] and values["malformed"][1] == []
    assert [m["code"] for m in values["malformed"][2]] == ["truncated"]
    assert [c["name"] for c in values["tool_calls"][2]] == ["a"]
    assert json.loads(values["message"][1]) == {"role": "assistant", "content": "Just text"}
    assert values["error_code"][:3] == [None, None, None]
    assert values["error_code"][3] == "prefix_required"  # the prompt is never assumed
    assert values["error_location"][3]["key"] == "prefix"
    assert values["message"][3] is None and values["tool_calls"][3] is None


def test_arrow_table_and_record_batch() -> None:
    table = pa.table(rows())
    out = BatchParser("qwen3")(table)
    assert isinstance(out, pa.Table)
    assert out.column_names == [*table.column_names, *COLUMNS]
    assert out.column("meta").equals(table.column("meta"))
    check_values(out.to_pydict())
    batch = parse_batch(table.to_batches()[0], "qwen3")
    assert isinstance(batch, pa.RecordBatch) and batch.to_pydict() == out.to_pydict()
    types = {f.name: str(f.type) for f in out.schema}
    assert types["tool_calls"] == "list<item: struct<name: string, arguments: string>>"


def test_pandas_dataframe() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(rows())
    out = BatchParser("qwen3")(frame)
    assert list(out.columns) == [*frame.columns, *COLUMNS]
    assert out["thinking"][0] == "Call." and out["error_code"][3] == "prefix_required"
    assert "role" not in frame.columns  # the input is not changed


def test_dict_of_columns() -> None:
    values = BatchParser("qwen3")(rows())
    check_values(values)


def test_a_finish_reason_column_reaches_the_parser() -> None:
    cut = "<tool_call>\n<function=run>\n<parameter=command>\nls\n</parameter>\n"
    table = pa.table({"output": [cut, cut, cut, cut, cut], "finish_reason": ["stop", "length", "MAX_TOKENS", None,
                                                                             "banana"]})
    out = BatchParser("qwen3.5", prefix="")(table).to_pydict()
    assert [[c["name"] for c in calls or []] for calls in out["tool_calls"]] == [["run"], [], [], ["run"], []]
    assert [[m["code"] for m in found or []] for found in out["malformed"]] == [[], ["truncated"], ["truncated"],
                                                                                 [], []]
    assert out["error_code"] == [None, None, None, None, "unknown_finish_reason"]


def test_column_names_prefix_and_default_prompt() -> None:
    parser = BatchParser("qwen3", output_column="response", prefix_column="prompt", prefix="",
                         message_column="parsed", column_prefix="cp_")
    out = parser(pa.table({"response": ["Hi<|im_end|>"]}))
    assert out.column_names == ["response", *("cp_" + ("parsed" if c == "message" else c) for c in COLUMNS)]
    assert out.column("cp_content").to_pylist() == ["Hi"]


@pytest.mark.parametrize(
    ("table", "options", "code"),
    [
        ({"text": ["x"], "prefix": [""]}, {}, "missing_column"),
        ({"output": ["x"]}, {}, "missing_column"),
        ({"output": ["x"], "prefix": [""], "content": ["y"]}, {}, "column_collision"),
    ],
    ids=["no-output-column", "no-prefix-column", "collision"],
)
def test_a_table_every_row_of_which_would_fail_is_a_usage_error(
    table: dict[str, list[str]], options: dict[str, Any], code: str
) -> None:
    with pytest.raises(UsageError) as caught:
        BatchParser("qwen3", **options)(pa.table(table))
    assert caught.value.code == code


def test_a_lone_surrogate_fails_its_row_not_the_batch() -> None:
    out = BatchParser("qwen3", prefix="")({"output": ["a\ud800<|im_end|>", "fine<|im_end|>"]})
    assert out["error_code"] == ["unencodable_text", None]
    assert out["content"] == [None, "fine"]


def test_the_parser_pickles_without_its_compiled_template() -> None:
    parser = BatchParser("qwen3")
    copy = pickle.loads(pickle.dumps(parser))
    assert copy._rows is None
    assert copy(pa.table(rows())).equals(parser(pa.table(rows())))


def test_datasets_map_batched() -> None:
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_dict(rows())
    mapped = dataset.map(BatchParser("qwen3"), batched=True, batch_size=2)
    check_values(mapped.to_dict())
    arrow = dataset.with_format("arrow").map(BatchParser("qwen3"), batched=True)
    check_values(arrow.to_dict())
