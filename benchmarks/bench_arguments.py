"""Streamed tool arguments: ArgumentStream vs re-parsing the accumulated text on every chunk.

Feeds 1 KB to 64 KB of arguments in 4-character chunks and reports our growth exponent
(log-log slope) and, measured in the same run, the ratios against partial-json-parser and
jiter's partial mode (the vLLM-style pattern). Prints a table, then one JSON document.
Times are process CPU time (best of several runs), so other load on a shared machine
does not bend the growth exponent; all three contenders are timed the same way.

    python benchmarks/bench_arguments.py [--full] [--sizes 1,2,4,...] [--chunk 4]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import random
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import jiter
import partial_json_parser  # type: ignore[import-untyped]

from chatparse.tools import ArgumentStream

TARGET_EXPONENT = 1.05
TARGET_VS_PJP = 100.0
TARGET_VS_JITER = 10.0
FULL_PJP_LIMIT_KB = 8  # above this, partial-json-parser is timed on evenly spaced prefixes (--full: all)
PJP_SAMPLES = 64


def file_write_payload(size: int, seed: int = 0) -> str:
    """A write_file call: small keys plus one large string with escapes, quotes and non-ASCII."""
    rng = random.Random(seed)
    pieces = ["def handler(event):\n", '    return {"ok": True}\n', "\t# tab-indented comment\n",
              "naïve café — 中文 😀\n", 'path = "C:\\\\temp\\\\x"\n', "x = [1, 2, 3]  # list\n"]
    content: list[str] = []
    shell = json.dumps({"path": "src/app/handler.py", "mode": "write", "content": ""})
    total = len(shell)
    while total < size:
        piece = rng.choice(pieces)
        content.append(piece)
        total += len(json.dumps(piece)) - 2
    return json.dumps({"path": "src/app/handler.py", "mode": "write", "content": "".join(content)})


def records_payload(size: int, seed: int = 0) -> str:
    """A structure-heavy call: many small objects with numbers, booleans, arrays and strings."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    total = 12
    while total < size:
        row = {"id": len(rows), "name": f"item {len(rows)}", "price": round(rng.uniform(0, 100), 2),
               "tags": rng.sample(["a", "b", "c", "d"], 2), "active": rng.random() < 0.5, "note": None}
        rows.append(row)
        total += len(json.dumps(row)) + 2
    return json.dumps({"rows": rows})


WORKLOADS: dict[str, Callable[[int], str]] = {"file_write": file_write_payload, "records": records_payload}


