"""``answer_question``: scope filter → budgeted block selection → one request → checked result.

Evidence for the citation check is built only from the blocks selected into this request; a
token-count failure raises before any generation; retries happen only under an explicit policy.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Final

from chatparse.answers.check import AnswerError, check_answer
from chatparse.answers.generators import Generation, GenerationRequest, Generator
from chatparse.answers.model import SCHEMA_NAME, GroundedAnswer, generation_schema
from chatparse.answers.prompts import DocumentView, PromptVersion, Turn, get_prompt, render_input
from chatparse.answers.result import AnswerResult, Attempt, ResultKind, Versions
from chatparse.errors import ChatparseError, UsageError

DEFAULT_MAX_OUTPUT_TOKENS: Final = 1024

TokenCounter = Callable[[GenerationRequest], int]
"""Counts the whole request (instructions, input and schema), exactly as it will be sent."""


@dataclass(frozen=True)
class Block:
    """A retrieved document block. ``readers`` are the scopes allowed to read it (none: nobody)."""

    source_id: str
    text: str
    title: str = ""
    readers: frozenset[str] = frozenset()


class TokenCountError(ChatparseError, RuntimeError):
    """The token counter failed; raised before generation so the service can report it."""

    code = "token_count_failed"


class BudgetError(ChatparseError, ValueError):
    """The request does not fit the budget even without any document block."""

    code = "budget_too_small"


@dataclass(frozen=True)
class RetryPolicy:
    """Optional bounded regeneration; the default is one attempt. Limits are checked before each call."""

    max_attempts: int = 1
    retry_on: frozenset[ResultKind] = frozenset({"invalid"})
    max_total_tokens: int | None = None
    max_total_cost: float | None = None

    def allows_another(self, attempts: Sequence[Attempt]) -> bool:
        if len(attempts) >= self.max_attempts or attempts[-1].kind not in self.retry_on:
            return False
        tokens = sum(attempt.usage.total for attempt in attempts)
        cost = sum(attempt.cost for attempt in attempts)
        within_tokens = self.max_total_tokens is None or tokens < self.max_total_tokens
        within_cost = self.max_total_cost is None or cost < self.max_total_cost
        return within_tokens and within_cost


NO_RETRY: Final = RetryPolicy()


def approximate_counter(request: GenerationRequest) -> int:
    """A tokenizer-free estimate: one token per 3 UTF-8 bytes of the counted text (rounded up).

    Roughly one token per Hangul syllable. Use ``tokenizer_counter`` when the real tokenizer is known.
    """
    return math.ceil(len(request.counted_text().encode("utf-8")) / 3)


def tokenizer_counter(encode: Callable[[str], Sequence[int]]) -> TokenCounter:
    """Wrap a tokenizer's ``encode`` into a counter over the whole request text."""

    def count(request: GenerationRequest) -> int:
        return len(encode(request.counted_text()))

    return count


def readable_blocks(blocks: Sequence[Block], user_scope: Collection[str]) -> tuple[Block, ...]:
    """Blocks the user may read, in the given (retrieval) order; unique ``source_id`` required."""
    _require_unique_ids(blocks)
    scope = frozenset(user_scope)
    return tuple(block for block in blocks if block.readers & scope)


def select_blocks(
    blocks: Sequence[Block],
    build: Callable[[Sequence[Block]], GenerationRequest],
    counter: TokenCounter,
    budget: int,
) -> tuple[Block, ...]:
    """Greedy in rank order: keep each block whose addition keeps the whole request within ``budget``."""
    if _count(counter, build(())) > budget:
        raise BudgetError(f"expected the request without documents to fit {budget} tokens, found it larger")
    selected: list[Block] = []
    for block in blocks:
        if _count(counter, build([*selected, block])) <= budget:
            selected.append(block)
    return tuple(selected)


def answer_question(
    question: str,
    candidate_blocks: Sequence[Block],
    *,
    user_scope: Collection[str],
    generator: Generator,
    counter: TokenCounter,
    budget: int,
    prompt: str | PromptVersion,
    history: Sequence[Turn] | None = None,
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
    retry: RetryPolicy = NO_RETRY,
    dataset_version: str | None = None,
    request_id: str | None = None,
) -> AnswerResult:
    """Answer one question from the blocks this user may read and that fit ``budget`` input tokens."""
    version = get_prompt(prompt)
    turns = tuple(history or ())

    def build(blocks: Sequence[Block]) -> GenerationRequest:
        return build_request(version, question, blocks, turns, max_output_tokens, request_id)

    selected = select_blocks(readable_blocks(candidate_blocks, user_scope), build, counter, budget)
    evidence = {block.source_id: block.text for block in selected}
    request = build(selected)
    versions = Versions(prompt=version.version, dataset=dataset_version)
    return _run(generator, request, evidence, retry, versions)


