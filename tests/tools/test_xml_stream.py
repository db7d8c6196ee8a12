"""XMLArgumentStream: Qwen3-Coder-style parameters, per-parameter events, schema typing, truncation."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatparse.errors import InputTypeError
from chatparse.tools import XMLArgumentStream

CALL = """<tool_call>
<function=write_file>
<parameter=path>
src/app.py
</parameter>
<parameter=content>
def f():
    return "</param" + "eter>"  # looks like a closing tag, is not

</parameter>
<parameter=count>
5
</parameter>
<parameter=tags>
["a", "b"]
</parameter>
</function>
</tool_call>"""

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "content": {"type": "string"},
        "count": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "mode": {"type": "string", "enum": ["write", "append"]},
    },
    "required": ["path", "content"],
}

EXPECTED = {
    "path": "src/app.py",
    "content": 'def f():\n    return "</param" + "eter>"  # looks like a closing tag, is not\n',
    "count": 5,
    "tags": ["a", "b"],
}


def run(chunks: list[str], finish_reason: str = "stop", schema: dict[str, Any] | None = SCHEMA):  # type: ignore[no-untyped-def]
    completed: list[tuple[str, Any]] = []
    progress: list[str] = []
    stream = XMLArgumentStream(
        lambda k, v: completed.append((k, v)), lambda k, t: progress.append(t), "content", parameters_schema=schema
    )
    for chunk in chunks:
        stream.feed(chunk)
    return stream, stream.finish(finish_reason), completed, progress


def all_splittings(text: str) -> list[list[str]]:
    fixed = [[text[i : i + n] for i in range(0, len(text), n)] for n in (1, 2, 3, 5, 7, 13, 31)]
    seeded = []
    for seed in range(10):
        rng = random.Random(seed)
        cuts = sorted(rng.sample(range(1, len(text)), 8))
        bounds = [0, *cuts, len(text)]
        seeded.append([text[a:b] for a, b in itertools.pairwise(bounds)])
    return [[text], *fixed, *seeded]


def test_parameters_are_typed_and_streamed() -> None:
    stream, result, completed, progress = run([CALL])
    assert stream.function_name == "write_file"
    assert result.status == "complete"
    assert result.arguments == EXPECTED
    assert completed == list(EXPECTED.items())
    assert "".join(progress) == EXPECTED["content"]


def test_chunking_equivalence() -> None:
    _, whole, whole_completed, whole_progress = run([CALL])
    for chunks in all_splittings(CALL):
        _, result, completed, progress = run(chunks)
        assert result == whole
        assert completed == whole_completed
        assert "".join(progress) == "".join(whole_progress)


def test_every_two_way_split_gives_the_same_result() -> None:
    _, whole, whole_completed, _ = run([CALL])
    for cut in range(1, len(CALL)):
        _, result, completed, progress = run([CALL[:cut], CALL[cut:]])
        assert (result, completed) == (whole, whole_completed), cut
        assert "".join(progress) == EXPECTED["content"]


def test_without_schema_values_are_raw_text() -> None:
    _, result, _, _ = run([CALL], schema=None)
    assert result.arguments["count"] == "5"
    assert result.arguments["tags"] == '["a", "b"]'


def test_truncated_mid_value() -> None:
    cut = CALL.index("return")
    _, result, completed, progress = run([CALL[:cut]], finish_reason="length")
    assert result.status == "truncated"
    assert result.arguments == {"path": "src/app.py"}
    assert result.partial_key == "content"
    # The newline and indentation at the end are held: they are layout if a close follows them.
    assert result.partial_text == "def f():"
    assert "".join(progress) == "def f():"
    assert completed == [("path", "src/app.py")]


def test_invalid_choice_and_unknown_and_missing_are_all_reported() -> None:
    text = "<parameter=mode>\nWrite\n</parameter>\n<parameter=colour>\nred\n</parameter>"
    _, result, completed, _ = run([text])
    assert result.status == "invalid"
    assert completed == []  # a value that failed typing is never announced as completed
    codes = sorted(e.code for e in result.error.errors)  # type: ignore[union-attr]
    assert codes == ["invalid_choice", "missing_argument", "missing_argument", "unknown_argument"]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("stray text", "unexpected_text"),
        ("<parameter=a>1</parameter><parameter=a>2</parameter>", "duplicate_key"),
        ("<bogus>", "unexpected_text"),
        ("<" + "x" * 600, "unexpected_text"),
    ],
)
def test_malformed_calls_are_named(text: str, code: str) -> None:
    _, result, _, _ = run([text], schema=None)
    assert result.status == "invalid"
    assert result.error is not None and result.error.code == code


def test_unclosed_parameter_at_a_normal_end_is_invalid() -> None:
    _, result, _, _ = run(["<parameter=path>\nabc"], schema=None)
    assert result.status == "invalid" and result.error is not None and result.error.code == "incomplete_arguments"


def test_empty_is_named() -> None:
    _, result, _, _ = run([""], schema=None)
    assert result.error is not None and result.error.code == "empty_arguments"


@given(chunks=st.lists(st.text(alphabet=st.sampled_from("<>/=parmetfuncionl\n x"), max_size=10), max_size=10))
def test_feed_never_raises(chunks: list[str]) -> None:
    _, result, _, _ = run(chunks, schema=None)
    assert result.status in {"complete", "invalid"}


@given(value=st.text(alphabet=st.sampled_from("ab\n</parmet>"), max_size=30), data=st.data())
def test_any_value_round_trips_through_any_chunks(value: str, data: Any) -> None:
    if "</parameter>" in value:
        return
    text = f"<parameter=content>\n{value}\n</parameter>"
    cuts = sorted(data.draw(st.sets(st.integers(1, len(text) - 1), max_size=6)))
    bounds = [0, *cuts, len(text)]
    _, result, _, progress = run([text[a:b] for a, b in itertools.pairwise(bounds)], schema=None)
    assert result.arguments == {"content": value}
    assert "".join(progress) == value


# --- found by the hostile-input fuzzing (issue 13) ---------------------------------------------


def test_a_schema_the_xml_stream_cannot_type_with_is_named_in_the_result() -> None:
    """A ToolDefinitionError from typing a value used to end the stream as internal_error."""
    stream = XMLArgumentStream(parameters_schema={"type": "object", "properties": {"a": {"type": 5}}})
    stream.feed("<function=f>\n<parameter=a>\n1\n</parameter>\n</function>")
    result = stream.finish()
    assert result.status == "invalid" and result.error is not None
    assert (result.error.code, result.error.path) == ("invalid_schema", "$.a")


@pytest.mark.parametrize("schema", [[{"type": "object"}], "object", 5])
def test_a_parameters_schema_that_is_not_an_object_is_refused_at_construction(schema: Any) -> None:
    with pytest.raises(InputTypeError):
        XMLArgumentStream(parameters_schema=schema)


def test_required_of_the_wrong_shape_names_no_argument() -> None:
    stream = XMLArgumentStream(parameters_schema={"type": "object", "properties": {"a": {}}, "required": 5})
    stream.feed("<function=f>\n<parameter=a>\n1\n</parameter>\n</function>")
    assert stream.finish().ok


@pytest.mark.parametrize("size", [1, 2, 3, 5, 1000])
def test_a_value_ends_where_the_next_parameter_opens(size: int) -> None:
    """As vLLM's Qwen3-Coder parser and the engine's xml-params read it; the stream used to keep the next
    tag as value text, so its early arguments disagreed with the final message."""
    text = "<function=f>\n<parameter=a>\nx\n<parameter=b>\ny\n</parameter>\n<parameter=c>\n<parameter=d\n</parameter>"
    stream = XMLArgumentStream()
    for i in range(0, len(text), size):
        stream.feed(text[i : i + size])
    result = stream.finish()
    assert result.ok and result.arguments == {"a": "x", "b": "y", "c": "<parameter=d"}  # no '>': not a tag


@given(parts=st.lists(st.sampled_from(["<parameter=", "a", "b", ">", "\n", "</parameter>", "<", "x y", "<parameter=a>",
                                       "</param", "<parameter=b>\n", "```"]), max_size=14),
       cut=st.integers(0, 10**6))
def test_next_parameter_tags_are_found_in_any_two_way_split(parts: list[str], cut: int) -> None:
    """Found by the hostile-input fuzzing: a tag forming after an earlier '<parameter=' that could still
    become a tag (keys may hold '<') was released as value text when split, found whole in one feed."""
    text = "<function=f>\n<parameter=k>\n" + "".join(parts)
    at = cut % (len(text) + 1)
    split_run = run([text[:at], text[at:]], schema=None)[1]
    whole = run([text], schema=None)[1]
    assert (split_run.status, split_run.arguments, split_run.error and split_run.error.code) == (
        whole.status, whole.arguments, whole.error and whole.error.code)


def test_a_value_cut_by_the_next_tag_loses_the_newline_before_it() -> None:
    """As the engine's xml-params reads an unclosed value: 'README.md\\n\\n' before the next tag is
    'README.md' (the stream used to keep one newline: an OpenAI stream mismatch, qwen3_coder)."""
    text = "<function=f>\n<parameter=path>\nREADME.md\n\n<parameter=content>\n# App\n</parameter>\n</function>"
    for size in (1, 3, len(text)):
        stream = XMLArgumentStream()
        for i in range(0, len(text), size):
            stream.feed(text[i : i + size])
        assert stream.finish().arguments == {"path": "README.md", "content": "# App"}


def test_parameters_after_the_function_close_are_unexpected() -> None:
    """They belong to no call (vLLM drops them; the engine reads the close into the value before): the
    stream stops there instead of announcing the value before '</function>' as complete."""
    stream = XMLArgumentStream()
    stream.feed("<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n<parameter=b>\n2\n</parameter>\n")
    result = stream.finish()
    assert (result.status, result.error and result.error.code) == ("invalid", "unexpected_text")
    stream = XMLArgumentStream()
    stream.feed("<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>")
    assert stream.finish().ok


@pytest.mark.parametrize("between", ["<parameter=con\ntent>", "</tool_call>"])
def test_only_the_engines_layout_continues_after_a_parameter(between: str) -> None:
    """Where the engine's xml-params reads a tag into the value before (a name with a newline, call tags
    between parameters), the stream stops instead of announcing that value as complete (an OpenAI
    stream mismatch, minicpmv, found by the hostile-input fuzzing)."""
    completed: list[str] = []
    stream = XMLArgumentStream(lambda key, value: completed.append(key))
    stream.feed(f"<function=f>\n<parameter=a>\n1\n</parameter>\n{between}\n<parameter=b>\n2\n</parameter>\n")
    result = stream.finish()
    assert (result.status, result.error and result.error.code) == ("invalid", "unexpected_text")
    assert "b" not in completed


@pytest.mark.parametrize("between", ["<function=g>", "<tool_call>"])
def test_a_call_tag_after_a_close_is_data_of_the_value_as_in_the_engine(between: str) -> None:
    """A '</parameter>' that the call's structure does not go on after (a call tag follows it) is data of
    the value, and so is the parameter tag after it (a value that quotes a close quotes the format): the
    stream reads the value the engine's xml-params reads, and announces nothing else."""
    from chatparse.content.xml_params import parse_xml_params

    body = f"\n<parameter=a>\n1\n</parameter>\n{between}\n<parameter=b>\n2\n</parameter>\n"
    completed: list[tuple[str, object]] = []
    stream = XMLArgumentStream(lambda key, value: completed.append((key, value)))
    for piece in (body[i : i + 3] for i in range(0, len(body), 3)):
        stream.feed(piece)
    result = stream.finish()
    engine = parse_xml_params(body, {"param_open": "<parameter=(?P<key>[^>\\n]+)>", "value_close": "</parameter>",
                                     "strip_newlines": True, "trailer": "</function>"})
    assert result.status == "complete"
    assert dict(completed) == result.arguments == engine == {"a": f"1\n</parameter>\n{between}\n<parameter=b>\n2"}
