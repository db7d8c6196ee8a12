"""Hostile output and hostile templates: every fault ends bounded and named (issue 7).

Each test fails on the reference's behaviour (transformers' ResponseParser hangs, holds everything back,
corrupts split characters or lets raw exceptions escape) and passes here. Anything that could hang runs in
a subprocess with a wall-clock bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chatparse
from chatparse.engine.limits import Limits
from chatparse.errors import (
    ChatparseError,
    ContentNestingError,
    InvalidUtf8Error,
    RegexBudgetError,
    TruncatedUtf8Error,
    UsageError,
)
from tests.engine.test_parser import HARMONY, QWEN
from tests.streamcheck import check_event_stream

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "src" / "chatparse" / "templates" / "data"


def run_bounded(code: str, timeout: float) -> dict[str, Any]:
    """Run ``code`` (which must define ``result``) in a fresh interpreter; the outcome as a dict:
    ``{"ok": result}`` or ``{"error": class name, "code": ..., "field": ..., "key": ..., "budget": ...}``,
    plus ``seconds``. Raises ``subprocess.TimeoutExpired`` past ``timeout`` (the wall-clock bound)."""
    program = textwrap.dedent("""
        import json, sys, time
        sys.path.insert(0, {root!r})
        import chatparse
        from chatparse.engine.limits import Limits
        from tests.engine.test_parser import HARMONY, QWEN
        t0 = time.perf_counter()
        try:
        {body}
            out = {{"ok": result}}
        except Exception as exc:
            out = {{"error": type(exc).__name__, "code": getattr(exc, "code", None),
                   "field": getattr(exc, "field", None), "key": getattr(exc, "key", None),
                   "budget": getattr(exc, "details", {{}}).get("budget"), "size": len(str(exc))}}
        out["seconds"] = time.perf_counter() - t0
        print(json.dumps(out))
    """).format(root=str(ROOT), body=textwrap.indent(textwrap.dedent(code), "    "))
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", program], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# --- 1. feed_bytes ------------------------------------------------------------------------------

SAMPLE = "<think>é 中文 🙂 ß</think>Ünïcödé ✓ 𝄞 fin<|im_end|>"


def test_feed_bytes_split_at_every_byte_offset() -> None:
    """Decoding each chunk on its own (what a naive bytes adapter does) corrupts characters split
    across chunks; the incremental decoder is exact at every split point."""
    data = SAMPLE.encode()
    expected = chatparse.parse_response(SAMPLE, QWEN, prefix="")
    naive_broken = 0
    for cut in range(1, len(data)):
        parser = chatparse.ResponseParser(QWEN, prefix="")
        events = parser.feed_bytes(data[:cut]) + parser.feed_bytes(data[cut:])
        message, final = parser.finalize()
        assert message == expected, cut
        check_event_stream(events + final, message, QWEN)
        naive = data[:cut].decode(errors="replace") + data[cut:].decode(errors="replace")
        naive_broken += naive != SAMPLE
    assert naive_broken >= 10  # the sample really does split characters


def test_feed_bytes_one_byte_at_a_time() -> None:
    parser = chatparse.ResponseParser(QWEN, prefix="")
    for b in SAMPLE.encode():
        parser.feed_bytes(bytes([b]))
    assert parser.finalize()[0] == chatparse.parse_response(SAMPLE, QWEN, prefix="")


def test_feed_bytes_invalid_utf8_is_named_with_offset() -> None:
    parser = chatparse.ResponseParser(QWEN, prefix="")
    parser.feed_bytes(b"abc\xc3")
    with pytest.raises(InvalidUtf8Error) as info:
        parser.feed_bytes(b"(def")
    assert info.value.code == "invalid_utf8" and info.value.offset == 3
    assert isinstance(info.value, ValueError)


def test_feed_bytes_truncated_at_end_is_named() -> None:
    parser = chatparse.ResponseParser(QWEN, prefix="")
    parser.feed_bytes("ok 中".encode()[:-1])
    with pytest.raises(TruncatedUtf8Error) as info:
        parser.finalize()
    assert info.value.code == "truncated_utf8" and isinstance(info.value, InvalidUtf8Error)


def test_feed_str_while_bytes_pending_is_refused() -> None:
    parser = chatparse.ResponseParser(QWEN, prefix="")
    parser.feed_bytes(b"\xe4\xb8")
    with pytest.raises(UsageError):
        parser.feed("x")
    parser.feed_bytes(b"\xad")
    parser.feed("x")
    assert parser.finalize()[0]["content"] == "中x"


def test_feed_bytes_on_the_fast_path_still_refuses_str_mid_character() -> None:
    parser = chatparse.ResponseParser(QWEN, prefix="")
    parser.feed_bytes(b"<think>plain words ")
    parser.feed_bytes(b"more words")  # the region is open and nothing is held: the fast path
    parser.feed_bytes("中".encode()[:2])
    with pytest.raises(UsageError):
        parser.feed("x")
    parser.feed_bytes("中".encode()[2:])
    parser.feed("x</think>")
    assert parser.finalize()[0]["thinking"] == "plain words more words中x"


def test_long_byte_streams_match_str_streams() -> None:
    text = "<think>" + "é 中文 🙂 ß plain text, " * 200 + "</think>" + "Ünïcödé ✓ 𝄞 fin " * 200 + "<|im_end|>"
    expected = chatparse.parse_response(text, QWEN, prefix="")
    data = text.encode()
    for size in (1, 3, 4, 7, 64):
        parser = chatparse.ResponseParser(QWEN, prefix="")
        events = []
        for i in range(0, len(data), size):
            events += parser.feed_bytes(data[i : i + size])
        message, final = parser.finalize()
        assert message == expected, size
        check_event_stream(events + final, message, QWEN)


# --- 2. regex time budgets ------------------------------------------------------------------------

CATASTROPHIC = [r"(a+)+$", r"(a|a)+$", r"(a|aa)+$"]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
@pytest.mark.parametrize("mode", ["one-shot", "stream"])
def test_catastrophic_open_pattern_hits_the_budget(pattern: str, mode: str) -> None:
    """The reference did not finish in 60 s on 10 KB; here: within 2 s, RegexBudgetError naming field
    and key (or the message, when a streamed search finishes inside its budget)."""
    out = run_bounded(f"""
        tpl = {{"start_anchor": "<s>", "fields": {{"x": {{"open_pattern": {pattern!r}, "close": "</x>"}},
                                                   "content": {{}}}}}}
        text = "a" * 10000 + "!"
        if {mode!r} == "one-shot":
            result = chatparse.parse_response(text, tpl, prefix="")
        else:
            p = chatparse.ResponseParser(tpl, prefix="")
            for i in range(0, len(text), 16):
                p.feed(text[i:i + 16])
            result = p.finalize()[0]
    """, timeout=20)
    # Bounded either way: a named budget error, or (a streamed search given its one grace extension) the
    # right message, the pattern never matching.
    if "ok" in out:
        assert out["ok"] == {"content": "a" * 10000 + "!"}, out
    else:
        assert out["error"] == "RegexBudgetError", out
        assert (out["code"], out["field"], out["key"]) == ("regex_budget_exceeded", "x", "open_pattern")
    assert out["seconds"] < 2.0, out


def test_budgets_are_configurable_and_named() -> None:
    tpl = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": r"(a|a)+$", "close": "</x>"}, "content": {}}}
    text = "a" * 28 + "!"  # about 20 s unbounded
    cases = [(Limits(search_timeout=0.01), "search_timeout"),
             (Limits(search_timeout=5, feed_budget=0.02, message_budget=5), "feed_budget"),
             (Limits(search_timeout=5, feed_budget=5, message_budget=0.02), "message_budget")]
    for limits, which in cases:
        t0 = time.perf_counter()
        with pytest.raises(RegexBudgetError) as info:
            chatparse.parse_response(text, tpl, prefix="", limits=limits)
        assert time.perf_counter() - t0 < 1.0
        assert info.value.details["budget"] == which
        assert (info.value.field, info.value.key) == ("x", "open_pattern")
        assert isinstance(info.value, RuntimeError) and not isinstance(info.value, OSError)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(UsageError):
        Limits(search_timeout=0)
    with pytest.raises(UsageError):
        Limits(max_holdback=-1)
    with pytest.raises(UsageError):
        chatparse.ResponseParser(QWEN, prefix="", limits={"search_timeout": 1})  # type: ignore[arg-type]


def test_deep_json_region_is_a_named_error() -> None:
    """The reference lets RecursionError escape from 100k nested '['."""
    with pytest.raises(ContentNestingError) as info:
        chatparse.parse_response("<tool_call>" + "[" * 100_000 + "</tool_call>", QWEN, prefix="")
    assert info.value.field == "tool_calls" and len(str(info.value)) < 400
    message = chatparse.parse_response("<tool_call>" + "[" * 100_000 + "</tool_call>ok", QWEN, prefix="",
                                       on_malformed="keep")
    assert message["content"] == "ok" and message["malformed"][0]["code"] == "content_too_deep"


# --- 4. bounded hold-back -------------------------------------------------------------------------

_HARMONY: dict[str, Any] = HARMONY
HARMONY_IMPLICIT: dict[str, Any] = {
    **_HARMONY, "fields": {**_HARMONY["fields"], "content": {"close": ["<|return|>", "<|end|>"]}}
}


def test_unterminated_tool_header_streams() -> None:
    """The reference holds back everything after an unterminated gpt-oss tool header (256 KB, 0 bytes
    emitted); here at most max_holdback + the longest literal is ever held."""
    parser = chatparse.ResponseParser(HARMONY_IMPLICIT, prefix="")
    text = "<|channel|>commentary to=functions.x " + "y" * 256 * 1024
    cap = parser.limits.max_holdback + len("<|channel|>analysis<|message|>")
    emitted = 0
    t0 = time.perf_counter()
    for i in range(0, len(text), 16):
        for event in parser.feed(text[i : i + 16]):
            if event["type"] == "region_chunk":
                emitted += len(event["text"])
        assert parser.held <= cap
    assert time.perf_counter() - t0 < 5.0
    assert emitted >= len(text) - cap
    message, _ = parser.finalize()
    assert message["content"] == text


def test_builtin_gpt_oss_holdback_is_bounded() -> None:
    if not (DATA / "gpt_oss.json").is_file():
        pytest.skip("no built-in gpt_oss template")
    parser = chatparse.ResponseParser(str(DATA / "gpt_oss.json"), prefix="")
    text = "<|channel|>commentary to=functions.x " + "y" * 64 * 1024
    for i in range(0, len(text), 16):
        parser.feed(text[i : i + 16])
        assert parser.held <= parser.limits.max_holdback + 64
    parser.finalize()


def test_holdback_is_configurable_and_small_inputs_are_unchanged() -> None:
    text = "<|channel|>commentary to=functions.get " + "{}" * 100 + "<|message|>{}<|call|>"
    exact = chatparse.parse_response(text, HARMONY_IMPLICIT, prefix="")
    assert exact["tool_calls"][0]["function"]["name"] == "get"
    parser = chatparse.ResponseParser(HARMONY_IMPLICIT, prefix="", limits=Limits(max_holdback=16))
    for ch in text:
        parser.feed(ch)
    capped = parser.finalize()[0]
    assert "tool_calls" not in capped  # the pending header was given up and released as content
    assert text.startswith(capped["content"][:40])


# --- 5. hostile-template corpus -----------------------------------------------------------------

CORPUS: list[tuple[str, str, dict[str, Any], float]] = [
    ("catastrophic (a|a)+$", """
        tpl = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": "(a|a)+$", "close": "</x>"}, "content": {}}}
        result = chatparse.parse_response("a" * 10000 + "!", tpl, prefix="")
     """, {"error": "RegexBudgetError", "code": "regex_budget_exceeded"}, 10),
    ("catastrophic close_pattern", """
        tpl = {"start_anchor": "<s>", "fields": {"x": {"open": "<x>", "close_pattern": "(a|a)+Z"}}}
        result = chatparse.parse_response("<x>" + "a" * 10000, tpl, prefix="")
     """, {"error": "RegexBudgetError", "code": "regex_budget_exceeded"}, 10),
    ("zero-width open + zero-width close", """
        tpl = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": "(?=a)", "close_pattern": "(?=b)"},
                                                 "content": {}}}
        result = chatparse.parse_response("xaab" * 1000, tpl, prefix="")
     """, {"ok": {"content": "b", "x": "aa"}, "or_error": "RegexBudgetError"}, 10),
    ("empty open + empty close", """
        tpl = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": "", "close_pattern": ""}, "content": {}}}
        p = chatparse.ResponseParser(tpl, prefix="")
        for ch in "xaab" * 250:
            p.feed(ch)
        result = p.finalize()[0]
     """, {"ok": {"content": "b"}, "or_error": "RegexBudgetError"}, 10),
    ("huge counted repeat", """
        tpl = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": "(?:a{1000}){10000}", "close": "</x>"}}}
        result = chatparse.load_template(tpl) and None
     """, {"error": "TemplateError", "code": "repeat_too_large"}, 5),
    ("nested counted repeats", """
        tpl = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": "(?:(?:a{999}){999}){9}", "close": "</x>"}}}
        result = chatparse.load_template(tpl) and None
     """, {"error": "TemplateError", "code": "repeat_too_large"}, 5),
    ("deep JSON", """
        result = chatparse.parse_response("<tool_call>" + "[" * 100000 + "</tool_call>", QWEN, prefix="")
     """, {"error": "ContentNestingError", "code": "content_too_deep"}, 10),
    ("gigantic region (10 MB)", """
        result = len(chatparse.parse_response("<think>" + "x" * 10_000_000 + "</think>ok", QWEN, prefix="")["thinking"])
     """, {"ok": 10_000_000}, 20),
    ("gigantic bad JSON region: short message", """
        result = chatparse.parse_response("<tool_call>{" + "x" * 10_000_000 + "</tool_call>", QWEN, prefix="")
     """, {"error": "ContentParseError", "code": "content_parse_failed"}, 20),
    ("lone surrogates", """
        result = chatparse.parse_response("<think>\\ud800</think>a\\udfff", QWEN, prefix="")
        result = [ord(result["thinking"]), result["content"][0], ord(result["content"][1])]
     """, {"ok": [0xD800, "a", 0xDFFF]}, 10),
    ("NUL bytes", """
        result = chatparse.parse_response("<think>a\\x00b</think>\\x00<tool_call>{\\"name\\": \\"f\\\\u0000\\", \\"arguments\\": {}}</tool_call>",
                                          QWEN, prefix="")
        result = [result["thinking"], result["tool_calls"][0]["function"]["name"]]
     """, {"ok": ["a\x00b", "f\x00"]}, 10),
    ("invalid UTF-8 bytes", """
        p = chatparse.ResponseParser(QWEN, prefix="")
        p.feed_bytes(b"ok\\xff")
        result = None
     """, {"error": "InvalidUtf8Error", "code": "invalid_utf8"}, 10),
    ("unterminated tool header, 256 KB", """
        p = chatparse.ResponseParser(HARMONY, prefix="")
        text = "<|channel|>commentary to=functions.x " + "y" * 256 * 1024
        held = 0
        for i in range(0, len(text), 16):
            p.feed(text[i:i + 16])
            held = max(held, p.held)
        p.finalize()
        result = held <= p.limits.max_holdback + 64
     """, {"ok": True}, 15),
]


@pytest.mark.parametrize(("name", "code", "expected", "bound"), CORPUS, ids=[c[0] for c in CORPUS])
def test_hostile_corpus(name: str, code: str, expected: dict[str, Any], bound: float) -> None:
    out = run_bounded(code, timeout=bound)
    seconds = out.pop("seconds")
    expected = dict(expected)
    # Zero-width pairs do thousands of tiny searches in one feed: under machine load their summed time
    # may cross the 50 ms feed budget. Either outcome is bounded and named; a hang is the failure.
    alternative = expected.pop("or_error", None)
    if alternative is not None and out.get("error") == alternative:
        assert out["code"] == "regex_budget_exceeded" and out["budget"] == "feed_budget", out
    elif "error" in expected:
        assert {k: out.get(k) for k in expected} == expected, (name, out)
        assert out["size"] < 1000, "error messages carry a short excerpt, never the region"
    else:
        assert out == expected, (name, out)
    assert seconds < bound


# --- 6. only ChatparseError leaves the engine ------------------------------------------------------

def _builtin_templates() -> list[Any]:
    try:
        from chatparse.templates import list_templates  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return [str(p) for p in sorted(DATA.glob("*.json"))]
    return list(list_templates())


TEMPLATES = [QWEN, HARMONY, *_builtin_templates()]
ALPHABET = st.sampled_from(["<", ">", "|", "[", "]", "{", "}", '"', ":", ",", "\\", "\n", " ", "a", "x",
                            "<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>", "<|channel|>",
                            "<|message|>", "<|call|>", "<|end|>", "to=functions.f", "\x00", "\ud800", "é"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TEMPLATES), st.lists(st.one_of(ALPHABET, st.text(max_size=8)), max_size=30),
       st.integers(1, 7), st.sampled_from(["raise", "keep"]))
def test_only_chatparse_errors_escape(template: Any, parts: list[str], size: int, policy: Any) -> None:
    text = "".join(parts)
    try:
        chatparse.parse_response(text, template, prefix="", on_malformed=policy)
    except ChatparseError:
        pass
    try:
        parser = chatparse.ResponseParser(template, prefix="", on_malformed=policy)
        for i in range(0, len(text), size):
            parser.feed(text[i : i + size])
        parser.finalize()
    except ChatparseError:
        pass


# --- 7. found by fuzzing: long runs, whitespace inside a forming delimiter -------------------------


def test_one_shot_of_a_long_run_is_linear_where_the_regex_partial_search_is_not() -> None:
    """``(?:<x>\\s*)?<y>``-shaped open patterns make the regex module's partial search quadratic over a
    long run of '<'; the search only looks back as far as the hold-back cap."""
    out = run_bounded("""
        message = chatparse.parse_response("<" * 200_000, "deepseek_r1", prefix="")
        result = len(message["content"]) + sum(len(m["raw"]) for m in message.get("malformed", []))
    """, timeout=20)
    assert out["ok"] == 200_000 and out["seconds"] < 2.0, out  # nothing lost (a cut opener is reported)


def test_whitespace_inside_a_forming_header_does_not_lose_the_call() -> None:
    text = '<|channel|>commentary to=functions.f' + " " * 300 + '<|constrain|>json<|message|>{"a": 1}<|call|>'
    for size in (1, 16, len(text)):
        parser = chatparse.ResponseParser("gpt_oss", prefix="")
        for i in range(0, len(text), size):
            parser.feed(text[i : i + size])
        message, _ = parser.finalize()
        assert message["tool_calls"] == [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]


def test_a_json_body_without_backslashes_is_read_in_linear_time() -> None:
    out = run_bounded("""
        text = '{"name": "f", "parameters": ' * 40_000
        result = chatparse.parse_response(text, "llama3_json", prefix="")["malformed"][0]["code"]
    """, timeout=30)
    assert out["ok"] == "truncated" and out["seconds"] < 5.0, out


def test_a_content_parser_regex_runs_under_a_budget_and_warns_at_load() -> None:
    template = {"start_anchor": "<s>", "fields": {"c": {"open": "<c>", "close": "</c>", "content": "xml-inline",
                "content_args": {"tag_pattern": "<(?P<key>(a+)+)>(?P<value>b)"}}, "content": {}}}
    with pytest.warns(chatparse.TemplateWarning, match="content_args.tag_pattern"):
        chatparse.load_template(template)
    out = run_bounded("""
        tpl = {"start_anchor": "<s>", "fields": {"c": {"open": "<c>", "close": "</c>", "content": "xml-inline",
               "content_args": {"tag_pattern": "<(?P<key>(a|a)+)>(?P<value>b)"}}, "content": {}}}
        result = chatparse.parse_response("<c><" + "a" * 40 + ">x</c>", tpl, prefix="")
    """, timeout=20)
    assert (out["error"], out["code"], out["field"], out["key"]) == (
        "RegexBudgetError", "regex_budget_exceeded", "c", "content_args"), out
    assert out["seconds"] < 3.0, out


def test_xml_inline_values_stay_linear_on_a_long_body() -> None:
    out = run_bounded("""
        tpl = {"start_anchor": "<s>", "fields": {"c": {"open": "<c>", "close": "</c>", "content": "xml-inline",
               "content_args": {"tag_pattern": "<p=(?P<key>[^>]+)>(?P<value>.*?)</p>"}}, "content": {}}}
        text = "<c>" + "<p=a>x</p>y" * 20_000 + "</c>"
        result = chatparse.parse_response(text, tpl, prefix="")["c"]
    """, timeout=20)
    assert out["ok"] == {"a": "x"} and out["seconds"] < 3.0, out
