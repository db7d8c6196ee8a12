"""``check_answer(raw, evidence)``: the staged local validator of the grounded-answer contract.

Stages run in a fixed order and stop at the first stage that fails, reporting every error of
that stage with a stable code, a JSON path and a message that never echoes the generation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, AnyStr, Final

from pydantic import ValidationError

from chatparse.answers.model import (
    MAX_ANSWER_CHARS,
    MAX_CITATIONS,
    MAX_CLARIFICATION_CHARS,
    MAX_QUOTE_CHARS,
    MAX_RAW_BYTES,
    STATUSES,
    GroundedAnswer,
)
from chatparse.errors import InputTypeError, excerpt
from chatparse.strict_json import StrictJSONError, as_text_or_bytes, loads, scan_strict

VALIDATOR_VERSION: Final = "answer-check/1"
"""Bump when any rule changes; quotes are matched exactly (no Unicode or whitespace normalization)."""

STAGES: Final = (
    "size",
    "bare_json",
    "json",
    "schema",
    "status_rules",
    "limits",
    "grounding",
)
_JSON_WHITESPACE: Final = " \t\n\r"
_SAFE_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


@dataclass(frozen=True)
class AnswerError:
    """One contract violation: a stable ``code``, a safe ``message`` and a JSON ``path``."""

    code: str
    message: str
    path: str = "$"

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "path": self.path}


@dataclass(frozen=True)
class AnswerCheck:
    """The outcome: ``answer`` is set only when ``ok``; ``stage`` is the last stage reached.

    ``claimed_status`` is the status the model chose once the schema stage passed, kept for
    evaluation only: an unchecked status must not drive anything.
    """

    ok: bool
    answer: GroundedAnswer | None
    errors: tuple[AnswerError, ...] = ()
    stage: str = "grounding"
    claimed_status: str | None = None

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(error.code for error in self.errors)


class _Failed(Exception):
    """Internal control flow: the stage that failed and all of its errors."""

    def __init__(self, stage: str, errors: list[AnswerError], claimed_status: str | None = None) -> None:
        super().__init__(stage)
        self.stage = stage
        self.errors = errors
        self.claimed_status = claimed_status


def check_answer(raw: str | bytes | bytearray | memoryview, evidence: Mapping[str, str]) -> AnswerCheck:
    """Validate one raw generation against the blocks that were actually in the prompt.

    ``raw`` of another type, or ``evidence`` that is not a mapping of ``str`` to ``str``, is the caller's
    fault: an ``InputTypeError`` (a ``TypeError``), never a verdict on the model."""
    raw = as_text_or_bytes(raw, "check_answer()")
    check_evidence(evidence, "check_answer()")
    try:
        answer = _run_stages(raw, evidence)
    except _Failed as failed:
        return AnswerCheck(
            ok=False,
            answer=None,
            errors=tuple(failed.errors),
            stage=failed.stage,
            claimed_status=failed.claimed_status,
        )
    return AnswerCheck(ok=True, answer=answer, stage="grounding", claimed_status=answer.status)


def check_evidence(evidence: object, where: str) -> None:
    """Evidence is a mapping of ``source_id`` to block text, both ``str``; anything else is named."""
    if type(evidence) is dict and all(map(str.__instancecheck__, evidence)) and all(
        map(str.__instancecheck__, evidence.values())
    ):
        return  # the common case, checked in C; any other input is walked below to name the fault
    if not isinstance(evidence, Mapping):
        raise InputTypeError(
            f"{where} expected evidence as a mapping of source_id to block text, found {type(evidence).__name__}. "
            "Pass {source_id: text} for the blocks that were in the prompt.",
            found=type(evidence).__name__,
        )
    for source_id, block in evidence.items():
        if not isinstance(source_id, str):
            raise InputTypeError(
                f"{where} expected every source_id in evidence to be a str, found a key of type "
                f"{type(source_id).__name__}. Key the blocks by their string ids.",
                found=type(source_id).__name__,
            )
        if not isinstance(block, str):
            raise InputTypeError(
                f"{where} expected the block text of every source_id to be a str, found "
                f"{type(block).__name__} for source_id {excerpt(source_id)}. Pass each block's text.",
                key=source_id, found=type(block).__name__,
            )


def _run_stages(raw: str | bytes, evidence: Mapping[str, str]) -> GroundedAnswer:
    _check_size(raw)
    answer = _read_valid_answer(raw)
    if answer is None:
        _check_bare(raw)
        data = _parse(raw)
        answer = _validate_schema(data)
    status = answer.status
    for stage, rule in _RULE_STAGES:
        errors = rule(answer, evidence)
        if errors:
            raise _Failed(stage, errors, claimed_status=status)
    return answer


def _read_valid_answer(raw: str | bytes) -> GroundedAnswer | None:
    """The answer when ``raw`` passes the bare-JSON, JSON and schema stages at once, else None (the stages
    then run one by one to name the fault).

    One parse serves all three: an object read from the whole text is bare; the schema holds no number and
    nests three levels, so a value it accepts is one the strict reader's number range and depth bound accept
    too. A text with few escapes is read by pydantic's JSON reader alone; one with many (``ensure_ascii``
    output) by the strict C scan."""
    if isinstance(raw, bytes):
        escaped_quotes = _escaped_quotes(raw, b"\\", b'"')
    else:
        escaped_quotes = _escaped_quotes(raw, "\\", '"')
    if escaped_quotes is not None:
        return _read_with_few_escapes(raw, escaped_quotes)
    data = scan_strict(raw, max_bytes=MAX_RAW_BYTES)
    if type(data) is not dict:
        return None
    try:
        return _VALIDATE(data, strict=True)  # type: ignore[no-any-return]
    except ValidationError:
        return None


def _escaped_quotes(raw: AnyStr, backslash: AnyStr, quote: AnyStr) -> int | None:
    """How many ``\\"`` escapes ``raw`` holds, or None past ``_MAX_ESCAPES_WALKED`` backslashes.

    The backslashes are found left to right, one C search each. An escape starts with a backslash and its
    second character is never one (``\\uXXXX`` continues with hex digits), so the search goes on after it."""
    at = raw.find(backslash)
    if at < 0:
        return 0
    if raw.count(backslash, at) > _MAX_ESCAPES_WALKED:
        return None
    count = 0
    while at >= 0:
        count += raw[at + 1 : at + 2] == quote
        at = raw.find(backslash, at + 2)
    return count


# Each escape costs one Python step here; past this many, the strict C scan is the cheaper reader.
_MAX_ESCAPES_WALKED: Final = 32


def _read_with_few_escapes(raw: str | bytes, escaped_quotes: int) -> GroundedAnswer | None:
    """The answer read by pydantic's strict JSON mode, else None; ``escaped_quotes`` counts the ``\\"``.

    That reader rejects what the strict reader rejects (a lone surrogate, a control character in a string,
    a bad escape, a BOM, invalid UTF-8, a trailing comma, text around the object) except a repeated key,
    which keeps the last value. Every '"' in the text is a string's delimiter or an escaped quote (a
    ``\\u0022`` holds none), so the text holds exactly the strings of the answer, keys included however
    they are spelled, only when no key was repeated (tests/answers compare this path with the stages)."""
    try:
        answer: GroundedAnswer = _VALIDATE_JSON(raw, strict=True)
    except ValueError:  # ValidationError
        return None
    quotes = raw.count(b'"') if isinstance(raw, bytes) else raw.count('"')
    return answer if quotes == 2 * _strings_in(answer) + escaped_quotes else None


def _strings_in(answer: GroundedAnswer) -> int:
    """Keys and string values: four keys and the status, two keys and two values per citation, and the
    answer and the clarification when they are not null."""
    return 5 + 4 * len(answer.citations) + (answer.answer is not None) + (answer.clarification is not None)


_VALIDATE: Final = GroundedAnswer.__pydantic_validator__.validate_python
_VALIDATE_JSON: Final = GroundedAnswer.__pydantic_validator__.validate_json
# A text of N chars takes at most 4 * N UTF-8 bytes and at least N.
_MAX_UTF8_BYTES_PER_CHAR: Final = 4


def _check_size(raw: str | bytes) -> None:
    if isinstance(raw, str) and len(raw) * _MAX_UTF8_BYTES_PER_CHAR <= MAX_RAW_BYTES:
        return  # fits whatever its characters; the exact size is measured only when it may not
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > MAX_RAW_BYTES:
        message = f"expected at most {MAX_RAW_BYTES} UTF-8 bytes, found {size} bytes in the whole output"
        raise _Failed("size", [AnswerError("too_large", message)])


def _check_bare(raw: str | bytes) -> None:
    """Reject anything but whitespace before the object's ``{`` or after the ``}`` that closes it.
    An object that never closes is cut off: the JSON stage reports it (``invalid_json``)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    start = len(text) - len(text.lstrip(_JSON_WHITESPACE))
    if start == len(text):
        message = "expected one JSON object, found an empty output (nothing but whitespace)"
        raise _Failed("json", [AnswerError("invalid_json", message)])
    if text[start] != "{":
        raise _Failed("bare_json", [_not_bare(_describe_wrapper(text[start:]))])
    end = _object_end(text, start)
    if end >= 0 and text[end:].strip(_JSON_WHITESPACE):
        raise _Failed("bare_json", [_not_bare(f"text after the object at offset {end}")])


