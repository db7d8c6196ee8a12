"""Generators turn one ``GenerationRequest`` into one ``Generation``; they never validate or retry.

``OpenAIGenerator`` calls an OpenAI-compatible server with the strict structured-output schema
and recognises refusals; ``ReplayGenerator`` returns recorded outputs, for offline evaluation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from chatparse.answers.result import TokenUsage
from chatparse.errors import ChatparseError, UsageError

GenerationKind = Literal["ok", "refused", "truncated", "failed"]
_GENERATION_KINDS: Final = ("ok", "refused", "truncated", "failed")


@dataclass(frozen=True)
class GenerationRequest:
    """Exactly what is sent: instructions apart from the input data, the schema and the output cap.

    ``request_id`` and ``prompt_version`` are bookkeeping and are not sent to the model.
    """

    instructions: str
    input: str
    schema: Mapping[str, Any]
    schema_name: str
    max_output_tokens: int
    prompt_version: str
    request_id: str | None = None

    def messages(self) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.instructions},
            {"role": "user", "content": self.input},
        ]

    def response_format(self) -> dict[str, Any]:
        """The Chat Completions ``response_format`` for strict structured outputs."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.schema_name, "strict": True, "schema": dict(self.schema)},
        }

    def counted_text(self) -> str:
        """Messages plus schema as one string: what a token counter must measure."""
        payload = {"messages": self.messages(), "response_format": self.response_format()}
        return json.dumps(payload, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True)
class Generation:
    """One raw generator outcome. ``text`` is only for the checker; results keep a hash of it."""

    kind: GenerationKind
    text: str | None = None
    refusal: str | None = None
    failure: str | None = None
    finish_reason: str | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost: float = 0.0


class Generator(Protocol):
    """Anything that can answer a request; infrastructure faults come back as ``kind="failed"``."""

    @property
    def model(self) -> str: ...

    def generate(self, request: GenerationRequest) -> Generation: ...


@dataclass(frozen=True)
class Pricing:
    """Price per million tokens, used to stamp a cost on each attempt."""

    input_per_million: float = 0.0
    output_per_million: float = 0.0

    def cost(self, usage: TokenUsage) -> float:
        return (
            usage.input_tokens * self.input_per_million + usage.output_tokens * self.output_per_million
        ) / 1e6


class RecordingError(ChatparseError, ValueError):
    """A recording file is malformed (the recorder's fault, not the model's)."""

    code = "invalid_recording"


def by_request_id(request: GenerationRequest) -> str:
    """Default replay key: the request's ``request_id`` (e.g. a question id)."""
    return request.request_id or ""


class ReplayGenerator:
    """Replays recorded generations by key; attempt ``n`` of a key gets its ``n``-th recording.

    A missing recording is a ``failed`` generation (``failure="no_recording"``), never an answer.
    """

    def __init__(
        self,
        recordings: Mapping[str, Sequence[Generation]],
        *,
        model: str = "replay",
        key: Callable[[GenerationRequest], str] = by_request_id,
    ) -> None:
        self._recordings = {name: tuple(items) for name, items in recordings.items()}
        self._model = model
        self._key = key
        self._served: dict[str, int] = {}

    @property
    def model(self) -> str:
        return self._model

    def generate(self, request: GenerationRequest) -> Generation:
        name = self._key(request)
        items = self._recordings.get(name, ())
        if not items:
            return Generation(kind="failed", failure="no_recording")
        index = self._served.get(name, 0)
        self._served[name] = index + 1
        return items[min(index, len(items) - 1)]

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], *, model: str = "replay") -> ReplayGenerator:
        """Build from dicts ``{"key", "kind", "text"?, "refusal"?, "failure"?, "finish_reason"?, "usage"?, "cost"?}``."""
        recordings: dict[str, list[Generation]] = {}
        for number, record in enumerate(records, start=1):
            recordings.setdefault(_record_key(record, number), []).append(
                generation_from_record(record, number)
            )
        return cls(recordings, model=model)


def _record_key(record: Mapping[str, Any], number: int) -> str:
    key = record.get("key")
    if not isinstance(key, str):
        raise RecordingError(
            f"expected a string 'key', found {type(key).__name__} in record {number}", key="key"
        )
    return key


