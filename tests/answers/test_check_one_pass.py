"""check_answer's one-pass read (pydantic's JSON reader for a text with few escapes, the strict C scan
otherwise) accepts exactly the answers the bare-JSON, JSON and schema stages accept one by one."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from chatparse.answers.check import (
    _check_bare,
    _check_size,
    _Failed,
    _parse,
    _read_valid_answer,
    _validate_schema,
    check_answer,
)
from chatparse.answers.model import GroundedAnswer
from tests import hostile

VALID: dict[str, Any] = {
    "status": "answered",
    "answer": "분기당 30만 원이다.",
    "citations": [{"source_id": "edu#2", "quote": "교육비 한도는"}, {"source_id": "leave#2", "quote": "30일"}],
    "clarification": None,
}
BODY = json.dumps(VALID, ensure_ascii=False)
ESCAPED = json.dumps(dict(VALID, answer='a "quoted" \\ answer\n\t\\"\\u0061 /'), ensure_ascii=False)
MANY_ESCAPES = json.dumps(dict(VALID, answer="가" * 70))  # past the escapes the one pydantic read walks
CLARIFY = '{"status": "needs_clarification", "answer": null, "citations": [], "clarification": "%s"}'

REPEATS = [  # (key as it first appears, the same with a repeat) at the top, in a citation, escaped, unknown
    ('"status": "answered"', '"status": "answered", "status": "answered"'),
    ('"status": "answered"', '"status": "answered", "st\\u0061tus": "answered"'),
    ('"quote": "30일"', '"quote": "30일", "quote": "30일"'),
    ('"source_id": "edu#2"', '"source_id": "nope", "source_id": "edu#2"'),
    ('"status": "answered"', '"x": 1, "x": 2, "status": "answered"'),
    ('"clarification": null', '"clarification": null, "clarification": null'),
]
CLARIFICATIONS = [  # key names as values (more quoted names than keys), then strings the strict reader refuses
    "answer", "status", "a\x00b", "a\x1fb", "a\ud800b", "a\\ud800b", "a\\udc00\\ud800", "a\\ud83d\\ude00",
    "a\x7f\x85\u2028", "a\\x",
]
AFTER = ["\x0b", "\x0c", "\x1c", "\u00a0", "\u2028", " {}", "\n```", ",", "]"]
NULL_AS = ["NaN", "nul", "0", "1e999", "[]", "{}"]

EDGES: list[str | bytes] = [
    BODY,
    json.dumps(VALID, ensure_ascii=False, indent=2),
    json.dumps(VALID),  # \u escapes: the C scan
    *(BODY.replace(key, repeated) for key, repeated in REPEATS),
    ESCAPED,
    ESCAPED.replace("/", "\\/"),
    *(ESCAPED.replace(key, repeated) for key, repeated in REPEATS),
    ESCAPED.replace('"status": "answered"', '"status": "answered", "status": "answered\\""'),
    ESCAPED.replace('"clarification": null', '"clarification": "\\"\\"", "clarification": null'),
    ESCAPED.replace('"status"', '"st\\u0061tus"'),
    ESCAPED.replace('"clarification": null', '"clarification": "\\u0022\\u0022", "clarification": null'),
    ESCAPED.replace('"clarification": null', '"clarification": null, "clarific\\u0061tion": "\\u0022\\""'),
    MANY_ESCAPES,
    *(MANY_ESCAPES.replace(key, repeated) for key, repeated in REPEATS),
    *(CLARIFY % text for text in CLARIFICATIONS),
    BODY.replace("분기당 30만 원이다.", "status"),
    *(BODY + after for after in AFTER),
    *(BODY.replace("null", value) for value in NULL_AS),
    *(before + BODY for before in ("\ufeff", " \t\r\n", "```json\n", "[")),
    BODY[:-1],
    BODY[:-1] + ",}",
    BODY.replace("]", ",]"),
    BODY.replace('"answered"', '"Answered"'),
    "{}",
    "",
    # bytes only
    BODY.encode()[:-3] + b"\xff\"}",
    BODY.encode().replace("분".encode(), b"\xed\xa0\x80"),
    BODY.encode().replace("분".encode(), b"\xc0\xaf"),
    b"\xef\xbb\xbf" + BODY.encode(),
]


def _by_stages(raw: str | bytes) -> GroundedAnswer | None:
    try:
        _check_size(raw)
        _check_bare(raw)
        return _validate_schema(_parse(raw))
    except _Failed:
        return None


def _assert_same(raw: str | bytes) -> None:
    one_pass = _read_valid_answer(raw)
    stages = _by_stages(raw)
    assert one_pass == stages or (one_pass is None and stages is not None), (raw, one_pass, stages)
    backslashes = raw.count(b"\\") if isinstance(raw, bytes) else raw.count("\\")
    if stages is not None and backslashes <= 32:
        assert one_pass == stages, raw  # with few escapes the one pydantic read decides alone


def _assert_same_as_text_and_bytes(raw: str | bytes) -> None:
    _assert_same(raw)
    if isinstance(raw, str):
        try:
            encoded = raw.encode("utf-8")
        except UnicodeEncodeError:
            return
        _assert_same(encoded)


@pytest.mark.parametrize("raw", EDGES)
def test_one_pass_accepts_what_the_stages_accept(raw: str | bytes) -> None:
    _assert_same_as_text_and_bytes(raw)


def test_a_repeated_key_without_escapes_is_still_named() -> None:
    raw = BODY.replace(*REPEATS[0])
    assert "\\" not in raw and "\\n" in ESCAPED.replace(*REPEATS[2])
    result = check_answer(raw, {"edu#2": "교육비 한도는", "leave#2": "30일"})
    assert result.codes == ("duplicate_key",)
    assert check_answer(ESCAPED.replace(*REPEATS[2]), {"edu#2": "교육비 한도는", "leave#2": "30일"}).codes == (
        "duplicate_key",
    )
    assert check_answer(BODY, {"edu#2": "교육비 한도는", "leave#2": "30일"}).ok
    assert check_answer(ESCAPED, {"edu#2": "교육비 한도는", "leave#2": "30일"}).ok


@pytest.mark.parametrize("seed", range(400))
def test_one_pass_agrees_with_the_stages_on_hostile_outputs(seed: int) -> None:
    case = hostile.answer_case(random.Random(seed))
    if isinstance(case.raw, str | bytes):
        _assert_same_as_text_and_bytes(case.raw)


@pytest.mark.parametrize("blank", ["", " ", "\u3000\x1c\x85\n", "\u200b"])
def test_blank_answer_and_quote_use_strip_whitespace(blank: str) -> None:
    """The status and grounding rules call a text blank exactly when ``str.strip()`` leaves nothing."""
    evidence = {"edu#2": "교육비 " + blank + " 한도"}
    body = dict(VALID, answer=blank, citations=[{"source_id": "edu#2", "quote": blank}])
    codes = check_answer(json.dumps(body, ensure_ascii=False), evidence).codes
    if blank.strip():
        assert codes == ()
    else:
        assert codes == ("inconsistent_answered",)
        body["answer"] = "x"
        assert check_answer(json.dumps(body, ensure_ascii=False), evidence).codes == ("quote_not_found",)
