"""chatparse.finish: the one finish-reason vocabulary every entry point reads."""

from __future__ import annotations

import pytest

from chatparse import ChatparseError
from chatparse.finish import (
    INTERRUPTED_REASONS,
    KNOWN_REASONS,
    LIMIT_REASONS,
    STOP_REASONS,
    UnknownFinishReasonError,
    cut_by_limit,
    finish_kind,
)

# What engines and APIs write, as they write it.
AS_WRITTEN = {
    "length": "limit",  # OpenAI, vLLM, SGLang, TGI, transformers serve, Ollama
    "max_tokens": "limit",  # Anthropic, Bedrock
    "MAX_TOKENS": "limit",  # Gemini, Cohere
    "max_output_tokens": "limit",  # OpenAI Responses (incomplete_details.reason)
    "model_length": "limit",  # Mistral
    "limit": "limit",  # llama.cpp stop_type
    "stop": "stop",
    "STOP": "stop",
    "tool_calls": "stop",
    "end_turn": "stop",
    "tool_use": "stop",
    "stop_sequence": "stop",
    "eos": "stop",
    "eos_token": "stop",
    "COMPLETE": "stop",
    "content_filter": "interrupted",
    "abort": "interrupted",
    "SAFETY": "interrupted",
    "RECITATION": "interrupted",
}


@pytest.mark.parametrize(("reason", "kind"), AS_WRITTEN.items())
def test_engine_values_have_their_meaning(reason: str, kind: str) -> None:
    assert finish_kind(reason) == kind
    assert cut_by_limit(reason) is (kind == "limit")


def test_the_kinds_are_disjoint_and_lower_case() -> None:
    assert not (LIMIT_REASONS & STOP_REASONS or LIMIT_REASONS & INTERRUPTED_REASONS or STOP_REASONS & INTERRUPTED_REASONS)
    assert all(reason == reason.lower().strip() for reason in KNOWN_REASONS)
    assert {"length", "max_tokens", "max_output_tokens"} <= LIMIT_REASONS


def test_none_is_not_known_and_not_a_cut() -> None:
    assert finish_kind(None) is None and cut_by_limit(None) is False


@pytest.mark.parametrize("reason", ["lenght", "", "truncated", 3])
def test_an_unknown_reason_is_named_with_the_accepted_ones(reason: object) -> None:
    with pytest.raises(UnknownFinishReasonError) as caught:
        finish_kind(reason)
    error = caught.value
    assert isinstance(error, ChatparseError) and isinstance(error, ValueError)
    assert error.code == "unknown_finish_reason" and error.details["value"] == reason
    assert repr(reason) in str(error) and "'max_tokens'" in str(error) and "'end_turn'" in str(error)


def test_the_unknown_finish_reason_error_is_public() -> None:
    import chatparse

    with pytest.raises(chatparse.UnknownFinishReasonError) as caught:
        chatparse.parse_response("Hi.", "qwen3", prefix="", finish_reason="lenght")
    assert caught.value.code == "unknown_finish_reason" and "lenght" in str(caught.value)
    assert "UnknownFinishReasonError" in chatparse.__all__
