"""Parsers in a threaded server: many threads streaming at once, sharing templates, starting cold.

Real threads with a tiny ``sys.setswitchinterval`` (a thread switch between almost any two bytecodes), so
races that a normal switch interval hides show here. Each test is bounded to a few seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.engine import parser as parser_module
from chatparse.errors import ChatparseError
from chatparse.template import compile as compile_module
from tests.streamcheck import random_split
from tests.templates.corpus_loader import CORPUS, load_case

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def tiny_switch_interval() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def run_threads(count: int, target: Callable[[int], Any]) -> list[Any]:
    """``target(i)`` in ``count`` threads started together; per thread its result or the exception."""
    results: list[Any] = [None] * count
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = target(i)
        except BaseException as exc:  # the test reports whatever escaped
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    with tiny_switch_interval():
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    return results


def family_cases(family: str) -> list[dict[str, Any]]:
    return [load_case(path) for path in sorted((CORPUS / family).glob("*.json"))]


def tokens(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def other_work(n: int = 2000) -> int:
    """What a server thread does between two chunks of one stream (sampling, detokenizing, I/O)."""
    return sum(i * i for i in range(n))


# --- regex budgets count the parser's own CPU time --------------------------------------------------------

def test_busy_threads_are_not_catastrophic_patterns() -> None:
    """16 threads stream gpt-oss and Qwen3.5 outputs while each does other CPU work per chunk, under small
    regex budgets. The budgets once counted the process's CPU time (every thread's): benign streams
    failed with regex_budget_exceeded. Counted on each parser's own thread, none fails, and each message
    is the one-shot parse's."""
    limits = chatparse.Limits(search_timeout=0.01, feed_budget=0.02, message_budget=0.05)
    work = [(name, case) for name, family in (("gpt_oss", "gpt_oss"), ("qwen3.5", "qwen3_5"))
            for case in family_cases(family)[:6]]
    expected = [chatparse.parse_response(case["output"], name, prefix=case["prefix"], tools=case.get("tools"),
                                         on_malformed="keep") for name, case in work]

    def serve(i: int) -> list[Any]:
        out = []
        for name, case in work[i % 3 :: 3]:
            parser = chatparse.ResponseParser(name, case["prefix"], tools=case.get("tools"), on_malformed="keep",
                                              limits=limits)
            try:
                for chunk in tokens(case["output"]):
                    other_work()
                    parser.feed(chunk)
                out.append(parser.finalize()[0])
            except ChatparseError as exc:
                out.append(exc.code)
        return out

    results = run_threads(16, serve)
    for i, got in enumerate(results):
        assert got == expected[i % 3 :: 3], f"thread {i}: {got if isinstance(got, Exception) else 'messages differ'}"


def test_a_catastrophic_pattern_still_fails_among_busy_threads() -> None:
    """The other side of the rule: a pattern that is slow on its own fails in every thread, in bounded time."""
    template = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": r"(a|aa)+$", "close": "</x>"}, "content": {}}}
    limits = chatparse.Limits(search_timeout=0.01, feed_budget=0.02, message_budget=0.05)

    def serve(i: int) -> str:
        try:
            chatparse.parse_response("a" * 40 + "!", template, prefix="", limits=limits)
        except ChatparseError as exc:
            return exc.code
        return "parsed"

    assert run_threads(4, serve) == ["regex_budget_exceeded"] * 4


# --- first use in a fresh process -----------------------------------------------------------------------

COLD_START = r"""
import sys, threading
sys.setswitchinterval(1e-6)
import chatparse

for name in ("hermes", "qwen3_coder"):  # everything but the tool boundary is loaded before the threads start
    chatparse.ChatCompletionStream(name, "")

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
HERMES = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
CODER = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
OUTPUT = {"hermes": HERMES, "qwen3_coder": CODER}


def stream(name, tools):
    s = chatparse.ChatCompletionStream(name, "", tools=tools, id_factory=lambda i: f"call_{i}")
    for k in range(0, len(OUTPUT[name]), 4):
        s.feed(OUTPUT[name][k:k + 4])
    s.finish()
    return s.message["tool_calls"][0]["function"]["arguments"]


FIRST_USES = [  # each imports a different part of the pydantic-backed tool boundary first
    lambda: chatparse.parse_response(HERMES, "hermes", prefix="", tools=TOOLS)["tool_calls"][0]["function"]["arguments"],
    lambda: stream("hermes", None),
    lambda: stream("qwen3_coder", None),
    lambda: stream("qwen3_coder", TOOLS),
    lambda: dict(chatparse.parse_near_json("{'city': 'Paris'}")),
    lambda: chatparse.ToolSet(TOOLS).coerce("get_weather", '{"city": "Paris"}'),
]
barrier = threading.Barrier(16)
results = [None] * 16


def run(i):
    barrier.wait()
    try:
        results[i] = FIRST_USES[i % len(FIRST_USES)]()
    except BaseException as exc:
        results[i] = f"{type(exc).__name__}: {exc}"


threads = [threading.Thread(target=run, args=(i,)) for i in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
bad = [r for r in results if r != {"city": "Paris"}]
print("OK" if not bad else bad[:3])
"""


