"""The engine benchmark: chatparse against transformers' reference parser in the same run (when it is
installed), on one-shot parses, 4-character streaming, truncated outputs and memory. Every row also
checks that both produced the identical message. Outputs cut by the token limit (in reasoning, in
content, inside a tool call) are also timed for the built-ins of the bench formats, against the per-100 KB
target. What ``chatparse bench`` runs; ``python benchmarks/bench_engine.py --truncated-all`` (in a source
checkout) adds every built-in family's outputs cut from its corpus."""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from chatparse.bench.outputs import (
    BUILTINS,
    QWEN3,
    QWEN35,
    TEMPLATES,
    _words,
    bench_cuts,
    make_output,
    make_truncated,
)
from chatparse.engine.api import parse_response
from chatparse.engine.parser import ResponseParser
from chatparse.template import load_template


def _times(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    """``repeat`` timings of ``fn`` with the garbage collector off during each (as ``timeit`` does)."""
    times, result = [], None
    gc.collect()
    for _ in range(repeat):
        gc.disable()
        try:
            start = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return times, result


def _median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = _times(fn, repeat)
    return statistics.median(times), result


def _reference() -> Any:
    try:
        from transformers.utils import chat_parsing
    except Exception:
        return None
    return chat_parsing


def _stream(parser_cls: Any, template: Any, chunks: list[str]) -> dict[str, Any]:
    parser = parser_cls(template, prefix="")
    for chunk in chunks:
        parser.feed(chunk)
    message, _ = parser.finalize()
    return message  # type: ignore[no-any-return]


def one_shot(ref: Any, sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    rows = []
    for name, template in TEMPLATES.items():
        parse_response("warm", template, prefix="")
        for size in sizes:
            text = make_output(name, size)
            reps = max(repeat, min(101, 2_000_000 // size))  # sub-millisecond parses: more samples
            ours, message = _median_time(lambda: parse_response(text, template, prefix=""), reps)  # noqa: B023
            row: dict[str, Any] = {"bench": "one-shot", "template": name, "bytes": len(text),
                                   "tool_calls": len(message.get("tool_calls", [])), "ours_mb_s": len(text) / ours / 1e6}
            if ref is not None:
                theirs, ref_message = _median_time(
                    lambda: ref.parse_response(text, template, prefix=""), max(1, reps // 2))  # noqa: B023
                row.update(ref_mb_s=len(text) / theirs / 1e6, ratio=theirs / ours, identical=message == ref_message)
            rows.append(row)
    return rows


def growth_exponent(xs: list[int], ys: list[float]) -> float:
    """The log-log slope of ``ys`` against ``xs`` (1.0: linear)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.mean(lx), statistics.mean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def streaming(ref: Any, counts: list[int], repeat: int) -> list[dict[str, Any]]:
    rows = []
    for name, template in TEMPLATES.items():
        series: dict[str, list[float]] = {"ours": [], "ref": []}
        for count in counts:
            text = make_output(name, count * 4)[: count * 4]
            chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
            ours, message = _median_time(lambda: _stream(ResponseParser, template, chunks), repeat)  # noqa: B023
            row: dict[str, Any] = {"bench": "stream-4ch", "template": name, "feeds": len(chunks),
                                   "ours_s": ours, "ours_us_per_feed": ours / len(chunks) * 1e6}
            series["ours"].append(ours)
            if ref is not None:
                theirs, ref_message = _median_time(
                    lambda: _stream(ref.ResponseParser, template, chunks), max(1, repeat // 2))  # noqa: B023
                series["ref"].append(theirs)
                row.update(ref_s=theirs, ref_us_per_feed=theirs / len(chunks) * 1e6, ratio=theirs / ours,
                           identical=message == ref_message)
            rows.append(row)
        summary: dict[str, Any] = {"bench": "stream-growth", "template": name,
                                   "ours_exponent": growth_exponent(counts, series["ours"])}
        if series["ref"]:
            summary["ref_exponent"] = growth_exponent(counts, series["ref"])
        rows.append(summary)
    return rows


PEER_BUILTIN = "qwen3"  # JSON tool calls: the peer of the other built-ins' one-shot rows


def one_shot_builtins(size: int, repeat: int) -> list[dict[str, Any]]:
    """One-shot parses of the built-ins on output of their own format, timed round-robin (the machine's
    speed drifts between runs), against built-in ``qwen3`` (JSON calls) in the same run: ``vs_qwen3`` is
    this row's MB/s over qwen3's."""
    texts = {name: make_output(kind, size) for name, kind in BUILTINS.items()}
    times: dict[str, list[float]] = {name: [] for name in BUILTINS}
    calls: dict[str, int] = {}
    for name, text in texts.items():
        calls[name] = len(parse_response(text, name, prefix="").get("tool_calls", []))  # warm; counted
    for _ in range(repeat):
        for name, text in texts.items():
            t, _ = _times(lambda: parse_response(text, name, prefix=""), 1)  # noqa: B023
            times[name] += t
    speed = {name: len(texts[name]) / statistics.median(times[name]) / 1e6 for name in BUILTINS}
    return [{"bench": "one-shot-builtin", "template": name, "bytes": len(texts[name]), "tool_calls": calls[name],
             "ours_mb_s": speed[name], f"vs_{PEER_BUILTIN}": speed[name] / speed[PEER_BUILTIN]}
            for name in BUILTINS]


def best_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The fastest of ``repeat`` timed calls of ``fn`` (garbage collector off), and its result."""
    times, result = _times(fn, repeat)
    return min(times), result


def dense(ref: Any, everys: list[int], size: int, repeat: int) -> list[dict[str, Any]]:
    """Streaming (4-character chunks) through delimiter-dense output: a tool call every ``every``
    characters, so a large share of feeds falls inside a delimiter still forming (the slow path).
    Bench templates and built-ins; best of ``repeat`` runs (short runs are noisy)."""
    rows = []
    cases: list[tuple[str, Any, str]] = [(name, template, name) for name, template in TEMPLATES.items()]
    cases += [(f"builtin:{name}", name, kind) for name, kind in BUILTINS.items()]
    for label, template, kind in cases:
        ref_template = TEMPLATES[kind]
        for every in everys:
            text = make_output(kind, size, every=every, reasoning=every)
            chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
            ours, theirs = float("inf"), float("inf")
            message = ref_message = None
            # The remembered scan answers are shared by a template's parsers (a server's later streams
            # find what its first one saw): the first stream after forgetting them is the cold figure.
            load_template(template).engine_tables.pop("memo", None)
            cold, _ = best_time(lambda: _stream(ResponseParser, template, chunks), 1)  # noqa: B023
            for _ in range(repeat):  # interleaved, best of each: the machine's speed drifts between runs
                t, message = best_time(lambda: _stream(ResponseParser, template, chunks), 1)  # noqa: B023
                ours = min(ours, t)
                if ref is not None:
                    t, ref_message = best_time(
                        lambda: _stream(ref.ResponseParser, ref_template, chunks), 1)  # noqa: B023
                    theirs = min(theirs, t)
            assert message is not None
            row: dict[str, Any] = {"bench": "stream-dense", "template": label, "every": every, "feeds": len(chunks),
                                   "tool_calls": len(message.get("tool_calls", [])),
                                   "ours_us_per_feed": ours / len(chunks) * 1e6,
                                   "ours_cold_us_per_feed": cold / len(chunks) * 1e6}
            if ref is not None:
                row.update(ref_us_per_feed=theirs / len(chunks) * 1e6, ratio=theirs / ours, cold_ratio=theirs / cold)
                if isinstance(template, str):
                    row.update(same_calls=message.get("tool_calls") == (ref_message or {}).get("tool_calls"))
                else:
                    row.update(identical=message == ref_message)
            rows.append(row)
    return rows


def truncated(ref: Any, sizes: list[int], ref_limit: int) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        text = make_truncated(size)
        ours, message = _median_time(lambda: parse_response(text, QWEN35, prefix=""), 3)  # noqa: B023
        row: dict[str, Any] = {"bench": "truncated", "template": "qwen3.5-xml", "bytes": len(text), "ours_s": ours}
        if ref is not None and size <= ref_limit:
            theirs, ref_message = _median_time(lambda: ref.parse_response(text, QWEN35, prefix=""), 1)  # noqa: B023
            row.update(ref_s=theirs, ratio=theirs / ours, identical=message == ref_message)
        rows.append(row)
    return rows


TRUNCATED_TARGET_MS_PER_100KB = 5.0


def _size_label(size: int) -> str:
    return f"{size // 1_000_000}MB" if size % 1_000_000 == 0 else f"{size // 1_000}KB"


def _reference_time(ref: Any, text: str, template: Any, prefix: str) -> tuple[float, bool]:
    """The reference's time on ``text``, and whether it raised (it reads a cut JSON call as an error)."""
    gc.collect()
    start = time.perf_counter()
    try:
        ref.parse_response(text, template, prefix=prefix)
    except Exception:
        return time.perf_counter() - start, True
    return time.perf_counter() - start, False


def truncated_cuts(cases: dict[str, dict[str, tuple[str, str]]], sizes: list[int], repeat: int, *,
                   ref: Any = None, references: dict[str, Any] | None = None,
                   ref_limit: int = 100_000) -> list[dict[str, Any]]:
    """Outputs cut by the token limit, per template and cut, at each size: milliseconds (median), the
    worst milliseconds per 100 KB against the target, the growth exponent, and whether the cut text
    reached the message (as reasoning, content, or a truncated call's raw text). With ``ref``, the
    reference parses the same text with ``references[template]`` (a bench template of the same format),
    once, at sizes up to ``ref_limit``: ``ratio@SIZE`` is its time over ours."""
    rows = []
    for template, cuts in cases.items():
        for cut, (prefix, head) in cuts.items():
            parse_response(head + "warm", template, prefix=prefix)  # loads the template outside the timing
            row: dict[str, Any] = {"bench": "truncated-cut", "template": template, "cut": cut}
            times, kept = [], True
            for size in sizes:
                body = _words(random.Random(size), size)
                text = head + (body.replace("\n", " ") if cut == "call" else body)  # call: inside a string
                t, message = _median_time(lambda: parse_response(text, template, prefix=prefix), repeat)  # noqa: B023
                times.append(t)
                kept = kept and len(repr(message)) >= size
                row[f"ms@{_size_label(size)}"] = t * 1e3
                peer = (references or {}).get(template)
                if ref is not None and peer is not None and size <= ref_limit:
                    theirs, raised = _reference_time(ref, text, peer, prefix)
                    row.update({f"ref_ms@{_size_label(size)}": theirs * 1e3, f"ratio@{_size_label(size)}": theirs / t})
                    row["ref_raised"] = row.get("ref_raised", False) or raised
            worst = max(t * 1e3 / (size / 100_000) for t, size in zip(times, sizes, strict=True))
            row.update(ms_per_100kb=worst, meets_target=worst <= TRUNCATED_TARGET_MS_PER_100KB)
            if len(sizes) > 1:
                row["exponent"] = growth_exponent(sizes, times)
            row["kept"] = kept
            rows.append(row)
    return rows


def memory(sizes: list[int]) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        text = make_output("qwen3-literal", size)
        gc.collect()
        tracemalloc.start()
        parse_response(text, QWEN3, prefix="")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        input_bytes = sys.getsizeof(text)
        rows.append({"bench": "memory", "template": "qwen3-literal", "bytes": len(text), "peak_bytes": peak,
                     "peak_over_input": peak / input_bytes})
    return rows


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def print_table(rows: list[dict[str, Any]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    widths = {c: max(len(c), *(len(_fmt(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        print("  ".join(_fmt(row.get(c, "")).ljust(widths[c]) for c in columns))


def run(*, quick: bool = False, full: bool = False, with_reference: bool = True,
        extra: Callable[[list[int]], list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """The benchmark rows; ``extra(cut_sizes)``: more truncated rows, before the memory ones
    (``benchmarks/bench_engine.py --truncated-all`` cuts every built-in family's corpus output)."""
    ref = _reference() if with_reference else None
    sizes = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    counts = [1000, 4000] if quick else [1000, 4000, 16000, 64000]
    rows = one_shot(ref, sizes, repeat=3 if quick else 5)
    rows += one_shot_builtins(sizes[-1], repeat=5 if quick else 21)
    rows += streaming(ref, counts, repeat=1 if quick else 3)
    rows += dense(ref, [200, 1000], 10_000 if quick else 40_000, repeat=3 if quick else 7)
    rows += truncated(ref, sizes, ref_limit=1_000_000 if full else 100_000)
    cut_sizes = [10_000, 100_000] if quick else [100_000, 1_000_000]
    rows += truncated_cuts({name: bench_cuts(kind) for name, kind in BUILTINS.items()}, cut_sizes, repeat=3,
                           ref=ref, references={name: TEMPLATES[kind] for name, kind in BUILTINS.items()},
                           ref_limit=1_000_000 if full else 100_000)
    if extra is not None:
        rows += extra(cut_sizes)
    rows += memory(sizes)
    return rows


def main(argv: list[str] | None = None) -> int:
    """``chatparse bench``: print the rows (and write them as JSON with ``--json``); 1 if a row's message
    differs from the reference's or a cut output lost text."""
    parser = argparse.ArgumentParser(description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return report(run_from(args), args.json)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--full", action="store_true", help="also time the reference on the 1 MB truncated case (~1 min)")
    parser.add_argument("--no-reference", action="store_true", help="chatparse alone")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")


def run_from(args: argparse.Namespace, extra: Callable[[list[int]], list[dict[str, Any]]] | None = None,
             ) -> list[dict[str, Any]]:
    return run(quick=args.quick, full=args.full, with_reference=not args.no_reference, extra=extra)


def report(rows: list[dict[str, Any]], json_path: str | None) -> int:
    print_table(rows)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r.get("identical", True) and r.get("kept", True) for r in rows) else 1

if __name__ == "__main__":
    sys.exit(main())