def chunked(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def byte_prefixes(chunks: list[str]) -> tuple[bytes, list[int]]:
    """The encoded text and the byte offset after each chunk (prefixes end on character bounds)."""
    ends, offset = [], 0
    for chunk in chunks:
        offset += len(chunk.encode("utf-8"))
        ends.append(offset)
    return "".join(chunks).encode("utf-8"), ends


def timed(run: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, value = math.inf, None
    for _ in range(repeats):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            value = run()
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best, value


def run_ours(chunks: list[str], stream_key: str | None) -> dict[str, Any]:
    received: list[int] = [0]

    def on_progress(key: str, text: str) -> None:
        received[0] += len(text)

    stream = ArgumentStream(on_string_progress=on_progress, stream_key=stream_key)
    for chunk in chunks:
        stream.feed(chunk)
    result = stream.finish()
    assert result.status == "complete", result.error
    return result.arguments


def run_jiter(data: bytes, ends: list[int]) -> Any:
    value = None
    for end in ends:
        value = jiter.from_json(data[:end], partial_mode="trailing-strings")
    return value


def run_pjp(text: str, chunks: list[str]) -> Any:
    accumulated, value = "", None
    for chunk in chunks:
        accumulated += chunk
        value = partial_json_parser.loads(accumulated)
    return value


def estimate_pjp(text: str, chunks: list[str]) -> float:
    """Time partial-json-parser on evenly spaced prefixes; sum scaled to every chunk."""
    ends, offset = [], 0
    for chunk in chunks:
        offset += len(chunk)
        ends.append(offset)
    step = max(1, len(ends) // PJP_SAMPLES)
    sample = ends[step - 1 :: step]
    total = 0.0
    for end in sample:
        prefix = text[:end]
        start = time.process_time()
        partial_json_parser.loads(prefix)
        total += time.process_time() - start
    return total * len(ends) / len(sample)


def slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def measure(workload: str, size_kb: int, chunk_size: int, full: bool) -> dict[str, Any]:
    text = WORKLOADS[workload](size_kb * 1024)
    chunks = chunked(text, chunk_size)
    expected = json.loads(text)
    stream_key = "content" if workload == "file_write" else None
    run_ours(chunks, stream_key)  # warm-up: caches and allocator, so small sizes are not flattered or penalized
    ours, ours_value = timed(lambda: run_ours(chunks, stream_key), repeats=41 if size_kb < 16 else 9)
    data, ends = byte_prefixes(chunks)
    jiter_s, jiter_value = timed(lambda: run_jiter(data, ends), repeats=1 if size_kb >= 16 else 3)
    if full or size_kb <= FULL_PJP_LIMIT_KB:
        pjp_s, pjp_value = timed(lambda: run_pjp(text, chunks), repeats=1)
        pjp_mode = "full"
        assert pjp_value == expected
    else:
        pjp_s, pjp_mode = estimate_pjp(text, chunks), f"sampled {PJP_SAMPLES} prefixes"
    assert ours_value == expected and jiter_value == expected
    return {
        "workload": workload, "size_kb": size_kb, "chars": len(text), "chunks": len(chunks),
        "ours_s": ours, "ours_us_per_chunk": ours / len(chunks) * 1e6,
        "jiter_s": jiter_s, "partial_json_parser_s": pjp_s, "partial_json_parser_timing": pjp_mode,
        "ratio_vs_jiter": jiter_s / ours, "ratio_vs_partial_json_parser": pjp_s / ours,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    sizes = [r["chars"] for r in rows]
    largest = rows[-1]
    exponent = slope(sizes, [r["ours_s"] for r in rows])
    return {
        "workload": largest["workload"],
        "growth_exponent": round(exponent, 3),
        "jiter_growth_exponent": round(slope(sizes, [r["jiter_s"] for r in rows]), 3),
        "partial_json_parser_growth_exponent": round(slope(sizes, [r["partial_json_parser_s"] for r in rows]), 3),
        "at_size_kb": largest["size_kb"],
        "ratio_vs_partial_json_parser": round(largest["ratio_vs_partial_json_parser"], 1),
        "ratio_vs_jiter": round(largest["ratio_vs_jiter"], 1),
        "targets_met": {
            f"growth_exponent<={TARGET_EXPONENT}": exponent <= TARGET_EXPONENT,
            f"vs_partial_json_parser>={TARGET_VS_PJP:g}x": largest["ratio_vs_partial_json_parser"] >= TARGET_VS_PJP,
            f"vs_jiter>={TARGET_VS_JITER:g}x": largest["ratio_vs_jiter"] >= TARGET_VS_JITER,
        },
    }


def print_table(rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    print(f"\nworkload: {summary['workload']}")
    print(f"{'size':>6} {'chunks':>7} {'ours ms':>9} {'us/chunk':>9} {'jiter ms':>10} {'pjp ms':>11}"
          f" {'x jiter':>8} {'x pjp':>9}")
    for r in rows:
        mark = "*" if r["partial_json_parser_timing"] != "full" else " "
        print(f"{r['size_kb']:>4}KB {r['chunks']:>7} {r['ours_s'] * 1e3:>9.2f} {r['ours_us_per_chunk']:>9.2f}"
              f" {r['jiter_s'] * 1e3:>10.1f} {r['partial_json_parser_s'] * 1e3:>10.0f}{mark}"
              f" {r['ratio_vs_jiter']:>8.1f} {r['ratio_vs_partial_json_parser']:>9.0f}")
    print(f"growth exponent (ours): {summary['growth_exponent']}  (jiter {summary['jiter_growth_exponent']},"
          f" partial-json-parser {summary['partial_json_parser_growth_exponent']})")
    print(f"targets: {summary['targets_met']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,4,8,16,32,64", help="sizes in KB")
    parser.add_argument("--chunk", type=int, default=4, help="characters per chunk")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--full", action="store_true", help="time partial-json-parser on every prefix (slow)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    report: dict[str, Any] = {
        "python": platform.python_version(), "jiter": version("jiter"), "partial_json_parser": version("partial-json-parser"), "clock": "process CPU time",
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "chunk_chars": args.chunk, "results": [], "summaries": [],
    }
    for workload in args.workloads.split(","):
        rows = [measure(workload, size, args.chunk, args.full) for size in sizes]
        summary = summarize(rows)
        print_table(rows, summary)
        report["results"].extend(rows)
        report["summaries"].append(summary)
    print("\n(* partial-json-parser timed on evenly spaced prefixes and scaled to every chunk; --full times all)")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