@pytest.mark.parametrize("attempt", range(3))
def test_first_use_from_16_threads_in_a_fresh_process(attempt: int) -> None:
    """A server's first 16 streams start at once in a fresh process: the first-use imports (the tool
    boundary loads pydantic on first use) once raced (_DeadlockError, ImportError of a partially
    initialized module, KeyError: 'chatparse.tools'; about one fresh process in eight here); every stream
    now parses."""
    done = subprocess.run([sys.executable, "-c", COLD_START], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "OK", done.stdout[-2000:]


# --- structures shared between parsers ------------------------------------------------------------------

def variant(i: int) -> dict[str, Any]:
    """A template dict of its own (a server holding many models' templates): hermes with a default that differs."""
    template = chatparse.get_template("hermes")
    return {**template, "defaults": {**template.get("defaults", {}), "variant": i}}


class _SlowEvictions(dict[str, Any]):
    """The compiled-template cache, with a thread switch likely inside each eviction (the window a race needs)."""

    def pop(self, key: str, *default: Any) -> Any:
        time.sleep(0.0005)
        return super().pop(key, *default)

    def __delitem__(self, key: str) -> None:
        time.sleep(0.0005)
        super().__delitem__(key)


def test_more_template_dicts_than_the_cache_holds_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """More distinct template dicts than the compiled-template cache holds, loaded from 16 threads: its
    evictions once raced (EngineFault: Unexpected KeyError); every parse now gives the single-threaded
    message."""
    count = compile_module._CACHE_SIZE + 16
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    expected = [chatparse.parse_response(text, variant(i), prefix="") for i in range(count)]
    monkeypatch.setattr(compile_module, "_CACHE", _SlowEvictions(compile_module._CACHE))

    def serve(t: int) -> list[Any]:  # each thread its own order: evictions everywhere
        return [chatparse.parse_response(text, variant((t * 5 + k) % count), prefix="") for k in range(count)]

    for t, got in enumerate(run_threads(16, serve)):
        assert not isinstance(got, BaseException), got
        assert got == [expected[(t * 5 + k) % count] for k in range(count)]
    assert len(compile_module._CACHE) <= compile_module._CACHE_SIZE


def test_parsers_of_a_fresh_template_start_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 parsers of one template no parser has used yet start at once: the per-template engine tables
    are built once, and no parser reads them half-built (a KeyError: 'floors' once escaped). Building a
    table is slowed down here, so that other threads start while it is built."""
    case = family_cases("qwen3_coder")[0]
    expected = chatparse.parse_response(case["output"], "qwen3_coder", prefix=case["prefix"], tools=case.get("tools"))
    template = chatparse.get_template("qwen3_coder")
    build = parser_module.ResponseParser._build_floor_table

    def slow_build(self: Any) -> Any:
        time.sleep(0.002)
        return build(self)

    monkeypatch.setattr(parser_module.ResponseParser, "_build_floor_table", slow_build)
    for round_ in range(3):
        fresh = chatparse.load_template({**template, "defaults": {**template.get("defaults", {}), "round": round_}})

        def serve(i: int, fresh: Any = fresh) -> Any:
            parser = chatparse.ResponseParser(fresh, case["prefix"], tools=case.get("tools"))
            for chunk in tokens(case["output"], 3 + i % 5):
                parser.feed(chunk)
            message = parser.finalize()[0]
            message.pop("round")
            return message

        assert run_threads(16, serve) == [expected] * 16


def test_threads_sharing_templates_give_the_single_threaded_results() -> None:
    """N threads stream corpus outputs of several families through parsers and chat-completion streams of
    the same shared templates, each with its own splits, and get exactly what one thread gets: messages,
    every feed's events and every feed's chunks."""
    families = {"gpt_oss": "gpt_oss", "qwen3_coder": "qwen3_coder", "hermes": "hermes", "deepseek_v3_1": "deepseek_v3.1",
                "kimi_k2": "kimi_k2", "minimax_m2": "minimax_m2", "llama4_pythonic": "llama4_pythonic"}
    work = [(name, case) for family, name in families.items() for case in family_cases(family)[:5]]

    def streams(seed: int) -> list[Any]:
        import random

        rng = random.Random(seed)
        out = []
        for name, case in work:
            chunks = random_split(case["output"], rng)
            parser = chatparse.ResponseParser(name, case["prefix"], tools=case.get("tools"), on_malformed="keep")
            events = [parser.feed(chunk) for chunk in chunks]
            out.append((json.dumps(events, default=repr), json.dumps(parser.finalize(), default=repr)))
            stream = chatparse.ChatCompletionStream(name, case["prefix"], tools=case.get("tools"), id_factory=str,
                                                    completion_id="chatcmpl-1", created=1)
            deltas = [stream.feed(chunk) for chunk in chunks] + [stream.finish()]
            out.append((json.dumps(deltas, default=repr), json.dumps(stream.message, default=repr)))
        return out

    expected = [streams(seed) for seed in range(8)]
    assert run_threads(8, streams) == expected
