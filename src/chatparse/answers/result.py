"""What one question-answering run returns: ``AnswerResult`` with its kind, versions and attempts.

``kind`` separates a checked answer (``ok``), a model refusal, an answer that broke the contract
and an infrastructure failure. It never holds the raw generation, only hashes and error codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from chatparse.answers.check import VALIDATOR_VERSION, AnswerError
from chatparse.answers.model import SCHEMA_VERSION, GroundedAnswer

ResultKind = Literal["ok", "refused", "invalid", "failed"]
RESULT_KINDS: Final[tuple[ResultKind, ...]] = ("ok", "refused", "invalid", "failed")


@dataclass(frozen=True)
class Versions:
    """Everything that changes the outcome besides the model: stamped on every result and log line."""

    prompt: str
    schema: str = SCHEMA_VERSION
    validator: str = VALIDATOR_VERSION
    dataset: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {
            "prompt_version": self.prompt,
            "schema_version": self.schema,
            "validator_version": self.validator,
            "dataset_version": self.dataset,
        }


@dataclass(frozen=True)
class TokenUsage:
    """Tokens reported for one call (zeros when the provider reported none)."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens)

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True)
class Attempt:
    """One generator call and what the checker made of it; kept for failures and successes alike."""

    number: int
    kind: ResultKind
    error_codes: tuple[str, ...] = ()
    claimed_status: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost: float = 0.0
    finish_reason: str | None = None
    failure: str | None = None
    output_sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "kind": self.kind,
            "error_codes": list(self.error_codes),
            "claimed_status": self.claimed_status,
            "usage": self.usage.to_dict(),
            "cost": self.cost,
            "finish_reason": self.finish_reason,
            "failure": self.failure,
            "output_sha256": self.output_sha256,
        }


@dataclass(frozen=True)
class AnswerResult:
    """The outcome of ``answer_question``: the last attempt decides ``kind``; all attempts are kept.

    ``answer`` is set only when ``kind == "ok"``. ``errors`` are the last attempt's contract
    errors; ``refusal`` is the model's refusal message; ``failure`` names an infrastructure fault.
    """

    kind: ResultKind
    versions: Versions
    attempts: tuple[Attempt, ...]
    answer: GroundedAnswer | None = None
    errors: tuple[AnswerError, ...] = ()
    evidence_ids: tuple[str, ...] = ()
    refusal: str | None = None
    failure: str | None = None

    @property
    def status(self) -> str | None:
        """The validated status, or None when there is no validated answer."""
        return self.answer.status if self.answer is not None else None

    @property
    def error_codes(self) -> tuple[str, ...]:
        return tuple(error.code for error in self.errors)

    @property
    def first_attempt(self) -> Attempt:
        return self.attempts[0]

    @property
    def tokens(self) -> TokenUsage:
        total = TokenUsage()
        for attempt in self.attempts:
            total = total + attempt.usage
        return total

    @property
    def cost(self) -> float:
        return sum(attempt.cost for attempt in self.attempts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            **self.versions.to_dict(),
            "answer": self.answer.model_dump() if self.answer is not None else None,
            "errors": [error.to_dict() for error in self.errors],
            "evidence_ids": list(self.evidence_ids),
            "refusal": self.refusal,
            "failure": self.failure,
            "attempts": [attempt.to_dict() for attempt in self.attempts],
            "tokens": self.tokens.to_dict(),
            "cost": self.cost,
        }


__all__ = ["RESULT_KINDS", "AnswerResult", "Attempt", "ResultKind", "TokenUsage", "Versions"]
