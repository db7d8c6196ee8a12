"""``chatparse parse --ray``: the same ``BatchParser`` over Ray Data (``read_parquet`` then ``map_batches``),
the parsed blocks streamed back to this process in input order, so the output equals a local run's."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from chatparse.batch.arrow import BatchParser, require
from chatparse.cli.io import CliError
from chatparse.cli.tables import ROWS_PER_JOB


def _ray() -> Any:
    require("ray.data", "--ray and Ray Data", "ray")
    return require("ray", "--ray and Ray Data", "ray")


def ray_tables(path: str, address: str | None, parser: BatchParser, *, cpus: int,
               check: Callable[[list[str]], None]) -> Iterator[tuple[Any, list[str]]]:
    """Parsed Arrow tables in input order, each with the input's column names. ``address``: None starts a
    local instance with ``cpus`` CPUs, else that cluster ('auto': the running one)."""
    if path == "-" or not (Path(path).is_dir() or Path(path).suffix.lower() in (".parquet", ".pq")):
        raise CliError(f"--ray reads Parquet (a file or a directory of them), found {path!r}; convert the input "
                       "first (chatparse parse runs JSONL and Arrow locally, with -j N)", code="bad_format", path=path)
    if not Path(path).exists():
        raise CliError(f"Expected a Parquet file or directory, found nothing at {path!r}", code="file_not_found",
                       path=path)
    ray = _ray()
    if not ray.is_initialized():
        settings: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR,
                                    "include_dashboard": False}
        if address is None:
            settings["num_cpus"] = cpus
        try:
            ray.init(address=address, **settings)
        except Exception as exc:  # ConnectionError, RuntimeError: Ray's own words say which
            raise CliError(f"Expected a Ray cluster at {address!r}, found none it could connect to "
                           f"({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}); start "
                           "one (ray start --head), or leave out --ray-address to start a local instance",
                           code="ray_unavailable", key=address or "") from None
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # the output's order is the input's
    context.enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    dataset = ray.data.read_parquet(path)
    names = list(dataset.schema().names)
    check(names)
    parsed = dataset.map_batches(parser, batch_format="pyarrow", batch_size=ROWS_PER_JOB)
    for table in parsed.iter_batches(batch_format="pyarrow", batch_size=None, prefetch_batches=2):
        if table.num_rows:
            yield table, names
