"""The body tracker: strings, spans and brackets followed in any chunking, against a plain reference
that reads the whole text character by character."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from chatparse.structure import Structure

JSON = Structure("json")
PYTHON = Structure("python")
GLM = Structure(None, (("<arg_value>", "</arg_value>"),))
GEMMA = Structure("json", (('<|"|>', '<|"|>'),))


def reference(structure: Structure, text: str) -> tuple[bool, bool, int]:
    """(inside a string or span at the end, complete, where the top-level value ended or -1), read one
    character at a time with no lookahead tricks."""
    brackets = {"json": "{}[]", "python": "()[]{}"}.get(structure.syntax or "", "")
    quotes = {"json": ['"'], "python": ['"""', "'''", '"', "'"]}.get(structure.syntax or "", [])
    spans = dict(structure.spans)
    close: str | None = None
    escapes = False
    depth = 0
    started = structure.syntax is None
    ended = -1
    i = 0
    while i < len(text):
        if close is not None:
            if escapes and text[i] == "\\":
                i += 2
                continue
            if text.startswith(close, i):
                i += len(close)
                close = None
                continue
            i += 1
            continue
        opener = next((t for t in sorted([*spans, *quotes], key=len, reverse=True) if text.startswith(t, i)), None)
        if opener is not None:
            close, escapes = (spans[opener], False) if opener in spans else (opener, True)
            started = True
            i += len(opener)
            continue
        char = text[i]
        if char in brackets[0::2]:
            depth += 1
            started = True
        elif char in brackets[1::2]:
            started = True
            if depth:
                depth -= 1
                if depth == 0 and ended < 0:
                    ended = i + 1
        elif not char.isspace():
            started = True
        i += 1
    in_data = close is not None
    return in_data, not in_data and depth == 0 and started, ended


def tracked(structure: Structure, chunks: list[str]) -> tuple[bool, bool, int]:
    tracker = structure.tracker()
    ended = -1
    seen = 0
    for chunk in chunks:
        if ended < 0:
            consumed = tracker.feed(chunk, stop_at_value_end=True)
            if consumed >= 0:
                ended = seen + consumed
                tracker.feed(chunk[consumed:])
        else:
            tracker.feed(chunk)
        seen += len(chunk)
    return tracker.in_data, tracker.complete(), ended


ALPHABET = {
    "json": '{}[]"\\ ax:,1\n',
    "python": "()[]{}'\"\\ ax=,1\n",
}


def _pieces(draw: Any, text: str) -> list[str]:
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=8))) if len(text) > 1 else []
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@st.composite
def json_case(draw: Any) -> tuple[str, list[str]]:
    text = draw(st.text(alphabet=ALPHABET["json"], max_size=40))
    return text, _pieces(draw, text)


@st.composite
def python_case(draw: Any) -> tuple[str, list[str]]:
    text = draw(st.text(alphabet=ALPHABET["python"], max_size=40))
    return text, _pieces(draw, text)


@st.composite
def span_case(draw: Any) -> tuple[str, list[str]]:
    parts = draw(st.lists(st.sampled_from(["<arg_value>", "</arg_value>", "<arg_", "x", " ", "</tool_call>"]),
                          max_size=12))
    text = "".join(parts)
    return text, _pieces(draw, text)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(json_case())
def test_json_in_any_chunking_matches_the_reference(case: tuple[str, list[str]]) -> None:
    text, chunks = case
    assert tracked(JSON, chunks) == tracked(JSON, [text]) == reference(JSON, text)


def plain(structure: Structure, chunks: list[str], *, general: bool = False) -> tuple[Any, ...]:
    """Everything a tracker fed ``chunks`` (never asked to stop at the value's end) says; ``general``:
    with the JSON token reader turned off (the character-class scan every syntax takes)."""
    tracker = structure.tracker()
    if general:
        tracker._json = False
    for chunk in chunks:
        assert tracker.feed(chunk) == -1
    return tracker.in_data, tracker.complete(), tracker.ended, tracker.balanced


