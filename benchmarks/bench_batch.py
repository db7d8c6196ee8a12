"""Batch throughput of ``chatparse parse``: rows/s on a generated 100,000-row rollout dump (JSONL and
Parquet) with 1 and N worker processes (and Ray with ``--ray``), each against the single-process run of the
same input in the same run. Every run's output is checked to equal the single-process output.

Run: ``python benchmarks/bench_batch.py [--rows 100000] [--jobs N] [--ray] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

PREFIX = ("<|im_start|>system\nYou are a helpful assistant with tools.<|im_end|>\n<|im_start|>user\n"
          "What is the weather in {city} for the next {days} days?<|im_end|>\n<|im_start|>assistant\n")
CITIES = ["Seoul", "Paris", "Lagos", "Lima", "Oslo", "Hanoi", "Quito", "Perth"]
WORDS = "the user asks about weather so I should call the tool with the city and the number of days".split()


def generation(rng: random.Random) -> str:
    """A Qwen3 rollout: reasoning, then a tool call (most), plain content, or a call cut off (some)."""
    city = rng.choice(CITIES)
    thinking = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 120)))
    call = json.dumps({"name": "get_weather", "arguments": {"city": city, "days": rng.randint(1, 7)}})
    kind = rng.random()
    if kind < 0.6:
        return f"<think>\n{thinking}\n</think>\n\n<tool_call>\n{call}\n</tool_call><|im_end|>"
    if kind < 0.95:
        return f"<think>\n{thinking}\n</think>\n\nIt will be sunny in {city}.<|im_end|>"
    return f"<think>\n{thinking}\n</think>\n\n<tool_call>\n{call[: rng.randint(5, len(call) - 2)]}"


def make_inputs(directory: Path, rows: int) -> dict[str, Path]:
    rng = random.Random(16)
    records = [{"id": i, "prompt_id": f"q{i % 1000}", "output": generation(rng),
                "prefix": PREFIX.format(city=rng.choice(CITIES), days=rng.randint(1, 7)), "reward": rng.random()}
               for i in range(rows)]
    jsonl = directory / "rollouts.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    paths = {"jsonl": jsonl}
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return paths
    paths["parquet"] = directory / "rollouts.parquet"
    pq.write_table(pa.Table.from_pylist(records), paths["parquet"], row_group_size=10_000)
    return paths


def chatparse(*args: str) -> tuple[float, float]:
    """Wall-clock and CPU seconds (this process's children: the CLI and its workers, not Ray's) of one CLI
    run, start-up and writing included; exit 0 or 1 (failed rows) is a success."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "chatparse", "parse", "-t", "qwen3", "-q", *args],
                            capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):
        raise SystemExit(f"chatparse parse {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return seconds, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def same(fmt: str, a: Path, b: Path) -> bool:
    """Whether two outputs are identical; if not, the error codes of each are printed (a wall-clock regex
    budget tripped on a loaded machine shows up as regex_budget_exceeded on one side)."""
    if fmt == "jsonl":
        if a.read_bytes() == b.read_bytes():
            return True
        codes = [Counter(json.loads(line).get("error", {}).get("code") for line in path.open(encoding="utf-8"))
                 for path in (a, b)]
    else:
        import pyarrow.parquet as pq

        left, right = pq.read_table(a), pq.read_table(b)
        if left.equals(right):
            return True
        codes = [Counter(table.column("error_code").to_pylist()) for table in (left, right)]
    print(f"  {b.name} differs from {a.name}; error codes {dict(codes[0])} vs {dict(codes[1])}")
    return False


def run(rows: int, jobs: int, with_ray: bool) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for fmt, source in make_inputs(directory, rows).items():
            single = directory / f"single.{fmt}"
            base, cpu = chatparse(str(source), "-o", str(single))
            results.append(row(fmt, "1 process", rows, (base, cpu), base, True))
            runs = [(f"{jobs} processes", ["-j", str(jobs)])]
            if with_ray and fmt == "parquet":
                runs.append((f"Ray, {jobs} CPUs", ["--ray", "-j", str(jobs)]))
            for label, extra in runs:
                out = directory / f"out.{fmt}"
                timing = chatparse(str(source), "-o", str(out), *extra)
                results.append(row(fmt, label, rows, timing, base, same(fmt, single, out), ray="--ray" in extra))
    return results


def row(fmt: str, how: str, rows: int, timing: tuple[float, float], base: float, identical: bool, *,
        ray: bool = False) -> dict[str, Any]:
    seconds, cpu = timing
    return {"input": fmt, "run": how, "rows": rows, "seconds": round(seconds, 2),
            "rows_per_s": round(rows / seconds), "vs_1_process": round(base / seconds, 2),
            "rows_per_cpu_s": None if ray else round(rows / max(cpu, 1e-9)), "identical": identical}


def print_table(results: list[dict[str, Any]]) -> None:
    """rows/s is wall-clock (what a user waits); rows per CPU-second is the work, steady on a busy machine."""
    print(f"{'input':<8} {'run':<16} {'rows':>8} {'seconds':>8} {'rows/s':>8} {'x 1 proc':>9} {'rows/cpu-s':>10} "
          "identical")
    for r in results:
        print(f"{r['input']:<8} {r['run']:<16} {r['rows']:>8} {r['seconds']:>8} {r['rows_per_s']:>8} "
              f"{r['vs_1_process']:>9} {r['rows_per_cpu_s'] or 'n/a':>10} {r['identical']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="rows in the generated dump (default 100000)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="worker processes (default: CPUs)")
    parser.add_argument("--ray", action="store_true", help="also run --ray on the Parquet input (needs ray[data])")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    print(f"{args.rows:,} rows, {args.jobs} workers, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at the start")
    results = run(args.rows, args.jobs, args.ray)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0 if all(r["identical"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
