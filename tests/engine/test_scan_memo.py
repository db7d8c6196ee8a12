"""The engine's remembered scan answers (``ResponseParser._scan_delimiters``) and the scanner's indexes
change no event: every feed of a stream gives what a parser that scans afresh gives, on delimiter-dense
streams (headers forming again and again, split anywhere) of every built-in template and the bench
templates. Also: the literal index equals ``str.find``, compiled transforms equal ``apply_transform``."""

from __future__ import annotations

import functools
import json
import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chatparse
from chatparse.benchmark import BUILTINS, TEMPLATES, make_output
from chatparse.engine import scan as scan_module
from chatparse.engine.scanner import _Occurrences
from chatparse.errors import ChatparseError
from chatparse.template.fill import compile_transform
from chatparse.template.regex_info import analyze
from chatparse.templates import get_template, list_templates
from chatparse.transform import apply_transform
from tests.streamcheck import random_split
from tests.templates.corpus_loader import corpus_cases, load_case


class _Fresh(chatparse.ResponseParser):
    """Scans every feed with the scanners: no remembered answer is ever used."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._memo_text = -1


def _run(parser_cls: Any, template: Any, prefix: str, chunks: list[str], tools: Any = None) -> Any:
    try:
        parser = parser_cls(template, prefix, tools=tools, on_malformed="keep")
        feeds = [json.dumps(parser.feed(chunk), default=repr, sort_keys=True) for chunk in chunks]
        message, events = parser.finalize()
    except ChatparseError as exc:
        return ("error", type(exc).__name__, exc.code)
    return json.dumps(parser.initial_events, default=repr), feeds, json.dumps([message, events], default=repr)


def _chunkings(rng: random.Random, text: str) -> list[list[str]]:
    sizes = [1, 2, 3, 4, 5, 7]
    out = [[text[i : i + n] for i in range(0, len(text), n)] for n in sizes]
    return out + [random_split(text, rng) for _ in range(2)]


@pytest.mark.parametrize("kind", sorted(set(BUILTINS.values())))
@pytest.mark.parametrize("every", [40, 90, 200])
def test_dense_streams_feed_as_fresh_scans(kind: str, every: int) -> None:
    rng = random.Random(every)
    text = make_output(kind, 4000, every=every, reasoning=every, seed=every)
    templates = [TEMPLATES[kind], *(name for name, k in BUILTINS.items() if k == kind)]
    for template in templates:
        for chunks in _chunkings(rng, text):
            assert _run(chatparse.ResponseParser, template, "", chunks) == _run(_Fresh, template, "", chunks)


def _in_turns(parsers: list[Any], streams: list[list[str]]) -> list[Any]:
    """Feed each parser its stream, one chunk to each in turn; per parser what ``_run`` returns."""
    feeds: list[list[str]] = [[] for _ in parsers]
    for step in range(max(map(len, streams))):
        for i, (parser, chunks) in enumerate(zip(parsers, streams, strict=True)):
            if step < len(chunks):
                feeds[i].append(json.dumps(parser.feed(chunks[step]), default=repr, sort_keys=True))
    out = []
    for parser, fed in zip(parsers, feeds, strict=True):
        message, events = parser.finalize()
        out.append((json.dumps(parser.initial_events, default=repr), fed, json.dumps([message, events], default=repr)))
    return out


def _dense_streams(kind: str, rng: random.Random) -> list[list[str]]:
    texts = [make_output(kind, 2500, every=every, reasoning=every, seed=seed)
             for seed, every in enumerate((90, 200, 60))]
    return [random_split(text, rng) for text in texts]


@pytest.mark.parametrize("kind", sorted(set(BUILTINS.values())))
def test_parsers_of_one_template_share_answers_and_feed_as_fresh_scans(kind: str) -> None:
    """The remembered answers are the template's, shared by its parsers: streams one after another and
    streams fed in turns (one parser with a hold-back cap of 8) each feed as a fresh scan would, whatever
    the other parsers left remembered."""
    rng = random.Random(kind)
    for template in [TEMPLATES[kind], *(name for name, k in BUILTINS.items() if k == kind)]:
        streams = _dense_streams(kind, rng)
        for chunks in streams:
            assert _run(chatparse.ResponseParser, template, "", chunks) == _run(_Fresh, template, "", chunks)
        small = chatparse.Limits(max_holdback=8)
        parsers = [chatparse.ResponseParser(template, "", on_malformed="keep", limits=lim) for lim in (None, small, None)]
        expected = [_run(_Fresh, template, "", chunks) for chunks in streams]
        expected[1] = _run(functools.partial(_Fresh, limits=small), template, "", streams[1])
        assert _in_turns(parsers, streams) == expected


def test_a_full_memo_is_cleared_under_parsers_in_the_middle_of_a_header(monkeypatch: pytest.MonkeyPatch) -> None:
    """With room for three answers the shared memo is cleared again and again, while other parsers hold
    a table of it for a header still forming: every feed is still a fresh scan's."""
    monkeypatch.setattr(scan_module, "_MEMO_SIZE", 3)
    rng = random.Random(3)
    template = {**TEMPLATES["gpt-oss-regex"], "defaults": {"role": "assistant", "memo": "small"}}  # its own memo
    streams = _dense_streams("gpt-oss-regex", rng)
    parsers = [chatparse.ResponseParser(template, "", on_malformed="keep") for _ in streams]
    expected = [_run(_Fresh, template, "", chunks) for chunks in streams]
    assert _in_turns(parsers, streams) == expected
    assert chatparse.load_template(template).engine_tables["memo"].size <= 3