def build_request(
    prompt: PromptVersion,
    question: str,
    blocks: Sequence[Block],
    history: Sequence[Turn],
    max_output_tokens: int,
    request_id: str | None = None,
) -> GenerationRequest:
    """The request for these blocks: instructions apart, documents serialized as data."""
    documents = [DocumentView(block.source_id, block.title, block.text) for block in blocks]
    return GenerationRequest(
        instructions=prompt.instructions,
        input=render_input(question, documents, history),
        schema=generation_schema(),
        schema_name=SCHEMA_NAME,
        max_output_tokens=max_output_tokens,
        prompt_version=prompt.version,
        request_id=request_id,
    )


def _count(counter: TokenCounter, request: GenerationRequest) -> int:
    try:
        tokens = counter(request)
    except Exception as exc:
        raise TokenCountError(
            f"expected the token counter to return a count, found {type(exc).__name__}"
        ) from exc
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
        raise TokenCountError(
            f"expected a non-negative int from the token counter, found {type(tokens).__name__}"
        )
    return tokens


def _require_unique_ids(blocks: Sequence[Block]) -> None:
    seen: set[str] = set()
    for block in blocks:
        if block.source_id in seen:
            raise UsageError(
                f"expected unique source_id values, found {block.source_id!r} twice in candidate_blocks",
                code="duplicate_source_id",
                key=block.source_id,
            )
        seen.add(block.source_id)


@dataclass(frozen=True)
class _Judged:
    """One attempt and what the final result would carry if it were the last."""

    attempt: Attempt
    answer: GroundedAnswer | None = None
    errors: tuple[AnswerError, ...] = ()
    refusal: str | None = None


def _run(
    generator: Generator,
    request: GenerationRequest,
    evidence: dict[str, str],
    retry: RetryPolicy,
    versions: Versions,
) -> AnswerResult:
    attempts: list[Attempt] = []
    while True:
        judged = _judge(generator.generate(request), evidence, len(attempts) + 1)
        attempts.append(judged.attempt)
        if not retry.allows_another(attempts):
            return AnswerResult(
                kind=judged.attempt.kind,
                versions=versions,
                attempts=tuple(attempts),
                answer=judged.answer,
                errors=judged.errors,
                evidence_ids=tuple(evidence),
                refusal=judged.refusal,
                failure=judged.attempt.failure,
            )


def _judge(generation: Generation, evidence: dict[str, str], number: int) -> _Judged:
    """The checker runs only on ``ok`` generations: a refusal or an outage is not a JSON error."""
    if generation.kind == "refused":
        return _Judged(_attempt(generation, number, "refused"), refusal=generation.refusal)
    if generation.kind == "failed":
        return _Judged(_attempt(generation, number, "failed"))
    if generation.kind == "truncated":
        error = AnswerError(
            "truncated", "expected a complete output, found one cut at the output token limit"
        )
        return _Judged(_attempt(generation, number, "invalid", (error.code,)), errors=(error,))
    check = check_answer(generation.text or "", evidence)
    kind: ResultKind = "ok" if check.ok else "invalid"
    attempt = _attempt(generation, number, kind, check.codes, check.claimed_status)
    return _Judged(attempt, answer=check.answer, errors=check.errors)


def _attempt(
    generation: Generation,
    number: int,
    kind: ResultKind,
    error_codes: tuple[str, ...] = (),
    claimed_status: str | None = None,
) -> Attempt:
    return Attempt(
        number=number,
        kind=kind,
        error_codes=error_codes,
        claimed_status=claimed_status,
        usage=generation.usage,
        cost=generation.cost,
        finish_reason=generation.finish_reason,
        failure=generation.failure if kind == "failed" else None,
        output_sha256=_sha256(generation.text),
    )


def _sha256(text: str | None) -> str | None:
    if text is None:
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


__all__ = [
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "NO_RETRY",
    "Block",
    "BudgetError",
    "RetryPolicy",
    "TokenCountError",
    "TokenCounter",
    "answer_question",
    "approximate_counter",
    "build_request",
    "readable_blocks",
    "select_blocks",
    "tokenizer_counter",
]
