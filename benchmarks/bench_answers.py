"""Strict JSON and the answer checker against their peers, measured side by side in one run.

Rows: ``strict_json.loads`` on 1 MB (a record-dense and a text-heavy document) and on 1 KB (tool-call
arguments) against ``json.loads`` with a duplicate-rejecting ``object_pairs_hook`` (``dict(pairs)`` and a
length check, the cheapest such hook); ``check_answer`` on a 2 KB answer with 5 citations and 20 evidence
blocks of 2 KB against pydantic's ``model_validate_json`` followed by the same status, limit and grounding
rules: the answer as a model writes it, the same with a line break and a quote (escapes, still one
pydantic read), the same written with ``\\u`` escapes (``ensure_ascii``: the strict C scan), and the first
with a fresh copy of the text for every call (pydantic keeps a UTF-8 copy inside a ``str`` it has read, so
reading the same object again is cheaper than reading a new output); then ``check_answer``'s stages alone
(chatparse only).

    python -m benchmarks.bench_answers [--quick]

Each timing is the median of several repeats of this process's CPU time (other processes on a shared
machine then count less), ours and the peer's interleaved; ratio = chatparse / peer
(lower is better). The test suite checks correctness only; time lives here.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from chatparse.answers.check import (
    _check_size,
    _grounding,
    _limits,
    _read_valid_answer,
    _status_rules,
    check_answer,
)
from chatparse.answers.model import GroundedAnswer
from chatparse.strict_json import loads, scan_strict

LOADS_TARGET = 1.5
CHECK_TARGET_US = 15.0
WORDS = ("the policy states that each employee may claim up to 300,000 won per quarter for approved "
         "training courses and unused amounts do not carry over — 교육비 한도는 분기당 30만 원이다").split()


def _prose(rng: random.Random, size: int) -> str:
    out: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(WORDS)
        out.append(word)
        total += len(word) + 1
    return " ".join(out)[:size]


def records_document(size: int, seed: int = 0) -> str:
    """Many small objects: ids, names, prices, tags, flags, nested metadata (about 12 values per 240 bytes)."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    total = 12
    while total < size:
        i = len(rows)
        row = {"id": i, "name": f"item {i} — café", "price": round(rng.uniform(0, 1000), 2),
               "tags": rng.sample(["alpha", "beta", "gamma", "delta"], 2), "active": rng.random() < 0.5,
               "note": None, "meta": {"created": "2026-11-30T12:00:00Z", "score": rng.random(),
                                      "text": 'the quick brown fox "jumps"\n'}}
        rows.append(row)
        total += len(json.dumps(row, ensure_ascii=False)) + 2
    return json.dumps({"rows": rows}, ensure_ascii=False)


