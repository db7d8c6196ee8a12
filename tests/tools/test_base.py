"""ToolInputBase coerces representation for every subclass; StrictModel coerces nothing."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from chatparse.tools import StrictModel, StrictModelError, ToolArgumentError, ToolInputBase


class Mode(Enum):
    WRITE = "write"
    APPEND = "append"


class Range(ToolInputBase):
    start: int
    end: int


class WriteFile(ToolInputBase):
    """Write text to a file."""

    path: str
    lines: list[str]
    mode: Mode = Mode.WRITE
    encoding: Literal["utf-8", "latin-1"] = "utf-8"
    span: Range | None = None
    retries: int = 0


def test_a_subclass_inherits_the_coercion_without_asking() -> None:
    call = WriteFile.model_validate(
        {"path": "007", "lines": "['a', 'b']", "mode": "append", "span": "{'start': '1', 'end': 2}", "retries": "3"}
    )
    assert call == WriteFile(path="007", lines=["a", "b"], mode=Mode.APPEND, span=Range(start=1, end=2), retries=3)


def test_arguments_as_text_json_or_python_literal() -> None:
    assert WriteFile.from_arguments('{"path": "p", "lines": ["x"]}').lines == ["x"]
    assert WriteFile.from_arguments("{'path': 'p', 'lines': ['x'], 'span': None}").span is None


def test_enum_near_miss_is_invalid_choice_with_options() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        WriteFile.from_arguments({"path": "p", "lines": [], "mode": "Write"})
    error = caught.value
    assert error.code == "invalid_choice"
    assert error.field == "mode"
    assert error.got == "Write"
    assert error.allowed == ["write", "append"]
    assert '"write", "append"' in str(error)


def test_literal_violation_is_invalid_choice_with_options() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        WriteFile.from_arguments({"path": "p", "lines": [], "encoding": "UTF-8"})
    assert caught.value.code == "invalid_choice"
    assert caught.value.allowed == ["utf-8", "latin-1"]


def test_model_validate_raises_pydantic_errors_with_our_codes() -> None:
    with pytest.raises(ValidationError) as caught:
        WriteFile.model_validate({"path": "p", "lines": [], "mode": "Write", "bogus": 1})
    errors = caught.value.errors(include_url=False)
    assert [(e["type"], e["loc"]) for e in errors] == [("invalid_choice", ("mode",)), ("unknown_argument", ("bogus",))]
    assert errors[0]["ctx"]["allowed"] == ["write", "append"]


def test_every_issue_reported_with_named_codes() -> None:
    with pytest.raises(ToolArgumentError) as caught:
        WriteFile.from_arguments({"lines": "not a list", "span": {"start": "x"}, "colour": "red"})
    codes = sorted((e.code, e.path) for e in caught.value.errors)
    assert codes == [
        ("missing_argument", "$.path"),
        ("missing_argument", "$.span.end"),
        ("unknown_argument", "$.colour"),
        ("wrong_type", "$.lines"),
        ("wrong_type", "$.span.start"),
    ]
    assert caught.value.tool == "WriteFile"


def test_pydantic_constraints_still_apply_after_coercion() -> None:
    from pydantic import Field

    class Page(ToolInputBase):
        size: int = Field(ge=1, le=100)

    assert Page.from_arguments({"size": "10"}).size == 10
    with pytest.raises(ToolArgumentError) as caught:
        Page.from_arguments({"size": "1000"})
    assert caught.value.code == "invalid_value"
    assert caught.value.details["pydantic_type"] == "less_than_equal"


def test_python_objects_pass_straight_to_pydantic() -> None:
    call = WriteFile(path="p", lines=["x"], mode=Mode.APPEND, span=Range(start=1, end=2))
    assert call.mode is Mode.APPEND
    assert WriteFile.model_validate(call) is call


# --- inside the system: strict ----------------------------------------------------------


class Phase(Enum):  # a plain Enum: its members never equal plain strings
    DRAFT = "draft"
    REVIEW = "review"
    DONE = "done"


class WorkflowState(StrictModel):
    phase: Phase
    attempts: int
    reviewer: str | None = None


def advance(state: WorkflowState) -> WorkflowState:
    """A transition guard: plain Python comparisons, no clever handling underneath."""
    if state.phase == Phase.DRAFT:
        return state.model_copy(update={"phase": Phase.REVIEW})
    if state.phase == Phase.REVIEW and state.attempts >= 1:
        return state.model_copy(update={"phase": Phase.DONE})
    return state


def test_strict_model_accepts_exact_types() -> None:
    state = WorkflowState(phase=Phase.DRAFT, attempts=0)
    assert advance(state).phase is Phase.REVIEW


@pytest.mark.parametrize(
    ("data", "error_type"),
    [
        ({"phase": "draft", "attempts": 0}, "is_instance_of"),  # a string is not the enum member
        ({"phase": Phase.DRAFT, "attempts": "0"}, "int_type"),  # "0" is not 0
        ({"phase": Phase.DRAFT, "attempts": 0.0}, "int_type"),
        ({"phase": Phase.DRAFT, "attempts": True}, "int_type"),
        ({"phase": Phase.DRAFT, "attempts": 0, "extra": 1}, "extra_forbidden"),
    ],
)
def test_strict_model_type_mismatch_raises(data: dict[str, object], error_type: str) -> None:
    with pytest.raises(ValidationError) as caught:
        WorkflowState(**data)  # type: ignore[arg-type]
    assert caught.value.errors()[0]["type"] == error_type


def test_strict_model_assignment_is_checked() -> None:
    state = WorkflowState(phase=Phase.DRAFT, attempts=0)
    with pytest.raises(ValidationError):
        state.attempts = "1"  # type: ignore[assignment]
    with pytest.raises(ValidationError):
        state.phase = "review"  # type: ignore[assignment]


def test_plain_enum_is_never_equal_to_a_plain_string() -> None:
    state = WorkflowState(phase=Phase.DRAFT, attempts=0)
    # mypy --strict flags these comparisons too (comparison-overlap): the mistake is caught twice.
    assert state.phase != "draft"  # type: ignore[comparison-overlap]
    assert advance(state).phase != "review"  # type: ignore[comparison-overlap]


class LooseStatus(str, Enum):  # noqa: UP042  (the classic spelling of the trap; StrEnum is the same)
    OPEN = "open"


def test_str_enum_compares_equal_to_strings_so_strict_models_refuse_it() -> None:
    assert LooseStatus.OPEN == "open"  # type: ignore[comparison-overlap]  # the trap: a str-mixin member equals its plain string
    with pytest.raises(StrictModelError) as caught:

        class Ticket(StrictModel):
            status: LooseStatus | None

    assert caught.value.code == "loose_type_in_strict_model"
    assert caught.value.field == "status"
    assert "plain Enum" in str(caught.value)


def test_tool_input_base_is_lenient_strict_model_is_not() -> None:
    class Lenient(ToolInputBase):
        attempts: int

    class Strict(StrictModel):
        attempts: int

    assert Lenient.model_validate({"attempts": "2"}).attempts == 2
    with pytest.raises(ValidationError):
        Strict.model_validate({"attempts": "2"})


class Pick(ToolInputBase):
    kind: Literal["a", "b", 3]


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("value", [10**5000, _nested(1200)], ids=["5,001-digit integer", "1,200 levels"])
def test_values_str_cannot_print_reach_pydantic_as_short_text(value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """pydantic renders every error context value with str(): a 5,001-digit integer or a list nested 1,200
    deep used to print 'Exception ignored ... Exceeds the limit (4300 digits)' from inside pydantic
    (found by the hostile-input fuzzing, issue 13)."""
    ignored: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)
    with pytest.raises(ToolArgumentError) as caught:
        Pick.from_arguments({"kind": value})
    assert caught.value.code == "invalid_choice" and len(str(caught.value)) < 400
    assert ignored == []
