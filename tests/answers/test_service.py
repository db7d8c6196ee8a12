"""The service layer is the only source of 'forbidden' and 'unavailable'."""

from __future__ import annotations

import typing

import pytest

from chatparse.answers.check import AnswerError
from chatparse.answers.model import STATUSES, GroundedAnswer
from chatparse.answers.pipeline import TokenCountError
from chatparse.answers.result import AnswerResult, Attempt, Versions
from chatparse.answers.service import ServiceStatus, respond, service_response

from .conftest import dump

VERSIONS = Versions(prompt="P1")


def result(kind: typing.Any, **fields: typing.Any) -> AnswerResult:
    return AnswerResult(kind=kind, versions=VERSIONS, attempts=(Attempt(number=1, kind=kind),), **fields)


def test_model_statuses_never_include_service_statuses() -> None:
    assert "forbidden" not in STATUSES and "unavailable" not in STATUSES
    assert set(typing.get_args(ServiceStatus)) == {
        *STATUSES,
        "refused",
        "invalid",
        "forbidden",
        "unavailable",
    }


def test_ok_result_maps_to_its_checked_fields() -> None:
    answer = GroundedAnswer.model_validate_json(dump())
    response = service_response(result("ok", answer=answer))
    assert response.status == "answered"
    assert response.answer == answer.answer
    assert response.citations == tuple(answer.citations)


@pytest.mark.parametrize(
    ("kind", "fields", "status", "codes"),
    [
        ("refused", {"refusal": "no"}, "refused", ()),
        (
            "invalid",
            {"errors": (AnswerError("quote_not_found", "m", "$.citations[0].quote"),)},
            "invalid",
            ("quote_not_found",),
        ),
        ("failed", {"failure": "http_503"}, "unavailable", ("http_503",)),
    ],
)
def test_other_kinds(kind: str, fields: dict[str, typing.Any], status: str, codes: tuple[str, ...]) -> None:
    response = service_response(result(kind, **fields))
    assert response.status == status
    assert response.error_codes == codes
    assert response.answer is None


def test_forbidden_runs_nothing() -> None:
    calls: list[int] = []

    def run() -> AnswerResult:
        calls.append(1)
        return result("ok")

    response = respond(run, allowed=False)
    assert response.status == "forbidden" and response.result is None
    assert calls == []


def test_token_count_failure_becomes_unavailable_not_insufficient_evidence() -> None:
    def run() -> AnswerResult:
        raise TokenCountError("expected a count, found RuntimeError")

    response = respond(run, allowed=True)
    assert response.status == "unavailable"
    assert response.error_codes == ("token_count_failed",)


def test_other_exceptions_are_not_swallowed() -> None:
    def run() -> AnswerResult:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        respond(run, allowed=True)
