"""check_answer: the seed's three outputs, every stage's codes, stage order and safe messages."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatparse.answers.check import ERROR_CODES, STAGES, check_answer
from chatparse.answers.model import GroundedAnswer
from chatparse.errors import InputTypeError

from .conftest import EDU_LIMIT_BLOCK, dump

# The seed's three hand-made outputs ---------------------------------------------------------------


def test_seed_normal_answer_passes(evidence: dict[str, str]) -> None:
    result = check_answer(dump(), evidence)
    assert result.ok
    assert result.errors == ()
    assert isinstance(result.answer, GroundedAnswer)
    assert result.answer.status == "answered"
    assert result.answer.citations[0].source_id == "edu#2"


def test_seed_invented_source_fails_unknown_source(evidence: dict[str, str]) -> None:
    raw = dump(citations=[{"source_id": "교육비 안내", "quote": "교육비 한도는 분기당 30만 원이다"}])
    result = check_answer(raw, evidence)
    assert not result.ok
    assert result.answer is None
    assert result.codes == ("unknown_source",)
    assert result.errors[0].path == "$.citations[0].source_id"


def test_seed_verbatim_quote_with_wrong_answer_passes_the_validators_limit(evidence: dict[str, str]) -> None:
    # Not a bug: the checker sees status, fields and quotes, not whether the answer follows from them.
    raw = dump(answer="매월 50만 원이다.")
    result = check_answer(raw, evidence)
    assert result.ok
    assert result.answer is not None and result.answer.answer == "매월 50만 원이다."


# Stage by stage ------------------------------------------------------------------------------------


def test_too_large_is_measured_on_utf8_bytes(evidence: dict[str, str]) -> None:
    base = dump(answer="")
    filler = 65_536 - len(base.encode())  # fits exactly with ASCII padding
    exact = dump(answer="a" * filler)
    assert len(exact.encode()) == 65_536
    assert check_answer(exact, evidence).stage != "size"
    over_by_bytes = dump(answer="가" * (filler // 3 + 1))  # fewer chars than 65,536 but more bytes
    assert len(over_by_bytes) < 65_536
    result = check_answer(over_by_bytes, evidence)
    assert result.codes == ("too_large",)
    assert check_answer(over_by_bytes.encode(), evidence).codes == ("too_large",)


@pytest.mark.parametrize(
    "raw",
    [
        "```json\n" + dump() + "\n```",
        "```\n" + dump() + "\n```",
        "Here is the answer:\n" + dump(),
        dump() + "\nHope this helps!",
        dump() + " " + dump(),
        "[" + dump() + "]",
        '"' + "answered" + '"',
        "answered",
        dump() + "\n```",
    ],
    ids=[
        "fence-json",
        "fence",
        "prose-before",
        "prose-after",
        "two-objects",
        "array",
        "string",
        "word",
        "fence-after",
    ],
)
def test_not_bare_json_is_rejected_not_salvaged(raw: str, evidence: dict[str, str]) -> None:
    result = check_answer(raw, evidence)
    assert result.codes == ("not_bare_json",)
    assert result.stage == "bare_json"
    assert result.answer is None


@pytest.mark.parametrize(
    ("raw", "found"),
    [
        ("Here is the answer:\n" + dump(), "text before the object"),
        ('{"status": "}"} ok', "text after the object at offset 15"),
        ('{"a": {"b": [1]}}\n```', "text after the object at offset 17"),
    ],
)
def test_not_bare_json_says_which_side_and_where(raw: str, found: str, evidence: dict[str, str]) -> None:
    assert check_answer(raw, evidence).errors[0].message == (
        f"expected one bare JSON object and nothing else, found {found}. Code fences and prose are rejected, "
        "never trimmed."
    )


@pytest.mark.parametrize(
    "raw",
    [
        '{"status": "answered", "answer": "분기당',
        '{"status": "answered", "answer": "x", "citations": [{"source_id": "edu#2", "quote": "교',
        '{"status": "answered", "answer": {"nested": [1]}, "citations": [',
        '{"status": "answered", "answer": 1.',
        "{",
    ],
    ids=["in-a-string", "in-a-citation", "after-a-closed-brace", "in-a-number", "just-the-brace"],
)
def test_an_object_cut_off_is_invalid_json_not_text_around_it(raw: str, evidence: dict[str, str]) -> None:
    result = check_answer(raw, evidence)
    assert (result.stage, result.codes) == ("json", ("invalid_json",))
    assert result.errors[0].message.startswith(
        f"expected a complete JSON object, found the object ending early at offset {len(raw)}: the output "
        "stops inside it (often the output token limit)."
    )


def test_bytes_cut_inside_a_character_are_a_cut_object(evidence: dict[str, str]) -> None:
    raw = '{"status": "answered", "answer": "분기'.encode()[:-1]
    result = check_answer(raw, evidence)
    assert result.codes == ("invalid_json",)
    assert "ending early at offset 35" in result.errors[0].message


@pytest.mark.parametrize("raw", ["", "   \n"], ids=["empty", "blank"])
def test_an_empty_output_is_invalid_json(raw: str, evidence: dict[str, str]) -> None:
    result = check_answer(raw, evidence)
    assert (result.stage, result.codes) == ("json", ("invalid_json",))
    assert result.errors[0].message == "expected one JSON object, found an empty output (nothing but whitespace)"


def test_json_whitespace_around_the_object_is_fine(evidence: dict[str, str]) -> None:
    assert check_answer("\n\t " + dump() + "\r\n", evidence).ok


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ('{"status": "answered",}', "invalid_json"),
        ("{'status': 'answered'}", "invalid_json"),
        ('{"status": "answered", "answer": NaN}', "invalid_json"),
        ('{"status": "\\ud800"}', "invalid_json"),
        ('{"status": "answered", "status": "insufficient_evidence"}', "duplicate_key"),
        ('{"citations": [{"quote": "a", "quote": "b"}]}', "duplicate_key"),
    ],
)
def test_json_stage_codes(raw: str, code: str, evidence: dict[str, str]) -> None:
    result = check_answer(raw, evidence)
    assert result.codes == (code,)
    assert result.stage == "json"


def test_invalid_utf8_bytes_are_invalid_json(evidence: dict[str, str]) -> None:
    assert check_answer(b'{"status": "\xff"}', evidence).codes == ("invalid_json",)


def test_bytes_input_passes_like_str(evidence: dict[str, str]) -> None:
    assert check_answer(dump().encode("utf-8"), evidence).ok


def test_schema_is_strict_no_conversion(evidence: dict[str, str]) -> None:
    result = check_answer(dump(answer=300000), evidence)
    assert result.codes == ("schema_violation",)
    assert result.errors[0].path == "$.answer"
    assert result.errors[0].message == "expected a string or null, found a number at $.answer"


def test_seed_free_form_output_reports_every_schema_error(evidence: dict[str, str]) -> None:
    raw = '{"answer": "분기당 30만 원이다.", "sources": "교육비 안내"}'
    result = check_answer(raw, evidence)
    assert set(result.codes) == {"schema_violation"}
    assert sorted(error.path for error in result.errors) == [
        "$.citations",
        "$.clarification",
        "$.sources",
        "$.status",
    ]


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"status": "Answered"}, "$.status"),
        ({"status": "forbidden"}, "$.status"),
        ({"status": 1}, "$.status"),
        ({"citations": {"source_id": "edu#2", "quote": "x"}}, "$.citations"),
        ({"citations": ["edu#2"]}, "$.citations[0]"),
        ({"citations": [{"source_id": "edu#2"}]}, "$.citations[0].quote"),
        ({"citations": [{"source_id": "edu#2", "quote": "x", "page": 1}]}, "$.citations[0].page"),
        ({"clarification": False}, "$.clarification"),
        ({"confidence": 0.9}, "$.confidence"),
    ],
)
def test_schema_violations_carry_the_json_path(
    fields: dict[str, object], path: str, evidence: dict[str, str]
) -> None:
    result = check_answer(dump(**fields), evidence)
    assert "schema_violation" in result.codes
    assert path in [error.path for error in result.errors]


def test_missing_key_is_not_the_same_as_null(evidence: dict[str, str]) -> None:
    body = json.loads(dump())
    del body["clarification"]
    result = check_answer(json.dumps(body), evidence)
    assert result.codes == ("schema_violation",)
    assert result.errors[0].message == "expected the key 'clarification', found it missing at $.clarification"


def test_top_level_must_be_an_object_after_parsing(evidence: dict[str, str]) -> None:
    # '{' ... '}' framing passes stage 2; the parser then decides. A bare object is the only shape.
    assert check_answer("{}", evidence).codes == ("schema_violation",) * 4


STATUS_CASES = [
    ("answered", {"answer": None}, {"$.answer"}),
    ("answered", {"answer": "  "}, {"$.answer"}),
    ("answered", {"citations": []}, {"$.citations"}),
    ("answered", {"clarification": "어느 분기인가요?"}, {"$.clarification"}),
    ("needs_clarification", {"answer": None, "citations": [], "clarification": None}, {"$.clarification"}),
    ("needs_clarification", {"answer": None, "citations": [], "clarification": " "}, {"$.clarification"}),
    ("needs_clarification", {"clarification": "어느 쪽인가요?"}, {"$.answer", "$.citations"}),
    ("insufficient_evidence", {"answer": "매월 50만 원이다", "citations": []}, {"$.answer"}),
    ("insufficient_evidence", {"answer": None}, {"$.citations"}),
    ("insufficient_evidence", {"answer": None, "citations": [], "clarification": "?"}, {"$.clarification"}),
    (
        "insufficient_evidence",
        {"answer": "x", "clarification": "?"},
        {"$.answer", "$.citations", "$.clarification"},
    ),
]


@pytest.mark.parametrize(("status", "fields", "paths"), STATUS_CASES)
def test_status_table(
    status: str, fields: dict[str, object], paths: set[str], evidence: dict[str, str]
) -> None:
    result = check_answer(dump(status=status, **fields), evidence)
    assert set(result.codes) == {f"inconsistent_{status}"}
    assert {error.path for error in result.errors} == paths
    assert result.stage == "status_rules"
    assert result.claimed_status == status
    assert result.answer is None


@pytest.mark.parametrize(
    ("status", "fields"),
    [
        (
            "needs_clarification",
            {"answer": None, "citations": [], "clarification": "어느 분기를 말씀하시나요?"},
        ),
        ("insufficient_evidence", {"answer": None, "citations": [], "clarification": None}),
    ],
)
def test_status_table_valid_rows(status: str, fields: dict[str, object], evidence: dict[str, str]) -> None:
    assert check_answer(dump(status=status, **fields), evidence).ok


def test_limits_at_and_over_the_boundary(evidence: dict[str, str]) -> None:
    cite = {"source_id": "edu#2", "quote": "교육비"}
    assert check_answer(dump(answer="가" * 4000), evidence).ok
    assert check_answer(dump(citations=[cite] * 8), evidence).ok
    result = check_answer(dump(answer="가" * 4001, citations=[cite] * 9), evidence)
    assert sorted(result.codes) == ["too_long", "too_many_citations"]
    assert result.stage == "limits"
    clar = dump(status="needs_clarification", answer=None, citations=[], clarification="?" * 501)
    assert check_answer(clar, evidence).codes == ("too_long",)
    long_quote = {"source_id": "edu#2", "quote": "a" * 501}
    result = check_answer(dump(citations=[cite, long_quote]), evidence)
    assert result.codes == ("too_long",)
    assert result.errors[0].path == "$.citations[1].quote"


@pytest.mark.parametrize(
    ("quote", "why"),
    [
        ("교육비 한도는  분기당 30만 원이다", "one extra space"),
        ("교육비 한도는 분기당 30만원이다", "one missing space"),
        ("교육비 한도는 분기당 삼십만 원이다", "paraphrase"),
        ("교육비 한도는 분기당 30만 원이다!", "extra punctuation"),
        ("", "empty quote"),
        ("   ", "blank quote"),
        ("육아휴직을 시작하려는 날의 30일 전까지", "quote from another block"),
    ],
)
def test_quote_must_be_verbatim_in_the_cited_block(quote: str, why: str, evidence: dict[str, str]) -> None:
    result = check_answer(dump(citations=[{"source_id": "edu#2", "quote": quote}]), evidence)
    assert result.codes == ("quote_not_found",), why
    assert result.errors[0].path == "$.citations[0].quote"


def test_grounding_reports_every_citation(evidence: dict[str, str]) -> None:
    citations = [
        {"source_id": "edu#2", "quote": "교육비 한도는 분기당 30만 원이다"},
        {"source_id": "nope", "quote": "x"},
        {"source_id": "leave#2", "quote": "30일 전까지 인사팀에"},
        {"source_id": "leave#2", "quote": "60일 전까지"},
    ]
    result = check_answer(dump(citations=citations), evidence)
    assert [(error.code, error.path) for error in result.errors] == [
        ("unknown_source", "$.citations[1].source_id"),
        ("quote_not_found", "$.citations[3].quote"),
    ]


def test_whole_block_quote_and_source_id_is_case_sensitive(evidence: dict[str, str]) -> None:
    assert check_answer(dump(citations=[{"source_id": "edu#2", "quote": EDU_LIMIT_BLOCK}]), evidence).ok
    assert check_answer(dump(citations=[{"source_id": "EDU#2", "quote": "교육비"}]), evidence).codes == (
        "unknown_source",
    )


def test_no_unicode_normalization_nfd_hangul_fails(evidence: dict[str, str]) -> None:
    import unicodedata

    nfd = unicodedata.normalize("NFD", "교육비 한도는")
    assert nfd != "교육비 한도는"
    assert check_answer(dump(citations=[{"source_id": "edu#2", "quote": nfd}]), evidence).codes == (
        "quote_not_found",
    )


# Stage order: the earliest failing stage wins, later stages are not reported ------------------------


@pytest.mark.parametrize(
    ("raw", "stage", "code"),
    [
        ("```" + "x" * 70_000, "size", "too_large"),
        ("```json\n" + '{"status": "a", "status": "b"}' + "\n```", "bare_json", "not_bare_json"),
        ('{"status": "a", "status": "b"} and prose', "bare_json", "not_bare_json"),
        ('{"status": "answered", "status": "answered", "answer": 1}', "json", "duplicate_key"),
        (dump(answer=1, citations=[]), "schema", "schema_violation"),
        (dump(answer="가" * 5000, citations=[]), "status_rules", "inconsistent_answered"),
        (dump(answer="가" * 5000, citations=[{"source_id": "nope", "quote": ""}]), "limits", "too_long"),
    ],
)
def test_earliest_stage_wins(raw: str, stage: str, code: str, evidence: dict[str, str]) -> None:
    result = check_answer(raw, evidence)
    assert result.stage == stage
    assert set(result.codes) == {code}


def test_stage_and_code_tables_are_complete() -> None:
    assert STAGES == ("size", "bare_json", "json", "schema", "status_rules", "limits", "grounding")
    assert len(ERROR_CODES) == len(set(ERROR_CODES)) == 12


def test_empty_evidence_makes_every_citation_unknown() -> None:
    assert check_answer(dump(), {}).codes == ("unknown_source",)


# Messages never echo the generation ---------------------------------------------------------------

SECRET = "SECRET-PAYLOAD-7f3a"


@pytest.mark.parametrize(
    "raw",
    [
        dump(answer=SECRET, citations=[{"source_id": SECRET, "quote": SECRET}]),
        dump(answer=None, status="insufficient_evidence", citations=[], clarification=SECRET),
        dump(status=SECRET),
        dump(**{SECRET: 1}).replace(f'"{SECRET}"', f'"{SECRET * 3}"'),
        "```" + SECRET,
        '{"a": "' + SECRET + '", "a": 1}',
        '{"answer": "' + SECRET + '\n"}',
        dump(citations=[{"source_id": "edu#2", "quote": SECRET}]),
        dump(answer=[SECRET]),
    ],
)
def test_messages_never_echo_the_generation(raw: str, evidence: dict[str, str]) -> None:
    result = check_answer(raw, evidence)
    assert not result.ok
    for error in result.errors:
        assert SECRET not in error.message
        assert SECRET not in error.path
        assert "pydantic" not in error.message.lower()
        assert "input_value" not in error.message


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gets_a_verdict_never_an_exception(raw: str) -> None:
    result = check_answer(raw, {"a": "b"})
    assert result.ok is (result.answer is not None)
    assert result.ok or result.errors
    assert all(error.code in (*ERROR_CODES,) for error in result.errors)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_get_a_verdict(raw: bytes) -> None:
    result = check_answer(raw, {})
    assert result.ok or result.errors


# Caller mistakes (issue 13): a named TypeError, never a verdict on the model --------------------------


@pytest.mark.parametrize("raw", [None, 5, ["{}"]])
def test_raw_of_another_type_is_a_named_type_error(raw: object, evidence: dict[str, str]) -> None:
    with pytest.raises(InputTypeError) as caught:
        check_answer(raw, evidence)  # type: ignore[arg-type]
    assert caught.value.code == "bad_input_type" and isinstance(caught.value, TypeError)


def test_bytearray_and_memoryview_are_checked_like_bytes(evidence: dict[str, str]) -> None:
    raw = dump().encode()
    assert check_answer(bytearray(raw), evidence).ok and check_answer(memoryview(raw), evidence).ok


@pytest.mark.parametrize(
    ("bad", "found"),
    [(None, "found NoneType"), ([("edu#2", EDU_LIMIT_BLOCK)], "found list"), ({"edu#2": 5}, "found int for source_id 'edu#2'"),
     ({"edu#2": None}, "found NoneType for source_id 'edu#2'"), ({1: "x"}, "a key of type int")],
)
def test_evidence_of_the_wrong_type_is_a_named_type_error(bad: object, found: str) -> None:
    """{"edu#2": 5} used to escape as TypeError ('argument of type int is not iterable') from the
    grounding stage, only when a citation named that block."""
    with pytest.raises(InputTypeError) as caught:
        check_answer(dump(), bad)  # type: ignore[arg-type]
    assert caught.value.code == "bad_input_type" and found in str(caught.value)
