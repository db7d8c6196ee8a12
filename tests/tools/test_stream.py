"""ArgumentStream: chunking equivalence, per-key events, escapes across chunks, truncation, never raising."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatparse.tools import ArgumentStream, ArgumentStreamResult

CORPUS = [
    '{"path": "src/app.py", "content": "print(\\"hi\\")\\n", "mode": "write"}',
    '{"content": "caf\\u00e9 \\ud83d\\ude00 \\\\ \\/ \\b\\f\\n\\r\\t \\"q\\"", "n": -12.5e-3}',
    '{"content": "raw é 😀 and 中文", "tags": ["a", "b"], "ok": true, "none": null, "off": false}',
    '  {\n  "a" : 0 ,\n  "b" : [ ] , "c" : { } , "d" : [ 1 , [ 2 , { "e" : "f" } ] ] }  \n',
    '{"content": ""}',
    "{}",
    '{"n": 12345678901234567890, "f": 1E+2, "z": -0, "content": "x"}',
    '{"nested": {"content": "not the streamed key"}, "content": "the streamed one"}',
    '{"content": "a\\u0000b\\u001fc"}',
    '{"content": "line1\nline2\ttab"}',  # raw control characters are kept (json.loads strict=False)
]


def run(chunks: list[str], finish_reason: str = "stop", stream_key: str | None = "content"):  # type: ignore[no-untyped-def]
    completed: list[tuple[str, Any]] = []
    progress: list[str] = []
    stream = ArgumentStream(
        on_key_completed=lambda k, v: completed.append((k, v)),
        on_string_progress=lambda k, t: progress.append(t),
        stream_key=stream_key,
    )
    for chunk in chunks:
        stream.feed(chunk)
    return stream.finish(finish_reason), completed, progress


def split_every(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def random_splits(text: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(0, 12)))) if len(text) > 1 else []
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def splittings(text: str) -> list[list[str]]:
    fixed = [split_every(text, size) for size in (1, 2, 3, 5, 7, 13, 31)]
    return [[text], *fixed, *(random_splits(text, seed) for seed in range(10))]


def check_against_json(result: ArgumentStreamResult, completed: list[tuple[str, Any]], progress: list[str], text: str) -> None:
    expected = json.loads(text, strict=False)
    assert result.status == "complete", result.error
    assert result.arguments == expected
    assert completed == list(expected.items())  # each top-level key once, in order, with its final value
    assert result.completed_keys == tuple(expected)
    if isinstance(expected.get("content"), str):
        assert "".join(progress) == expected["content"]
    assert all(progress), "no empty progress pieces"


@pytest.mark.parametrize("text", CORPUS)
def test_chunking_equivalence(text: str) -> None:
    whole, whole_completed, whole_progress = run([text])
    check_against_json(whole, whole_completed, whole_progress, text)
    for chunks in splittings(text):
        result, completed, progress = run(chunks)
        assert result == whole
        assert completed == whole_completed
        assert "".join(progress) == "".join(whole_progress)


@pytest.mark.parametrize("text", CORPUS)
def test_every_two_way_split_gives_the_same_result(text: str) -> None:
    whole, whole_completed, whole_progress = run([text])
    for cut in range(1, len(text)):
        result, completed, progress = run([text[:cut], text[cut:]])
        assert (result, completed) == (whole, whole_completed), cut
        assert "".join(progress) == "".join(whole_progress)


def test_surrogate_pair_split_at_every_position() -> None:
    text = '{"content": "a\\ud83d\\ude00b"}'
    for cut in range(1, len(text)):
        result, _, progress = run([text[:cut], text[cut:]])
        assert result.arguments == {"content": "a\U0001f600b"}
        assert "".join(progress) == "a\U0001f600b"
        assert all("\ud83d" not in piece for piece in progress)  # a half pair is never emitted


def test_progress_arrives_before_the_call_ends() -> None:
    progress: list[str] = []
    stream = ArgumentStream(on_string_progress=lambda k, t: progress.append(t), stream_key="content")
    stream.feed('{"path": "a.txt", "content": "first ')
    assert progress == ["first "]
    stream.feed('part\\nsecond')
    assert progress == ["first ", "part\nsecond"]
    stream.feed('"}')
    assert stream.finish().arguments["content"] == "first part\nsecond"


def test_key_completes_when_its_separator_arrives() -> None:
    completed: list[tuple[str, Any]] = []
    stream = ArgumentStream(on_key_completed=lambda k, v: completed.append((k, v)))
    stream.feed('{"n": 12')
    assert completed == []  # 12 may still become 123
    stream.feed("3")
    assert completed == []
    stream.feed(', "flag": tr')
    assert completed == [("n", 123)]
    stream.feed('ue, "s": "x"')
    assert completed == [("n", 123), ("flag", True)]
    stream.feed("}")
    assert completed == [("n", 123), ("flag", True), ("s", "x")]
    assert stream.completed_keys == ("n", "flag", "s")


def test_stream_key_only_at_top_level_and_only_for_strings() -> None:
    _, _, progress = run(['{"nested": {"content": "no"}, "content": 5}'])
    assert progress == []


def test_finish_length_is_truncated_with_what_arrived() -> None:
    text = '{"path": "notes.md", "content": "# Title\\nSome te'
    result, completed, progress = run(split_every(text, 4), finish_reason="length")
    assert result.status == "truncated"
    assert result.arguments == {"path": "notes.md"}  # only keys whose values closed
    assert result.completed_keys == ("path",)
    assert result.partial_key == "content"
    assert result.partial_text == "# Title\nSome te"
    assert "".join(progress) == "# Title\nSome te"
    assert result.received_chars == len(text)
    assert result.error is not None and result.error.code == "truncated_arguments"
    assert result.error.key == "content"
    assert completed == [("path", "notes.md")]


def test_finish_length_even_after_a_closed_object_is_truncated() -> None:
    result, _, _ = run(['{"a": 1}'], finish_reason="length")
    assert result.status == "truncated"
    assert result.arguments == {"a": 1}


def test_a_closed_string_at_the_cut_counts_as_completed() -> None:
    result, completed, _ = run(['{"a": "x"'], finish_reason="length")
    assert result.completed_keys == ("a",) and completed == [("a", "x")]
    result, completed, _ = run(['{"a": 12'], finish_reason="length")
    assert result.completed_keys == () and result.partial_key == "a" and completed == []
    result, completed, _ = run(['{"a": tr'], finish_reason="length")
    assert completed == []  # a literal like `tr` is never completed


@pytest.mark.parametrize("reason", ["stop", "tool_calls", None, "end_turn"])
def test_unfinished_object_at_a_normal_end_is_invalid(reason: str | None) -> None:
    result, _, _ = run(['{"a": 1, "b": "x'], finish_reason=reason)  # type: ignore[arg-type]
    assert result.status == "invalid"
    assert result.error is not None and result.error.code == "incomplete_arguments"
    assert result.partial_key == "b"


@pytest.mark.parametrize("reason", ["length", "max_tokens", "content_filter"])
def test_cut_reasons(reason: str) -> None:
    assert run(['{"a": 1, "b'], finish_reason=reason)[0].status == "truncated"


def test_unknown_finish_reason_is_named() -> None:
    result, _, _ = run(['{"a": 1}'], finish_reason="banana")
    assert result.status == "invalid"
    assert result.error is not None and result.error.code == "unknown_finish_reason"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "empty_arguments"),
        ("   \n", "empty_arguments"),
        ("[1, 2]", "not_an_object"),
        ('"text"', "not_an_object"),
        ('{"a": 1} {"b": 2}', "trailing_text"),
        ('{"a": 1, "a": 2}', "duplicate_key"),
        ('{"a": {"b": 1, "b": 2}}', "duplicate_key"),
        ('{"a": "\\x41"}', "invalid_escape"),
        ('{"a": "\\u12G4"}', "invalid_escape"),
        ('{"a": "\\udc00"}', "invalid_unicode"),
        ('{"a": "\\ud83dx"}', "invalid_unicode"),
        ('{"a": "\\ud83d\\n"}', "invalid_unicode"),
        ('{"a": "\\ud83d\\u0041"}', "invalid_unicode"),
        ('{"a": "\\ud83d"}', "invalid_unicode"),
        ('{"a": 01}', "invalid_number"),
        ('{"a": 1.}', "invalid_number"),
        ('{"a": -}', "invalid_number"),
        ('{"a": 1e400}', "invalid_number"),
        ('{"a": 1-2}', "invalid_number"),
        ('{"a": True}', "unexpected_character"),
        ('{"a": nul}', "unexpected_character"),
        ("{'a': 1}", "unexpected_character"),
        ('{"a" 1}', "unexpected_character"),
        ('{"a": 1,}', "unexpected_character"),
        ('{"a": [1,]}', "unexpected_character"),
        ('{"a": [1 2]}', "unexpected_character"),
        ('{"a": 1]', "unexpected_character"),
        ('{"a": ' + "[" * 70 + "]" * 70 + "}", "too_deep"),
    ],
)
def test_invalid_input_is_named(text: str, code: str) -> None:
    for chunks in ([text], split_every(text, 1)):
        result, _, _ = run(chunks)
        assert result.status == "invalid"
        assert result.error is not None and result.error.code == code, result.error


def test_error_offset_points_at_the_problem() -> None:
    result, _, _ = run(['{"a": 1,', ' "b": x}'])
    assert result.error is not None
    assert result.error.offset == len('{"a": 1, "b": ')
    assert result.arguments == {"a": 1}


def test_callback_exception_is_captured_not_raised() -> None:
    calls: list[str] = []

    def failing_write(key: str, text: str) -> None:
        calls.append(text)
        raise OSError("disk full")

    stream = ArgumentStream(on_string_progress=failing_write, stream_key="content")
    stream.feed('{"content": "abc')
    stream.feed('def"}')
    result = stream.finish()
    assert calls == ["abc"]  # not called again after it failed
    assert result.status == "invalid"
    assert result.error is not None and result.error.code == "callback_failed"
    assert result.error.key == "content"
    assert isinstance(result.error.__cause__, OSError)
    assert result.arguments == {"content": "abcdef"}  # what was parsed is still reported


def test_key_callback_exception_is_captured() -> None:
    def boom(key: str, value: Any) -> None:
        raise RuntimeError(key)

    stream = ArgumentStream(on_key_completed=boom)
    stream.feed('{"a": 1, "b": 2}')
    result = stream.finish()
    assert result.status == "invalid" and result.error is not None and result.error.code == "callback_failed"


def test_finish_is_idempotent_and_later_feeds_are_ignored() -> None:
    stream = ArgumentStream()
    stream.feed('{"a": 1}')
    first = stream.finish()
    stream.feed("garbage")
    assert stream.finish("length") is first
    assert first.received_chars == 8


def test_non_text_chunks_do_not_raise() -> None:
    stream = ArgumentStream()
    stream.feed(None)  # type: ignore[arg-type]
    stream.feed(b"{}")  # type: ignore[arg-type]
    result = stream.finish()
    assert result.status == "invalid" and result.error is not None and result.error.code == "not_text"


json_objects = st.dictionaries(
    st.text(max_size=6),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
        max_leaves=10,
    ),
    max_size=5,
)


@given(value=json_objects, ensure_ascii=st.booleans(), indent=st.sampled_from([None, 0, 2]), data=st.data())
def test_any_json_object_in_any_chunks_equals_json_loads(
    value: dict[str, Any], ensure_ascii: bool, indent: int | None, data: Any
) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=10)))
    bounds = [0, *cuts, len(text)]
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    key = next(iter(value), None)
    result, completed, progress = run(chunks, stream_key=key)
    assert result.status == "complete"
    assert result.arguments == json.loads(text)
    assert completed == list(json.loads(text).items())
    if isinstance(value.get(key), str):  # type: ignore[arg-type]
        assert "".join(progress) == value[key]  # type: ignore[index]


@given(chunks=st.lists(st.text(alphabet=st.sampled_from('{}[]",:\\u0123456789abcdefntrl -.eE\n '), max_size=8), max_size=12))
def test_feed_never_raises_on_json_like_noise(chunks: list[str]) -> None:
    result, _, _ = run(chunks, finish_reason="stop")
    assert result.status in {"complete", "invalid"}


@given(chunks=st.lists(st.text(max_size=20), max_size=8), reason=st.sampled_from(["stop", "length", "weird", None]))
def test_feed_never_raises_on_arbitrary_text(chunks: list[str], reason: str | None) -> None:
    result, _, _ = run(chunks, finish_reason=reason)  # type: ignore[arg-type]
    assert result.status in {"complete", "truncated", "invalid"}
    assert result.received_chars == sum(map(len, chunks))


# --- nested_key: the keys of one top-level key's object value ------------------------------------

NESTED_CORPUS = [
    '{"name": "f", "arguments": {"a": 1, "b": "x\\"y", "c": [1, {"d": null}], "e": {"f": true}}}',
    '{"arguments": {"z": -0.5e3, "s": "\\ud83d\\ude00 caf\\u00e9"}, "name": "f"}',
    '{"name": "f", "arguments": {}}',
    '{"name": "f", "other": {"arguments": {"no": 1}}, "arguments": {"yes": [{"arguments": 2}]}}',
    '{"name": "f", "arguments": "a string, not an object"}',
    '{"name": "f", "arguments": [{"a": 1}]}',
    ' {\n "name" : "f" ,\n "arguments" : { "k" : 1 , "l" : "raw é 中文" } \n} ',
]


def run_nested(chunks: list[str], finish_reason: str = "stop", nested_key: str = "arguments"):  # type: ignore[no-untyped-def]
    events: list[tuple[str, str, Any]] = []
    stream = ArgumentStream(
        on_key_completed=lambda k, v: events.append(("top", k, v)),
        nested_key=nested_key,
        on_nested_key_completed=lambda k, v: events.append(("nested", k, v)),
    )
    for chunk in chunks:
        stream.feed(chunk)
    return stream.finish(finish_reason), events


@pytest.mark.parametrize("text", NESTED_CORPUS)
def test_nested_keys_in_any_chunks(text: str) -> None:
    expected = json.loads(text)
    nested = expected["arguments"]
    want_nested = [("nested", k, v) for k, v in nested.items()] if isinstance(nested, dict) else []
    for chunks in splittings(text):
        result, events = run_nested(chunks)
        assert result.status == "complete" and result.arguments == expected
        assert [e for e in events if e[0] == "nested"] == want_nested
        assert [e for e in events if e[0] == "top"] == [("top", k, v) for k, v in expected.items()]
        # every nested key is reported before the top-level key that holds the object
        if want_nested:
            assert events.index(want_nested[-1]) < events.index(("top", "arguments", nested))


def test_nested_key_completes_when_its_separator_arrives() -> None:
    events: list[tuple[str, Any]] = []
    stream = ArgumentStream(nested_key="arguments", on_nested_key_completed=lambda k, v: events.append((k, v)))
    stream.feed('{"name": "f", "arguments": {"a": "x"')
    assert events == []
    stream.feed(', "n": 12')
    assert events == [("a", "x")]
    stream.feed("3")
    assert events == [("a", "x")]  # 123 may still grow
    stream.feed("}")
    assert events == [("a", "x"), ("n", 123)]
    stream.feed("}")
    assert stream.finish().status == "complete"


def test_nested_key_other_key_and_parameters() -> None:
    text = '{"name": "f", "parameters": {"p": 1}, "arguments": {"a": 2}}'
    _, events = run_nested([text], nested_key="parameters")
    assert [e for e in events if e[0] == "nested"] == [("nested", "p", 1)]


def test_nested_key_closed_value_at_the_cut_counts() -> None:
    result, events = run_nested(['{"name": "f", "arguments": {"a": "x"'], finish_reason="length")
    assert result.status == "truncated"
    assert ("nested", "a", "x") in events
    result, events = run_nested(['{"name": "f", "arguments": {"a": 12'], finish_reason="length")
    assert [e for e in events if e[0] == "nested"] == []


def test_nested_duplicate_key_stops_reporting() -> None:
    result, events = run_nested(['{"name": "f", "arguments": {"a": 1, "a": 2, "b": 3}}'])
    assert result.status == "invalid" and result.error is not None and result.error.code == "duplicate_key"
    assert [e for e in events if e[0] == "nested"] == [("nested", "a", 1)]


def test_nested_callback_exception_is_captured() -> None:
    seen: list[str] = []

    def boom(key: str, value: Any) -> None:
        seen.append(key)
        raise RuntimeError(key)

    stream = ArgumentStream(nested_key="arguments", on_nested_key_completed=boom)
    stream.feed('{"name": "f", "arguments": {"a": 1, "b": 2}}')
    result = stream.finish()
    assert seen == ["a"]
    assert result.status == "invalid" and result.error is not None and result.error.code == "callback_failed"
    assert result.arguments == {"name": "f", "arguments": {"a": 1, "b": 2}}


def test_without_nested_key_nothing_nested_is_reported() -> None:
    seen: list[str] = []
    stream = ArgumentStream(on_nested_key_completed=lambda k, v: seen.append(k))
    stream.feed('{"arguments": {"a": 1}}')
    assert stream.finish().ok and seen == []


@given(value=json_objects, ensure_ascii=st.booleans(), indent=st.sampled_from([None, 0, 2]), data=st.data())
def test_any_nested_object_in_any_chunks(value: dict[str, Any], ensure_ascii: bool, indent: int | None,
                                         data: Any) -> None:
    text = json.dumps({"name": "f", "arguments": value}, ensure_ascii=ensure_ascii, indent=indent)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=10)))
    chunks = [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])]
    result, events = run_nested(chunks)
    assert result.ok
    assert [(k, v) for kind, k, v in events if kind == "nested"] == list(json.loads(text)["arguments"].items())


# --- container values read whole (a token per regex step, then the C decoder) ------------------------


class _CharWise(ArgumentStream):
    """Never reads a value whole: the character-wise scanner the whole-value path must equal."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._replaying = True