def _not_bare(found: str) -> AnswerError:
    return AnswerError(
        "not_bare_json",
        f"expected one bare JSON object and nothing else, found {found}. "
        "Code fences and prose are rejected, never trimmed.",
    )


_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS: Final = re.compile(r'[{}\[\]"]')
_CLOSER: Final = {"{": "}", "[": "]"}


def _object_end(text: str, start: int) -> int:
    """Where the object opening at ``start`` closes (brackets matched outside strings), or -1 when it
    never does: cut off, or broken (the JSON stage names the fault)."""
    open_brackets: list[str] = []
    match = _BRACKETS.search(text, start)
    while match is not None:
        char, at = match.group(), match.start()
        if char == '"':
            string = _STRING.match(text, at)
            if string is None:
                return -1
            match = _BRACKETS.search(text, string.end())
            continue
        if char in _CLOSER:
            open_brackets.append(_CLOSER[char])
        elif not open_brackets or open_brackets.pop() != char:
            return -1
        elif not open_brackets:
            return at + 1
        match = _BRACKETS.search(text, at + 1)
    return -1


def _describe_wrapper(body: str) -> str:
    if body.startswith("```"):
        return "a Markdown code fence"
    if body.startswith(("[", '"')):
        return "a JSON value that is not an object"
    return "text before the object" if "{" in body else "text and no JSON object"


