"""The service layer: the only place that says ``forbidden`` or ``unavailable``.

It turns an ``AnswerResult`` (or a refusal to run, or a pre-generation failure) into the response
a user sees: a status, the checked fields, and error codes; never raw validator text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from chatparse.answers.model import Citation
from chatparse.answers.pipeline import BudgetError, TokenCountError
from chatparse.answers.result import AnswerResult

ServiceStatus = Literal[
    "answered",
    "needs_clarification",
    "insufficient_evidence",
    "refused",
    "invalid",
    "forbidden",
    "unavailable",
]


@dataclass(frozen=True)
class ServiceResponse:
    """What a user-facing API returns. ``result`` is None when no generation ran."""

    status: ServiceStatus
    answer: str | None = None
    citations: tuple[Citation, ...] = ()
    clarification: str | None = None
    error_codes: tuple[str, ...] = ()
    result: AnswerResult | None = None


def service_response(result: AnswerResult) -> ServiceResponse:
    """Map a result: a checked answer keeps its status; an infrastructure failure is ``unavailable``."""
    if result.kind == "ok" and result.answer is not None:
        answer = result.answer
        return ServiceResponse(
            status=answer.status,
            answer=answer.answer,
            citations=tuple(answer.citations),
            clarification=answer.clarification,
            result=result,
        )
    if result.kind == "refused":
        return ServiceResponse(status="refused", result=result)
    if result.kind == "invalid":
        return ServiceResponse(status="invalid", error_codes=result.error_codes, result=result)
    return ServiceResponse(status="unavailable", error_codes=(result.failure or "failed",), result=result)


def respond(run: Callable[[], AnswerResult], *, allowed: bool) -> ServiceResponse:
    """Run one question for an authorised user; a counting failure becomes ``unavailable``.

    ``allowed`` is the service's own authorisation decision; when False nothing is generated.
    """
    if not allowed:
        return ServiceResponse(status="forbidden", error_codes=("forbidden",))
    try:
        result = run()
    except (TokenCountError, BudgetError) as exc:
        return ServiceResponse(status="unavailable", error_codes=(exc.code,))
    return service_response(result)


__all__ = ["ServiceResponse", "ServiceStatus", "respond", "service_response"]