def _observe(cls: type[ArgumentStream], chunks: list[str], reason: str | None, progress: bool = True,
             **options: Any) -> Any:
    """The callbacks, in which feed each fired, and the result. ``progress``: string progress watched too
    (without it, whole members are read in one step and may be held until they complete)."""
    events: list[Any] = []
    stream = cls(on_key_completed=lambda k, v: events.append(("key", k, v)),
                 on_string_progress=(lambda k, t: events.append(("text", k, t))) if progress else None,
                 stream_key="content",
                 on_nested_key_completed=lambda k, v: events.append(("nested", k, v)), **options)
    for chunk in chunks:
        stream.feed(chunk)
        events.append("|")  # callbacks must fire in the same feed, not just in the same order
    result = stream.finish(reason)
    error = result.error
    verdict = (result.status, result.arguments, result.completed_keys, result.partial_key, result.partial_text,
               None if error is None else (error.code, getattr(error, "offset", None), str(error)))
    return json.dumps([events, verdict], default=repr)


WHOLE_CASES = [
    '{"a": [1, {"b": [true, null, "x\\"]y"]}], "content": "t", "c": {"d": {}}}',
    '{"a": {"k": 1, "k": 2}}',  # a repeated key inside a value read whole
    '{"a": [1, 2,]}', '{"a": [NaN]}', '{"a": [01]}', '{"a": [1e999]}', '{"a": {"b" 1}}', '{"a": [1] ]}',
    '{"a": ["\\ud83d\\ude00", "\\u00e9"]}', '{"a": ["\\ud83d x"]}', '{"a": ["\\udc00"]}', '{"a": ["\\q"]}',
    '{"a": ["raw\tcontrol\nchars", "\\\\", "\\\\u"]}', '{"a": [[[[[[1]]]]]]}', '{"a": [{"}": "]"}, "{["]}',
    '{"arguments": {"k0": ["v", 0, {"x": null}], "k1": [1, {"y": [2]}]}, "name": "f"}',
    '{"name": "f", "arguments": {"k": {"k": 1, "k": 2}}}', '{"a": [1, 2', '{"a": {"b": "unterminated',
    '{"a": [-0, -0.0, 1.5e3, 1E+2, 0.1e-2, -12345678901234567890123, 2e308, -1e-400]}',
    # members read whole in one step: plain and escaped keys and strings, numbers, literals, repeats
    '{"p": "a\\nb\\"c", "q": -0.5e+2, "r": true, "s": null, "t": false, "u": 0}',
    '{"k\\"ey": 1, "\\u006b": 2, "v": "\\u00e9", "w": "\\ud83d\\ude00"}',
    '{"a": 1, "a": 2}', '{"name": "f", "arguments": {"x": 1, "x": [2]}}', '{"a": 01}', '{"a": 1e999}',
    '{"a": -}', '{"a": tru}', '{"a": truex}', '{"a": 1.}', '{"a":1,"b":[2],"c":{"d":3}}',
    '{ "a" :\t[ 1 ] ,\n "b" : "x" }', '{"a": "raw\tcontrol\nchars"}', '{"a": [[[[[1]]]]], "b": [[[[1]]]]}',
    '{"a": "' + "long " * 70 + '", "b": 1}', '{"arguments": {"a": [1, {"b": 2}], "c": "d"}, "name": "f"}',
]