def _parse(raw: str | bytes) -> Any:
    try:
        return loads(raw, max_bytes=MAX_RAW_BYTES)
    except StrictJSONError as exc:
        stage = "bare_json" if exc.code == "trailing_text" else "json"
        raise _Failed(stage, [_json_error(exc, raw)]) from None


def _json_error(exc: StrictJSONError, raw: str | bytes) -> AnswerError:
    if exc.code == "duplicate_key":
        shown = _shown_key(exc.key or "")
        return AnswerError(
            "duplicate_key", f"expected each key once, found {shown} twice at offset {exc.offset}"
        )
    if exc.code == "trailing_text":
        return _not_bare(f"text after the object at offset {exc.offset}")
    if exc.code == "unexpected_end":
        # One object cut off (the output token limit, most often): not text around an object.
        end = len(raw.decode("utf-8", "ignore") if isinstance(raw, bytes) else raw)
        return AnswerError(
            "invalid_json",
            f"expected a complete JSON object, found the object ending early at offset {end}: the output stops "
            f"inside it (often the output token limit). {exc.message}",
        )
    # strict_json messages describe at most one character of the input, never a span of it.
    return AnswerError("invalid_json", f"{exc.message} (strict_json code {exc.code})")


def _validate_schema(data: Any) -> GroundedAnswer:
    if not isinstance(data, dict):
        raise _Failed("schema", [AnswerError("schema_violation", "expected a JSON object at the top level")])
    try:
        return GroundedAnswer.model_validate(data, strict=True)
    except ValidationError as exc:
        errors = [_schema_error(item, data) for item in exc.errors(include_input=False, include_url=False)]
        raise _Failed("schema", errors) from None