def test_a_later_stream_finds_the_headers_an_earlier_one_saw() -> None:
    """The second parser of a template scans the delimiter regexes far less often than the first."""
    template = {**TEMPLATES["gpt-oss-regex"], "defaults": {"role": "assistant", "memo": "later"}}  # a fresh memo
    text = make_output("gpt-oss-regex", 8000, every=200, reasoning=200)
    chunks = [text[i : i + 4] for i in range(0, len(text), 4)]
    scans = []
    for _ in range(2):
        parser = chatparse.ResponseParser(template, "")
        counted = 0
        real = parser._scan_scanners

        def counting(*args: Any, _real: Any = real) -> Any:
            nonlocal counted
            counted += 1
            return _real(*args)

        parser._scan_scanners = counting  # type: ignore[method-assign]
        for chunk in chunks:
            parser.feed(chunk)
        scans.append(counted)
    assert scans[1] * 4 < scans[0], scans


def test_parsers_in_threads_share_the_memo() -> None:
    """Two threads stream through parsers of one template at once: each result is a fresh scan's."""
    template = {**TEMPLATES["qwen3.5-xml"], "defaults": {"role": "assistant", "memo": "threads"}}
    streams = _dense_streams("qwen3.5-xml", random.Random(5)) * 3
    expected = [_run(_Fresh, template, "", chunks) for chunks in streams]
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda chunks: _run(chatparse.ResponseParser, template, "", chunks), streams))
    assert got == expected


CASES: dict[str, list[dict[str, Any]]] = {}
for _family, _path in corpus_cases():
    CASES.setdefault(_family, []).append(load_case(_path))


def _template_name(family: str) -> str:
    names = list_templates()
    return family if family in names else next(n for n in names if n.replace(".", "_") == family)


def _repeated(rng: random.Random, text: str) -> str:
    """The output with one stretch written several times (its delimiters form again and again)."""
    if not text:
        return text
    a, b = sorted(rng.randrange(len(text) + 1) for _ in range(2))
    return text[:b] + text[a:b] * rng.randint(2, 5) + text[b:]


@pytest.mark.parametrize("family", sorted(CASES))
@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1))
def test_repeated_corpus_stretches_feed_as_fresh_scans(family: str, seed: int) -> None:
    rng = random.Random(seed)
    case = rng.choice(CASES[family])
    template = get_template(_template_name(family))
    text = _repeated(rng, case["output"])
    chunks = rng.choice(_chunkings(rng, text))
    prefix, tools = case["prefix"], case.get("tools")
    assert _run(chatparse.ResponseParser, template, prefix, chunks, tools) == _run(_Fresh, template, prefix, chunks, tools)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(pieces=st.lists(st.sampled_from(["ab", "a", "b", "x", "abab", "<|s|>", "<|"]), max_size=30),
       queries=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 80)), max_size=40))
def test_occurrence_index_is_str_find(pieces: list[str], queries: list[tuple[int, int]]) -> None:
    literals = ("ab", "<|s|>", "b", "zz")
    index = _Occurrences(literals)
    buf = ""
    for step, (i, pos) in enumerate(queries):
        if pieces and step % 3 == 0:
            buf += pieces[step % len(pieces)]  # the buffer only grows between resets
        if step % 17 == 16:
            buf = buf[3:]
            index.reset()
        assert index.next(buf, i, pos) == buf.find(literals[i], pos)


TRANSFORMS = [
    {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
    {"name": "{content.name}", "args": "{content.arguments.x}", "fixed": [1, "two", None, "{name}"]},
    "{content}",
    ["{content}", {"k": "literal"}],
]
SCOPES = [
    {"name": "f", "content": {"name": "g", "arguments": {"x": 1}}},
    {"content": {"name": "g", "arguments": 3}},
    {"content": "text"},
    {"name": "f"},
]


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("scope", SCOPES)
def test_compiled_transform_is_apply_transform(transform: Any, scope: dict[str, Any]) -> None:
    fill = compile_transform(transform, field="f")
    try:
        expected: Any = apply_transform(transform, scope, field="f")
    except ChatparseError as exc:
        with pytest.raises(type(exc)) as raised:
            fill(scope)
        assert (raised.value.code, str(raised.value)) == (exc.code, str(exc))
        return
    assert fill(scope) == expected


@pytest.mark.parametrize(("pattern", "anchors", "exact"), [
    (r"(?:<tool_call>\s*)?<function=(?P<name>[^>\n]+)>", ("<tool_call>", "<function="), True),
    (r"(?<![^\s>])to=self|(?:(?<![^\s>])|(?<=<\|start\|>assistant))<\|message\|>", ("to=self", "<|message|>"), False),
    (r"abc(?:x)?def", ("abcx", "abcdef"), True),
    (r"(?:x)?\s*<a>", None, True),
])
def test_anchors_through_optional_parts_and_zero_width_groups(pattern: str, anchors: Any, exact: bool) -> None:
    info = analyze(pattern)
    assert info.anchors == anchors
    if anchors is not None:
        assert info.anchors_exact is exact


@pytest.mark.parametrize(("pattern", "blind"), [
    (r"<\|channel\|>(?:commentary|analysis)\s+to=(?!x)(?P<n>[^\s<]+)", True),
    (r"</function>\s*</tool_call>|</function>(?=\s{0,64}<tool_call>)", True),
    (r"a(?!$)b", False), (r"\bEND\b", False), (r"(?>a)b", False), (r"a++b", False), (r"(a)\1", False),
])
def test_end_blind_patterns(pattern: str, blind: bool) -> None:
    assert analyze(pattern).end_blind is blind