@settings(max_examples=600, deadline=None, derandomize=True)
@given(json_case())
@example(('{"a": "x\\"}', ['{"a": "x\\', '"}']))  # a chunk ends on an escaping backslash
@example(('["\\\\"]', ['["\\', '\\', '"]']))  # an escaped backslash split across chunks
def test_json_token_reader_matches_the_general_scan_and_the_reference(case: tuple[str, list[str]]) -> None:
    """A JSON body without spans is read a token (a bracket, a whole string) per regex step; in any
    chunking it must leave the state the general scan leaves, and the reference's."""
    text, chunks = case
    ours = plain(JSON, chunks)
    assert ours == plain(JSON, chunks, general=True) == plain(JSON, [text], general=True)
    in_data, complete, ended = reference(JSON, text)
    assert ours[:3] == (in_data, complete, ended >= 0)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(python_case())
def test_python_in_any_chunking_matches_the_reference(case: tuple[str, list[str]]) -> None:
    text, chunks = case
    whole = tracked(PYTHON, [text])
    assert tracked(PYTHON, chunks) == whole
    assert whole == reference(PYTHON, text)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(span_case())
def test_spans_in_any_chunking_match_the_reference(case: tuple[str, list[str]]) -> None:
    text, chunks = case
    ours = tracked(GLM, chunks)
    assert ours[:1] == reference(GLM, text)[:1]
    assert ours == tracked(GLM, [text])


@st.composite
def overlapping_case(draw: Any) -> tuple[str, list[str]]:
    """Gemma's span opener holds the JSON quote: a chunk ending inside '<|"|>' must not read its '"'."""
    parts = draw(st.lists(st.sampled_from(['<|"|>', '<|"|', "<|", '"', "|>", "{", "}", ":", "a", " ", "\\"]),
                          max_size=12))
    text = "".join(parts)
    return text, _pieces(draw, text)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(overlapping_case())
def test_a_span_opener_holding_a_quote_in_any_chunking_matches_the_reference(case: tuple[str, list[str]]) -> None:
    """Found by the hostile-input fuzzing (gemma4, '<|tool_call>call:y:<|"|>"' split after '<|"|'): the
    tracker read the forming opener's '"' as a JSON string, so the streamed call was content_parse_failed
    where the one-shot parse said truncated."""
    text, chunks = case
    ours = tracked(GEMMA, chunks)
    assert ours[:1] == reference(GEMMA, text)[:1]  # (complete also needs no opener cut in half at the end)
    assert ours == tracked(GEMMA, [text])


@pytest.mark.parametrize(("structure", "text", "in_data", "complete"), [
    (JSON, '{"a": "x</tool_call>', True, False),
    (JSON, '{"a": "x\\"}', True, False),
    (JSON, '{"a": "x\\\\"}', False, True),
    (JSON, "", False, False),
    (PYTHON, "[f(a='''x", True, False),
    (PYTHON, "[f(a='')]", False, True),
    (GLM, "<arg_key>a</arg_key><arg_value>x </tool_call>", True, False),
    (Structure(None, (("<parameter=", "</parameter>"),)), "<parameter=a>x</parameter>\n<para", False, False),
    (GEMMA, '{a:<|"|>x<tool_call|>', True, False),
    (GEMMA, '{a:<|"|>x, "y}<|"|>}', False, True),
])
def test_known_states(structure: Structure, text: str, in_data: bool, complete: bool) -> None:
    tracker = structure.tracker()
    tracker.feed(text)
    assert (tracker.in_data, tracker.complete()) == (in_data, complete)


def test_a_long_run_of_escapes_is_linear() -> None:
    tracker = JSON.tracker()
    tracker.feed('{"a": "' + '\\"' * 200_000)
    assert tracker.in_data
    tracker.feed('"}')
    assert tracker.complete()