@pytest.mark.parametrize("text", WHOLE_CASES)
@pytest.mark.parametrize("reason", ["stop", "length"])
def test_values_read_whole_equal_the_character_wise_scanner(text: str, reason: str) -> None:
    """Every split in two and three pieces, every cut (finish at any length), a nested key watched or not,
    a depth limit the value reaches: the same callbacks in the same feeds and the same result."""
    for options in ({}, {"nested_key": "arguments"}, {"max_depth": 4}, {"progress": False},
                    {"progress": False, "nested_key": "arguments"}, {"progress": False, "max_depth": 5}):
        for cut in range(len(text) + 1):
            head = text[:cut]
            for chunks in ([head], [head[:cut // 2], head[cut // 2 :]], [text[:cut], text[cut:]],
                           [head[i : i + 3] for i in range(0, len(head), 3)]):
                assert _observe(ArgumentStream, chunks, reason, **options) == \
                    _observe(_CharWise, chunks, reason, **options), (chunks, options)


@given(value=json_objects, ensure_ascii=st.booleans(), data=st.data())
def test_values_read_whole_equal_the_character_wise_scanner_on_any_json(value: dict[str, Any], ensure_ascii: bool,
                                                                          data: Any) -> None:
    text = json.dumps({"name": "f", "arguments": value, "extra": value}, ensure_ascii=ensure_ascii)
    cut = data.draw(st.integers(0, len(text)))
    size = data.draw(st.integers(1, 9))
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    for pieces, reason in ((chunks, "stop"), ([text[:cut]], "length")):
        for options in ({}, {"nested_key": "arguments"}, {"progress": False},
                        {"progress": False, "nested_key": "arguments"}):
            assert _observe(ArgumentStream, pieces, reason, **options) == _observe(_CharWise, pieces, reason, **options)


def _observe_gated(chunks: list[str], reason: str | None, **options: Any) -> Any:
    """``_observe`` with the OpenAI layer's gate: a chunk ``can_fire`` refuses waits and goes in joined to
    the next one it accepts (what waits at the end goes in before ``finish``)."""
    waiting: list[str] = []
    gated: list[str] = []
    original = ArgumentStream.feed

    class Gated(ArgumentStream):
        def feed(self, chunk: str) -> None:
            if not self.can_fire(chunk):
                waiting.append(chunk)
                gated.append(chunk)
                return
            original(self, "".join([*waiting, chunk]))
            waiting.clear()

        def finish(self, finish_reason: str | None = "stop") -> Any:
            if waiting:
                original(self, "".join(waiting))
                waiting.clear()
            return super().finish(finish_reason)

    return _observe(Gated, chunks, reason, progress=False, **options), gated


@pytest.mark.parametrize("text", WHOLE_CASES)
def test_text_that_cannot_fire_may_wait(text: str) -> None:
    """``can_fire``: text it says cannot fire a callback, held back and fed with the next text, changes
    neither the callbacks (nor the feed each fires in) nor the result."""
    waited = 0
    for options in ({}, {"nested_key": "arguments"}):
        for size in (1, 2, 3, 5):
            chunks = [text[i : i + size] for i in range(0, len(text), size)]
            for reason in ("stop", "length"):
                found, gated = _observe_gated(chunks, reason, **options)
                assert found == _observe(_CharWise, chunks, reason, progress=False, **options), (chunks, options)
                waited += len(gated)
    assert waited  # the gate did hold text back


@given(value=json_objects, data=st.data())
def test_text_that_cannot_fire_may_wait_on_any_json(value: dict[str, Any], data: Any) -> None:
    text = json.dumps({"name": "f", "arguments": value, "extra": [value]})
    size = data.draw(st.integers(1, 9))
    chunks = [text[i : i + size] for i in range(0, len(text), size)]
    for options in ({}, {"nested_key": "arguments"}):
        found, _ = _observe_gated(chunks, "stop", **options)
        assert found == _observe(_CharWise, chunks, "stop", progress=False, **options)


@pytest.mark.parametrize("digits", [4300, 4301, 9000])
def test_a_long_integer_read_whole_equals_the_character_wise_scanner(digits: int) -> None:
    """Past Python's digit limit the C reader raises and the value is re-read: the same verdict."""
    text = '{"a": [1, ' + "9" * digits + "]}"
    for chunks in ([text], [text[i : i + 64] for i in range(0, len(text), 64)]):
        assert _observe(ArgumentStream, chunks, "stop") == _observe(_CharWise, chunks, "stop")


@pytest.mark.parametrize(("text", "offset"), [
    ('{"a": 01}', 6), ('{"a": -}', 6), ('{"a": trux}', 6), ('{"a": "\\udc00"}', 8), ('{"a": "\\u12G4"}', 8),
    ('{"a": "\\ud83dx"}', 13),
])
def test_an_error_offset_does_not_depend_on_the_chunking(text: str, offset: int) -> None:
    """A number, literal or ``\\u`` escape split across chunks is reported where it starts (the 'u' of an
    escape), not where its last piece starts."""
    for cut in range(len(text) + 1):
        result, _, _ = run([text[:cut], text[cut:]])
        assert result.error is not None
        assert getattr(result.error, "offset", None) == offset, cut