def generation_from_record(record: Mapping[str, Any], number: int = 0) -> Generation:
    """One recorded generation; unknown kinds and non-string texts are rejected, not guessed."""
    kind = record.get("kind")
    if kind not in _GENERATION_KINDS:
        raise RecordingError(
            f"expected kind in {_GENERATION_KINDS}, found {kind!r} in record {number}", key="kind"
        )
    text = record.get("text")
    if kind == "ok" and not isinstance(text, str):
        raise RecordingError(
            f"expected a string 'text' for kind 'ok', found {type(text).__name__} in record {number}"
        )
    usage = record.get("usage") or {}
    return Generation(
        kind=kind,
        text=text if isinstance(text, str) else None,
        refusal=record.get("refusal"),
        failure=record.get("failure"),
        finish_reason=record.get("finish_reason"),
        usage=TokenUsage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
        cost=float(record.get("cost", 0.0)),
    )


class OpenAIGenerator:
    """Chat Completions with ``response_format`` strict JSON Schema, via the official client.

    The client's own transport retries default to 0 here: every call is an attempt the pipeline
    records. Requires the optional extra ``openai`` (from a checkout: ``pip install '.[openai]'``).
    """

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        pricing: Pricing | None = None,
        temperature: float | None = 0.0,
        seed: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 0,
    ) -> None:
        self._model = model
        self._client = client if client is not None else _make_client(base_url, api_key, timeout, max_retries)
        self._pricing = pricing or Pricing()
        self._temperature = temperature
        self._seed = seed

    @property
    def model(self) -> str:
        return self._model

    def generate(self, request: GenerationRequest) -> Generation:
        import openai

        options: dict[str, Any] = {}
        if self._temperature is not None:
            options["temperature"] = self._temperature
        if self._seed is not None:
            options["seed"] = self._seed
        try:
            completion = self._client.chat.completions.create(
                model=self._model,
                messages=request.messages(),
                response_format=request.response_format(),
                max_completion_tokens=request.max_output_tokens,
                **options,
            )
        except openai.APIError as exc:
            return Generation(kind="failed", failure=_failure_code(exc))
        return self._interpret(completion)

    def _interpret(self, completion: Any) -> Generation:
        usage = _usage(completion)
        cost = self._pricing.cost(usage)
        if not completion.choices:
            return Generation(kind="failed", failure="empty_response", usage=usage, cost=cost)
        choice = completion.choices[0]
        message, finish = choice.message, choice.finish_reason
        common: dict[str, Any] = {"finish_reason": finish, "usage": usage, "cost": cost}
        if getattr(message, "refusal", None) or finish == "content_filter":
            return Generation(kind="refused", refusal=getattr(message, "refusal", None), **common)
        if finish == "length":
            return Generation(kind="truncated", **common)
        if not isinstance(message.content, str):
            return Generation(kind="failed", failure="empty_content", **common)
        return Generation(kind="ok", text=message.content, **common)


def _make_client(base_url: str | None, api_key: str | None, timeout: float, max_retries: int) -> Any:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ChatparseError(
            "expected the 'openai' package, found it missing. Install the 'openai' extra (from a chatparse "
            "checkout: pip install '.[openai]'), or pip install openai.",
            code="missing_dependency",
        ) from exc
    try:
        return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries)
    except openai.OpenAIError as exc:  # no key given and none in the environment
        raise UsageError(
            f"expected an API key for the OpenAI-compatible API, found none ({exc}). Set OPENAI_API_KEY, or pass "
            "api_key= (the CLI's --api-key); a local server that checks no key takes any value, e.g. 'none'.",
            code="missing_api_key",
        ) from None


def _failure_code(exc: Exception) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection_error"
    if isinstance(exc, openai.APIStatusError):
        return f"http_{exc.status_code}"
    return "api_error"


def _usage(completion: Any) -> TokenUsage:
    usage = getattr(completion, "usage", None)
    if usage is None:
        return TokenUsage()
    return TokenUsage(int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))


__all__ = [
    "Generation",
    "GenerationKind",
    "GenerationRequest",
    "Generator",
    "OpenAIGenerator",
    "Pricing",
    "RecordingError",
    "ReplayGenerator",
    "by_request_id",
    "generation_from_record",
]
