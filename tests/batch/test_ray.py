"""Ray Data on a real local Ray instance (``ray.init`` here, 2 CPUs) over a generated Parquet dataset of
100,000 rows: the documented recipe (``map_batches(BatchParser(...))``) and ``chatparse parse --ray`` give
exactly what one process gives."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chatparse.batch import BatchParser
from chatparse.cli.main import main

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROWS = 100_000
PREFIX = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n"
OUTPUTS = [
    '<think>Call.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Seoul"}}</tool_call><|im_end|>',
    "Just text<|im_end|>",
    "<think>Hmm</think>The answer is 4.<|im_end|>",
    '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "argu',
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ray") / "rollouts.parquet"
    ids = pa.array(range(ROWS), type=pa.int64())
    outputs = pa.array([OUTPUTS[i % len(OUTPUTS)] for i in range(ROWS)])
    prefixes = pa.array([None if i % 997 == 0 else PREFIX for i in range(ROWS)])  # some rows fail
    pq.write_table(pa.table({"id": ids, "output": outputs, "prefix": prefixes}), path, row_group_size=10_000)
    return path


@pytest.fixture(scope="module")
def local(dataset: Path) -> pa.Table:
    """The single-process run of the CLI."""
    out = dataset.with_name("local.parquet")
    assert main(["parse", "-t", "qwen3", str(dataset), "-o", str(out), "-q"]) == 1  # the prefix-less rows
    return pq.read_table(out)


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_the_ray_data_recipe_equals_one_process(dataset: Path, local: pa.Table, cluster: None) -> None:
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    parsed = ray.data.read_parquet(str(dataset)).map_batches(
        BatchParser("qwen3"), batch_format="pyarrow", batch_size=4096)
    result = pa.concat_tables(ray.get(parsed.to_arrow_refs()))
    expected = local.drop_columns(["row"])
    assert result.num_rows == ROWS
    assert differences(result, expected) == []
    assert result.equals(expected)
    assert result.column("error_code").null_count == ROWS - 101  # every 997th row has no prompt


def differences(a: pa.Table, b: pa.Table) -> list[tuple[str, int, object, object]]:
    """The first differing rows per column (a readable failure instead of two table reprs)."""
    found = []
    for name in b.column_names:
        left, right = a.column(name).to_pylist(), b.column(name).to_pylist()
        found += [(name, i, left[i], right[i]) for i in range(len(right)) if left[i] != right[i]][:3]
    return found


def test_chatparse_parse_ray_equals_one_process(dataset: Path, local: pa.Table, cluster: None) -> None:
    out = dataset.with_name("ray.parquet")
    assert main(["parse", "-t", "qwen3", str(dataset), "-o", str(out), "--ray", "-q"]) == 1
    result = pq.read_table(out)
    assert differences(result, local) == []
    assert result.equals(local)