def text_document(size: int, seed: int = 0) -> str:
    """Fewer, longer strings: messages of 200 to 2,000 characters with a role and a few numbers each."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = []
    total = 16
    while total < size:
        body = _prose(rng, rng.randint(200, 2000))
        message = {"role": rng.choice(["user", "assistant"]), "content": body, "tokens": len(body) // 4}
        messages.append(message)
        total += len(json.dumps(message, ensure_ascii=False)) + 2
    return json.dumps({"messages": messages}, ensure_ascii=False)


def arguments_document() -> str:
    """About 1 KB of tool-call arguments."""
    return json.dumps({
        "query": "quarterly training budget policy for the Seoul office",
        "filters": {"department": ["hr", "finance"], "year": 2026, "quarter": 3, "include_archived": False},
        "limit": 20, "offset": 0, "sort": [{"field": "updated_at", "order": "desc"}],
        "context": "The user asked how much of the training allowance is left this quarter and whether "
                   "unused amounts carry over. Look for the current policy and any exceptions. " * 3,
        "options": {"highlight": True, "snippet_chars": 240, "language": "en", "score_threshold": 0.35},
    })


def answer_case(seed: int = 0, *, escapes: bool = False, ascii_only: bool = False) -> tuple[str, dict[str, str]]:
    """A 2 KB answered output citing 5 of 20 evidence blocks of 2 KB each; ``escapes`` puts a line break and
    a quoted word in the answer, ``ascii_only`` writes the non-ASCII characters as ``\\u`` escapes."""
    rng = random.Random(seed)
    evidence = {f"doc{i}#{j}": _prose(rng, 2000) for i in range(10) for j in range(2)}
    ids = list(evidence)
    citations = []
    for k in range(5):
        source = ids[k * 3]
        start = rng.randrange(0, 1500)
        citations.append({"source_id": source, "quote": evidence[source][start : start + 120]})
    answer = _prose(rng, 2000)
    if escapes:
        answer = f'{answer[:1000]}\n"{answer[1000:1020]}"{answer[1020:]}'
    body = {"status": "answered", "answer": answer, "citations": citations, "clarification": None}
    return json.dumps(body, ensure_ascii=ascii_only), evidence


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise ValueError("duplicate key")
    return value


def peer_loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_unique_keys)


def peer_check(raw: str, evidence: dict[str, str]) -> bool:
    answer = GroundedAnswer.model_validate_json(raw, strict=True)
    return not any(rule(answer, evidence) for rule in (_status_rules, _limits, _grounding))


def _per_call(fn: Callable[[], object], number: int) -> float:
    start = time.process_time()
    for _ in range(number):
        fn()
    return (time.process_time() - start) / number


def paired(ours: Callable[[], object], peer: Callable[[], object] | None, number: int,
           repeats: int) -> tuple[float, float | None]:
    """Median seconds per call of ``ours`` and ``peer``, their repeats interleaved."""
    ours_times: list[float] = []
    peer_times: list[float] = []
    for _ in range(repeats):
        ours_times.append(_per_call(ours, number))
        if peer is not None:
            peer_times.append(_per_call(peer, number))
    return statistics.median(ours_times), statistics.median(peer_times) if peer_times else None


def paired_fresh(ours: Callable[[str], object], peer: Callable[[str], object], text: str, number: int,
                 repeats: int) -> tuple[float, float]:
    """``paired`` with a new copy of ``text`` for every call (made before the clock starts)."""
    ours_times: list[float] = []
    peer_times: list[float] = []
    for _ in range(repeats):
        for fn, times in ((ours, ours_times), (peer, peer_times)):
            copies = [text[:1] + text[1:] for _ in range(number)]
            start = time.process_time()
            for copy in copies:
                fn(copy)
            times.append((time.process_time() - start) / number)
    return statistics.median(ours_times), statistics.median(peer_times)


def _speed(seconds: float, mb: float) -> str:
    return f"{mb / seconds:.1f} MB/s" if mb > 0.5 else f"{seconds * 1e6:.2f} µs"


def run(quick: bool) -> list[dict[str, Any]]:
    repeats = 5 if quick else 11
    scale = 0.25 if quick else 1.0
    rows: list[dict[str, Any]] = []
    for name, text, number in (
        ("loads, 1 MB records", records_document(1_000_000), 2),
        ("loads, 1 MB text", text_document(1_000_000), 4),
        ("loads, 1 KB arguments", arguments_document(), 2000),
    ):
        assert loads(text) == peer_loads(text)
        ours, peer = paired(lambda: loads(text), lambda: peer_loads(text),  # noqa: B023
                            max(1, int(number * scale)), repeats)
        assert peer is not None
        mb = len(text.encode()) / 1e6
        rows.append({"row": name, "chatparse": _speed(ours, mb), "peer": _speed(peer, mb), "ratio": ours / peer,
                     "target": f"≤ {LOADS_TARGET}x", "met": ours / peer <= LOADS_TARGET})
    number = max(1, int(3000 * scale))
    cases = {
        "check_answer, 2 KB, 5 citations, 20 blocks": answer_case(),
        "same, a line break and quotes (escapes)": answer_case(escapes=True),
        "same, \\u escapes (ensure_ascii)": answer_case(ascii_only=True),
    }
    for name, (raw, evidence) in cases.items():
        assert check_answer(raw, evidence).ok and peer_check(raw, evidence)
        ours, peer = paired(lambda: check_answer(raw, evidence), lambda: peer_check(raw, evidence),  # noqa: B023
                            number, repeats)
        assert peer is not None
        rows.append(_check_row(name, ours, peer))
    raw, evidence = answer_case()
    ours, peer = paired_fresh(lambda text: check_answer(text, evidence), lambda text: peer_check(text, evidence),
                              raw, number, repeats)
    rows.append(_check_row("same as the first, a fresh copy per call", ours, peer))
    escaped, ascii_only = answer_case(escapes=True)[0], answer_case(ascii_only=True)[0]
    answer = _read_valid_answer(raw)
    assert answer is not None and _read_valid_answer(escaped) is not None
    stages: tuple[tuple[str, Callable[[], object]], ...] = (
        ("stage: size", lambda: _check_size(raw)),
        ("stage: JSON+bare+schema, one pydantic read", lambda: _read_valid_answer(raw)),
        ("stage: same, with escapes", lambda: _read_valid_answer(escaped)),
        ("stage: same, many \\u escapes (C scan)", lambda: _read_valid_answer(ascii_only)),
        ("stage:   of which the strict C scan", lambda: scan_strict(ascii_only, max_bytes=65_536)),
        ("stage: rules (status, limits, grounding)",
         lambda: [rule(answer, evidence) for rule in (_status_rules, _limits, _grounding)]),
    )
    for name, fn in stages:
        ours, _ = paired(fn, None, number, repeats)
        rows.append({"row": name, "chatparse": f"{ours * 1e6:.2f} µs", "peer": "", "ratio": None,
                     "target": "", "met": None})
    return rows


def _check_row(name: str, ours: float, peer: float) -> dict[str, Any]:
    return {"row": name, "chatparse": f"{ours * 1e6:.2f} µs", "peer": f"{peer * 1e6:.2f} µs", "ratio": ours / peer,
            "target": f"≤ {CHECK_TARGET_US:g} µs", "met": ours * 1e6 <= CHECK_TARGET_US}


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--quick", action="store_true", help="fewer repeats and iterations (a smoke run)")
    args = cli.parse_args()
    rows = run(args.quick)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"| {'row':44} | {'chatparse':>12} | {'peer':>12} | {'ratio':>6} | {'target':>9} |")
    print(f"|{'-' * 46}|{'-' * 14}|{'-' * 14}|{'-' * 8}|{'-' * 11}|")
    for row in rows:
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else ""
        target = row["target"] + (" ✓" if row["met"] else " ✗" if row["met"] is False else "")
        print(f"| {row['row']:44} | {row['chatparse']:>12} | {row['peer']:>12} | {ratio:>6} | {target:>9} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