_EXPECTED_BY_TYPE: Final = {
    "string_type": "a string",
    "list_type": "an array",
    "model_type": "an object",
    "dict_type": "an object",
    "literal_error": "one of " + ", ".join(repr(status) for status in STATUSES),
}


def _schema_error(item: Mapping[str, Any], data: Any) -> AnswerError:
    loc = tuple(item["loc"])
    path = _json_path(loc)
    kind = item["type"]
    if kind == "missing":
        return AnswerError(
            "schema_violation", f"expected the key {_last_key(loc)}, found it missing at {path}", path
        )
    if kind == "extra_forbidden":
        return AnswerError("schema_violation", f"expected no key {_last_key(loc)}, found one at {path}", path)
    expected = _EXPECTED_BY_TYPE.get(kind, "a value of the declared type")
    if path in ("$.answer", "$.clarification") and kind == "string_type":
        expected = "a string or null"
    found = _describe_json(_lookup(data, loc))
    if kind == "literal_error":
        found = "a string outside that set" if isinstance(_lookup(data, loc), str) else found
    return AnswerError("schema_violation", f"expected {expected}, found {found} at {path}", path)


def _last_key(loc: tuple[Any, ...]) -> str:
    return _shown_key(str(loc[-1]) if loc else "")


def _shown_key(key: str) -> str:
    """Short identifier-like keys are named; any other key is described, never echoed."""
    return repr(key) if _SAFE_KEY.fullmatch(key) else f"<key of {len(key)} chars>"


def _json_path(loc: tuple[Any, ...]) -> str:
    parts = ["$"]
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(f".{item}" if _SAFE_KEY.fullmatch(str(item)) else f".{_shown_key(str(item))}")
    return "".join(parts)


def _lookup(data: Any, loc: tuple[Any, ...]) -> Any:
    for item in loc:
        try:
            data = data[item]
        except (KeyError, IndexError, TypeError):
            return _Missing
    return data


class _Missing:
    pass


def _describe_json(value: Any) -> str:
    if value is _Missing:
        return "nothing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _status_rules(answer: GroundedAnswer, _evidence: Mapping[str, str]) -> list[AnswerError]:
    """The seed's table: which of answer / citations / clarification each status allows."""
    code = f"inconsistent_{answer.status}"
    wants_answer = answer.status == "answered"
    wants_clarification = answer.status == "needs_clarification"
    errors: list[AnswerError] = []
    if wants_answer and _blank(answer.answer):
        errors.append(AnswerError(code, "expected a non-blank answer when status is 'answered'", "$.answer"))
    if not wants_answer and answer.answer is not None:
        errors.append(AnswerError(code, f"expected answer null when status is {answer.status!r}", "$.answer"))
    if wants_answer and not answer.citations:
        errors.append(
            AnswerError(code, "expected at least one citation when status is 'answered'", "$.citations")
        )
    if not wants_answer and answer.citations:
        errors.append(
            AnswerError(code, f"expected no citations when status is {answer.status!r}", "$.citations")
        )
    if wants_clarification and _blank(answer.clarification):
        errors.append(
            AnswerError(
                code,
                "expected a non-blank clarification when status is 'needs_clarification'",
                "$.clarification",
            )
        )
    if not wants_clarification and answer.clarification is not None:
        errors.append(
            AnswerError(
                code, f"expected clarification null when status is {answer.status!r}", "$.clarification"
            )
        )
    return errors


