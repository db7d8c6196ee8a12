"""GroundedAnswer and generation_schema: strict model, strict schema, and what the schema cannot say."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from chatparse.answers.check import check_answer
from chatparse.answers.model import SCHEMA_VERSION, Citation, GroundedAnswer, generation_schema

from .conftest import dump


def walk_objects(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") == "object":
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def keywords(node: Any) -> set[str]:
    seen: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            seen.update(key for key in item if key != "properties")
            stack.extend(item.get("properties", {}).values())
            stack.extend(value for key, value in item.items() if key != "properties")
        elif isinstance(item, list):
            stack.extend(item)
    return seen


SUPPORTED = {"type", "enum", "properties", "required", "additionalProperties", "items"}


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """A validator for exactly the keywords in SUPPORTED (the test below pins the schema to them)."""
    types = schema.get("type")
    allowed = types if isinstance(types, list) else [types]
    kinds = {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "null": value is None,
    }
    if not any(kinds.get(str(kind), False) for kind in allowed):
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if isinstance(value, dict):
        props = schema["properties"]
        if set(schema["required"]) - set(value) or (
            schema["additionalProperties"] is False and set(value) - set(props)
        ):
            return False
        return all(conforms(value[key], props[key]) for key in value)
    if isinstance(value, list):
        return all(conforms(item, schema["items"]) for item in value)
    return True


def test_schema_is_provider_strict() -> None:
    schema = generation_schema()
    objects = walk_objects(schema)
    assert len(objects) == 2  # the answer and a citation
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    assert schema["properties"]["answer"]["type"] == ["string", "null"]
    assert schema["properties"]["clarification"]["type"] == ["string", "null"]
    assert schema["properties"]["status"] == {
        "enum": ["answered", "needs_clarification", "insufficient_evidence"],
        "type": "string",
    }
    assert keywords(schema) <= SUPPORTED  # no $ref, anyOf, title, description, default
    assert "forbidden" not in json.dumps(schema) and "unavailable" not in json.dumps(schema)


def test_schema_is_derived_from_the_model_and_versioned() -> None:
    assert set(generation_schema()["properties"]) == set(GroundedAnswer.model_fields)
    assert set(generation_schema()["properties"]["citations"]["items"]["properties"]) == set(
        Citation.model_fields
    )
    assert SCHEMA_VERSION == "grounded-answer/1"
    schema = generation_schema()
    schema["properties"].clear()
    assert generation_schema()["properties"], "callers get a copy"


def test_model_is_strict() -> None:
    good = json.loads(dump())
    assert GroundedAnswer.model_validate(good).status == "answered"
    for bad in (
        {**good, "answer": 300000},
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "answer"},
    ):
        with pytest.raises(ValidationError):
            GroundedAnswer.model_validate(bad)
    with pytest.raises(ValidationError):
        GroundedAnswer.model_validate({**good, "status": "ANSWERED"})


# Rules the schema cannot express: each output below conforms to generation_schema(), so
# constrained decoding would happily produce it, and only the local checker rejects it.
NOT_EXPRESSIBLE: dict[str, tuple[str, str]] = {
    "status relation: answered needs an answer": (dump(answer=None), "inconsistent_answered"),
    "status relation: answered needs a citation": (dump(citations=[]), "inconsistent_answered"),
    "status relation: answered has no clarification": (dump(clarification="?"), "inconsistent_answered"),
    "status relation: needs_clarification has no answer": (
        dump(status="needs_clarification", clarification="어느 쪽인가요?"),
        "inconsistent_needs_clarification",
    ),
    "status relation: insufficient_evidence is empty": (
        dump(status="insufficient_evidence", citations=[]),
        "inconsistent_insufficient_evidence",
    ),
    "limit: answer 4,000 chars (not sent; provider support varies)": (dump(answer="a" * 4001), "too_long"),
    "limit: at most 8 citations (not sent)": (
        dump(citations=[{"source_id": "edu#2", "quote": "교육비"}] * 9),
        "too_many_citations",
    ),
    "limit: quote 500 chars (not sent)": (
        dump(citations=[{"source_id": "edu#2", "quote": "a" * 501}]),
        "too_long",
    ),
    "grounding: source_id is a block that was sent": (
        dump(citations=[{"source_id": "made-up", "quote": "교육비"}]),
        "unknown_source",
    ),
    "grounding: quote occurs verbatim in that block": (
        dump(citations=[{"source_id": "edu#2", "quote": "교육비 한도는 월 50만 원"}]),
        "quote_not_found",
    ),
    "grounding: quote is not empty": (
        dump(citations=[{"source_id": "edu#2", "quote": ""}]),
        "quote_not_found",
    ),
}


@pytest.mark.parametrize("rule", list(NOT_EXPRESSIBLE))
def test_rules_the_schema_cannot_express_stay_in_the_local_validator(
    rule: str, evidence: dict[str, str]
) -> None:
    raw, code = NOT_EXPRESSIBLE[rule]
    assert conforms(json.loads(raw), generation_schema()), "the schema alone accepts this output"
    assert code in check_answer(raw, evidence).codes


def test_the_mini_validator_does_reject_schema_errors() -> None:
    schema = generation_schema()
    good = json.loads(dump())
    assert conforms(good, schema)
    assert not conforms({**good, "answer": 1}, schema)
    assert not conforms({**good, "extra": None}, schema)
    assert not conforms({k: v for k, v in good.items() if k != "clarification"}, schema)
    assert not conforms({**good, "status": "forbidden"}, schema)
    assert not conforms({**good, "citations": [{"source_id": "a"}]}, schema)
