"""``chatparse parse``: formats in and out, rows kept with their line/row numbers, failures per row, the
prompt rule, workers in order, progress only on a terminal. In-process through ``main`` (the subprocess
paths are in test_no_traceback.py)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from chatparse.cli import progress as progress_module
from chatparse.cli.main import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

PREFIX = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
OUTPUTS = [
    '<think>Call.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Seoul"}}</tool_call><|im_end|>',
    "Just text<|im_end|>",
    "<think>Hmm</think>The answer is 4.<|im_end|>",
]


def records(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "prompt_id": f"p{i % 7}", "output": OUTPUTS[i % 3], "prefix": PREFIX, "meta": {"k": i}}
            for i in range(n)]


def write_jsonl(path: Path, rows: list[Any], *, bom: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in rows)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_jsonl_rows_keep_their_keys_and_gain_message_and_line(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", records(3), bom=True)
    out = tmp_path / "out.jsonl"
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(out), "-q"]) == 0
    rows = read_jsonl(out)
    assert [r["line"] for r in rows] == [1, 2, 3]
    assert rows[0]["meta"] == {"k": 0} and rows[0]["prompt_id"] == "p0" and rows[0]["output"] == OUTPUTS[0]
    assert rows[0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert rows[1]["message"] == {"role": "assistant", "content": "Just text"}


def test_bad_lines_fail_alone_with_code_and_line(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    good = json.dumps(records(1)[0])
    source.write_bytes("\n".join([
        good, "", "{bad json", '"a bare string"', json.dumps({"output": "x", "prefix": 5}),
        json.dumps([1, 2]), json.dumps({"output": "x", "prefix": "", "message": "taken"}), good,
    ]).encode() + b"\n\xff\xfe\n")
    out = tmp_path / "out.jsonl"
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(out), "-q"]) == 1
    rows = read_jsonl(out)
    assert [(r["line"], r.get("error", {}).get("code")) for r in rows] == [
        (1, None), (3, "invalid_json"), (4, "prefix_required"), (5, "bad_prefix"), (6, "bad_line"),
        (7, "key_collision"), (8, None), (9, "invalid_utf8")]
    assert rows[2]["output"] == "a bare string"
    assert rows[3]["error"]["key"] == "prefix" and rows[3]["prefix"] == 5


def test_prefix_option_and_field_names(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [{"response": "Hi<|im_end|>"}, {"response": "a", "prompt": PREFIX}])
    out = tmp_path / "out.jsonl"
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(out), "-q", "--output-field", "response",
                 "--prefix-field", "prompt", "--prefix", "", "--message-field", "parsed"]) == 0
    assert [r["parsed"]["content"] for r in read_jsonl(out)] == ["Hi", "a"]
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PREFIX + "<think>", encoding="utf-8")
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(out), "-q", "--output-field", "response",
                 "--prefix", f"@{prompt}"]) == 0
    assert read_jsonl(out)[0]["message"] == {"role": "assistant", "thinking": "Hi"}


def test_tools_file_types_arguments_for_every_row(tmp_path: Path) -> None:
    call = '<tool_call>{"name": "f", "arguments": {"n": "3"}}</tool_call><|im_end|>'
    source = write_jsonl(tmp_path / "in.jsonl", [{"output": call, "prefix": PREFIX}])
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}}]), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(out), "-q", "--tools", str(tools)]) == 0
    assert read_jsonl(out)[0]["message"]["tool_calls"][0]["function"]["arguments"] == {"n": 3}


@pytest.mark.parametrize("out_name", ["out.parquet", "out.arrow"])
def test_jsonl_to_a_table_has_typed_columns(tmp_path: Path, out_name: str) -> None:
    rows = [*records(4), {"output": "x"}]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / out_name
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(out), "-q"]) == 1
    table = pq.read_table(out) if out_name.endswith("parquet") else pa.ipc.open_file(out).read_all()
    assert table.column("line").to_pylist() == [1, 2, 3, 4, 5]
    assert table.column("tool_calls").to_pylist()[0] == [{"name": "get_weather", "arguments": '{"city": "Seoul"}'}]
    assert table.column("error_code").to_pylist() == [None] * 4 + ["prefix_required"]
    assert table.column("meta").to_pylist()[:2] == [{"k": 0}, {"k": 1}]


def parquet_input(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(records(n)), path, row_group_size=700)
    return path


def test_parquet_in_parquet_out_with_workers_keeps_order(tmp_path: Path) -> None:
    source = parquet_input(tmp_path, 2500)
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(one), "-q"]) == 0
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(two), "-q", "-j", "2"]) == 0
    first, second = pq.read_table(one), pq.read_table(two)
    assert first.equals(second)
    assert first.column("row").to_pylist() == list(range(2500))
    assert first.column("id").to_pylist() == list(range(2500))


def test_jsonl_with_workers_equals_one_process(tmp_path: Path) -> None:
    rows: list[Any] = records(700)
    rows[350] = {"output": "no prompt"}
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(one), "-q"]) == 1
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(two), "-q", "-j", "2"]) == 1
    assert one.read_bytes() == two.read_bytes()


def test_table_input_to_jsonl_has_row_numbers(tmp_path: Path) -> None:
    source = parquet_input(tmp_path, 3)
    out = tmp_path / "out.jsonl"
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(out), "-q"]) == 0
    rows = read_jsonl(out)
    assert [r["row"] for r in rows] == [0, 1, 2] and rows[2]["meta"] == {"k": 2}
    assert rows[1]["message"] == {"role": "assistant", "content": "Just text"}


def test_errors_file_takes_the_failed_rows(tmp_path: Path) -> None:
    rows: list[Any] = records(3)
    rows[1] = {"output": "x"}
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out, errors = tmp_path / "out.parquet", tmp_path / "errors.jsonl"
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(out), "--errors", str(errors), "-q"]) == 1
    assert pq.read_table(out).column("line").to_pylist() == [1, 3]
    assert [(r["line"], r["error"]["code"]) for r in read_jsonl(errors)] == [(2, "prefix_required")]


def test_stdin_in_any_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = parquet_input(tmp_path, 2).read_bytes()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["parse", "-t", "qwen3", "-q"]) == 0
    assert [json.loads(line)["row"] for line in capsys.readouterr().out.splitlines()] == [0, 1]


def test_a_table_whose_every_row_would_fail_is_a_setup_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"text": ["x"]}), path)
    assert main(["parse", "-t", "qwen3", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert "error [missing_field]" in err and "--output-field" in err and "found: text" in err


def test_summary_line_counts_failures_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [*records(2), {"output": "x"}])
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(tmp_path / "o.jsonl")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\r" not in err  # one line, no progress redraws in a log
    assert "3 rows in" in err and "2 ok, 1 failed (prefix_required 1)" in err


def test_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int | None] = []
    monkeypatch.setattr(progress_module.Progress, "_start_bar", lambda self, total: started.append(total))
    progress_module.Progress("parse", 10, live=False, quiet=False)
    progress_module.Progress("parse", 10, live=True, quiet=True)
    assert started == []
    progress_module.Progress("parse", 10, live=True, quiet=False)
    assert started == [10]


def test_a_live_bar_runs_and_stops() -> None:
    bar = progress_module.Progress("parse", 4, live=True, quiet=False)
    bar.advance(4, 3, __import__("collections").Counter({"x": 1}))
    assert bar.failed == 1 and bar.rows == 3
    bar.stop()


def test_a_table_corrupt_midway_is_a_setup_error_after_the_rows_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = parquet_input(tmp_path, 3000).read_bytes()
    middle = len(data) // 2
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(data[:middle] + b"\0" * 500 + data[middle + 500:])
    assert main(["parse", "-t", "qwen3", str(broken), "-o", str(tmp_path / "o.jsonl"), "-q"]) == 2
    assert "error [unreadable_input]" in capsys.readouterr().err


def test_without_pyarrow_jsonl_works_and_tables_name_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("pyarrow", "pyarrow.parquet", "pyarrow.compute"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed
    source = write_jsonl(tmp_path / "in.jsonl", records(2))
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(tmp_path / "o.jsonl"), "-q"]) == 0
    assert main(["parse", "-t", "qwen3", str(source), "-o", str(tmp_path / "o.parquet"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "error [missing_dependency]" in err and "pip install '.[batch]'" in err and "not on PyPI" in err