def _blank(text: str | None) -> bool:
    """``not (text or "").strip()`` without copying: ``strip()`` and ``isspace()`` share one whitespace set."""
    return not text or text.isspace()


def _limits(answer: GroundedAnswer, _evidence: Mapping[str, str]) -> list[AnswerError]:
    errors = [
        error
        for error in (
            _too_long(answer.answer, MAX_ANSWER_CHARS, "$.answer"),
            _too_long(answer.clarification, MAX_CLARIFICATION_CHARS, "$.clarification"),
        )
        if error
    ]
    if len(answer.citations) > MAX_CITATIONS:
        message = f"expected at most {MAX_CITATIONS} citations, found {len(answer.citations)} at $.citations"
        errors.append(AnswerError("too_many_citations", message, "$.citations"))
    for index, citation in enumerate(answer.citations):
        if len(citation.quote) > MAX_QUOTE_CHARS:
            errors.append(_too_long_error(len(citation.quote), MAX_QUOTE_CHARS, f"$.citations[{index}].quote"))
    return errors


def _too_long(text: str | None, limit: int, path: str) -> AnswerError | None:
    if text is None or len(text) <= limit:
        return None
    return _too_long_error(len(text), limit, path)


def _too_long_error(length: int, limit: int, path: str) -> AnswerError:
    return AnswerError("too_long", f"expected at most {limit} characters, found {length} at {path}", path)


def _grounding(answer: GroundedAnswer, evidence: Mapping[str, str]) -> list[AnswerError]:
    """Each source must be a block in ``evidence``; each quote an exact, non-blank substring of it."""
    errors: list[AnswerError] = []
    for index, citation in enumerate(answer.citations):
        block = evidence.get(citation.source_id)
        if block is not None and citation.quote in block and not _blank(citation.quote):
            continue  # found: the common case builds no path
        path = f"$.citations[{index}]"
        if block is None:
            message = f"expected source_id to name a document block given in the prompt, found an unknown one at {path}.source_id"
            errors.append(AnswerError("unknown_source", message, f"{path}.source_id"))
        elif _blank(citation.quote):
            errors.append(
                AnswerError(
                    "quote_not_found",
                    f"expected a non-empty quote, found a blank one at {path}.quote",
                    f"{path}.quote",
                )
            )
        else:
            message = f"expected a verbatim substring of block {_short(citation.source_id)}, found no exact match at {path}.quote"
            errors.append(AnswerError("quote_not_found", message, f"{path}.quote"))
    return errors


def _short(source_id: str) -> str:
    """Only ids from ``evidence`` (the caller's, never the model's) reach this."""
    return repr(source_id) if len(source_id) <= 80 else f"of {len(source_id)} chars"


_Rule = Callable[[GroundedAnswer, Mapping[str, str]], list[AnswerError]]
_RULE_STAGES: Final[tuple[tuple[str, _Rule], ...]] = (
    ("status_rules", _status_rules),
    ("limits", _limits),
    ("grounding", _grounding),
)

ERROR_CODES: Final = (
    "too_large",
    "not_bare_json",
    "invalid_json",
    "duplicate_key",
    "schema_violation",
    "inconsistent_answered",
    "inconsistent_needs_clarification",
    "inconsistent_insufficient_evidence",
    "too_long",
    "too_many_citations",
    "unknown_source",
    "quote_not_found",
)

__all__ = [
    "ERROR_CODES",
    "STAGES",
    "VALIDATOR_VERSION",
    "AnswerCheck",
    "AnswerError",
    "check_answer",
    "check_evidence",
]
