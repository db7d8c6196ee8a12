"""The engine benchmark: chatparse against transformers' reference parser in the same run (when it is
installed), on one-shot parses, 4-character streaming, truncated outputs and memory. Every row also
checks that both produced the identical message. Run: ``python benchmarks/bench_engine.py`` or
``chatparse bench``."""

from __future__ import annotations

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

from chatparse.engine.api import parse_response
from chatparse.engine.parser import ResponseParser

QWEN3 = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
    },
}
HARMONY = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|start|>assistant",
    "fields": {
        "thinking": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>"},
        "tool_calls": {"open_pattern": r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
                       "close": "<|call|>", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
        "content": {"open": "<|channel|>final<|message|>", "close": ["<|return|>", "<|end|>"], "repeats": True,
                    "join": ""},
    },
}
# transformers' shipped fallback for Qwen 3.5 (XML tool calls, \s*-led delimiters).
QWEN35 = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>\s*<function=(?P<name>[^>\n]+)>",
            "close_pattern": r"</function>\s*</tool_call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"<parameter=(?P<key>[^>\n]+)>\s*(?P<value>.*?)\s*</parameter>"},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)", "content": "text"},
    },
}
TEMPLATES = {"qwen3-literal": QWEN3, "gpt-oss-regex": HARMONY, "qwen3.5-xml": QWEN35}
WORDS = "the model considers every option carefully before it answers and then it writes a reply".split()


def _words(rng: random.Random, n: int) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        word = rng.choice(WORDS) + ("\n" if rng.random() < 0.05 else " ")
        out.append(word)
        size += len(word)
    return "".join(out)


def _call(kind: str, i: int) -> str:
    if kind == "qwen3-literal":
        return f'<tool_call>{{"name": "search", "arguments": {{"query": "item {i}", "limit": {i}}}}}</tool_call>'
    if kind == "gpt-oss-regex":
        return (f"<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
                f'{{"query": "item {i}", "limit": {i}}}<|call|>')
    return (f"\n<tool_call>\n<function=search>\n<parameter=query>\nitem {i}\n</parameter>\n"
            f"<parameter=limit>\n{i}\n</parameter>\n</function>\n</tool_call>")


def make_output(kind: str, size: int, *, seed: int = 0, every: int = 4000, reasoning: int | None = None) -> str:
    """Half reasoning (or ``reasoning`` characters), then content with a tool call about every ``every``
    characters, and the end marker."""
    rng = random.Random(seed)
    reasoning = size // 2 if reasoning is None else reasoning
    if kind == "gpt-oss-regex":
        head, mid, tail = "<|channel|>analysis<|message|>", "<|end|><|channel|>final<|message|>", "<|return|>"
    else:
        head, mid, tail = "<think>", "</think>\n\n", "<|im_end|>"
    parts = [head, _words(rng, reasoning), mid]
    written, i = reasoning, 0
    while written < size:
        chunk = _words(rng, every)
        if kind == "gpt-oss-regex":  # the final message ends, the call follows, a new final message starts
            parts += [chunk, "<|end|>", _call(kind, i), "<|channel|>final<|message|>"]
        else:
            parts += [chunk, _call(kind, i)]
        written += len(chunk) + 80
        i += 1
    parts.append(tail)
    return "".join(parts)


def make_truncated(size: int, *, seed: int = 0) -> str:
    """Reasoning and content with no tool call and no end marker (cut by the token limit)."""
    rng = random.Random(seed)
    return "<think>" + _words(rng, size // 2) + "</think>\n\n" + _words(rng, size // 2)


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


# Built-in templates (what users load by name), each on output in its own format. The built-ins use
# chatparse's real-output extensions, which transformers does not read: the reference runs the bench
# template of the same format, and the row checks that both found the same tool calls.
BUILTINS = {"qwen3": "qwen3-literal", "qwen3.5": "qwen3.5-xml", "gpt_oss": "gpt-oss-regex"}


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
                                   "ours_us_per_feed": ours / len(chunks) * 1e6}
            if ref is not None:
                row.update(ref_us_per_feed=theirs / len(chunks) * 1e6, ratio=theirs / ours)
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


def run(*, quick: bool = False, full: bool = False, with_reference: bool = True) -> list[dict[str, Any]]:
    ref = _reference() if with_reference else None
    sizes = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    counts = [1000, 4000] if quick else [1000, 4000, 16000, 64000]
    rows = one_shot(ref, sizes, repeat=3 if quick else 5)
    rows += streaming(ref, counts, repeat=1 if quick else 3)
    rows += dense(ref, [200, 1000], 10_000 if quick else 40_000, repeat=3 if quick else 7)
    rows += truncated(ref, sizes, ref_limit=1_000_000 if full else 100_000)
    rows += memory(sizes)
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--full", action="store_true", help="also time the reference on the 1 MB truncated case (~1 min)")
    parser.add_argument("--no-reference", action="store_true", help="chatparse alone")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = run(quick=args.quick, full=args.full, with_reference=not args.no_reference)
    print_table(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r.get("identical", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
