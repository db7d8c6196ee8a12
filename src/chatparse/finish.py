"""The one finish-reason vocabulary: what each engine's ``finish_reason`` says about the end of the text.

Every entry point that takes a finish reason (``parse_response``, ``ResponseParser.finalize``, the OpenAI
layer, ``ArgumentStream``, batch rows and Arrow tables, the CLI) reads it here, so ``"MAX_TOKENS"`` means
the same everywhere and an unknown value is an error, never a silent "not cut".
"""

from __future__ import annotations

from typing import Literal

from chatparse.errors import ChatparseError

FinishKind = Literal["limit", "stop", "interrupted"]

# Matched case-insensitively. Sources: OpenAI Chat Completions (stop, length, tool_calls, content_filter,
# function_call) and Responses (max_output_tokens); Anthropic and Bedrock (end_turn, max_tokens,
# stop_sequence, tool_use, pause_turn, refusal, model_context_window_exceeded, guardrail_intervened,
# content_filtered); Gemini (STOP, MAX_TOKENS, SAFETY, RECITATION, ..., FINISH_REASON_UNSPECIFIED); vLLM and
# SGLang (stop, length, abort, error, tool_calls); llama.cpp's stop_type (eos, word, limit, none); TGI
# (eos_token, stop_sequence, length); Mistral (model_length, error); Cohere (COMPLETE, MAX_TOKENS,
# STOP_SEQUENCE, TOOL_CALL, ERROR); Ollama's done_reason (stop, length, load, unload); DeepSeek
# (insufficient_system_resource); transformers' ``serve`` (stop, length, tool_calls).
#: The token limit (or the context window) cut the text: whatever was open when it ended was cut.
LIMIT_REASONS = frozenset({
    "length", "max_tokens", "max_output_tokens", "max_new_tokens", "model_length",
    "model_context_window_exceeded", "limit",
})
#: The model ended its turn (or the engine stopped it at a stop string or token): nothing was cut.
STOP_REASONS = frozenset({
    "stop", "eos", "eos_token", "end_turn", "stop_sequence", "word", "tool_calls", "tool_call", "tool_use",
    "function_call", "complete", "pause_turn", "none", "finish_reason_unspecified", "load", "unload",
})
#: Something other than the model or the token limit stopped the text (a filter, an abort, an error). The
#: text ends where it ends: the parser keeps the text-only rule, an argument stream reports what was open
#: as cut.
INTERRUPTED_REASONS = frozenset({
    "content_filter", "content_filtered", "abort", "error", "refusal", "guardrail_intervened", "safety",
    "recitation", "language", "blocklist", "prohibited_content", "spii", "malformed_function_call",
    "unexpected_tool_call", "too_many_tool_calls", "image_safety", "image_prohibited_content",
    "image_recitation", "image_other", "no_image", "other", "timeout", "cancelled",
    "insufficient_system_resource",
})
KNOWN_REASONS = LIMIT_REASONS | STOP_REASONS | INTERRUPTED_REASONS


class UnknownFinishReasonError(ChatparseError, ValueError):
    """A ``finish_reason`` that is none of the known values (``KNOWN_REASONS``, any letter case)."""

    code = "unknown_finish_reason"


def finish_kind(finish_reason: object, *, where: str = "finish_reason") -> FinishKind | None:
    """What ``finish_reason`` says: ``"limit"`` (the token limit cut the text), ``"stop"`` (the turn
    ended), ``"interrupted"`` (a filter, abort or error stopped it), or None when it is None (not known).
    An unknown value raises ``UnknownFinishReasonError``; ``where`` names the argument in its message."""
    if finish_reason is None:
        return None
    key = finish_reason.strip().lower() if isinstance(finish_reason, str) else None
    if key in LIMIT_REASONS:
        return "limit"
    if key in STOP_REASONS:
        return "stop"
    if key in INTERRUPTED_REASONS:
        return "interrupted"
    raise UnknownFinishReasonError(
        f"Unknown {where} {finish_reason!r}: expected a finish reason an engine reports (any letter case), "
        f"cut by the token limit {sorted(LIMIT_REASONS)}, ended {sorted(STOP_REASONS)}, or stopped otherwise "
        f"{sorted(INTERRUPTED_REASONS)}. Pass the engine's value as it is, or None when it gave none.",
        value=finish_reason,
    )


def cut_by_limit(finish_reason: object, *, where: str = "finish_reason") -> bool:
    """Whether ``finish_reason`` says the token limit cut the text (``length``, ``max_tokens``,
    ``MAX_TOKENS``, ...). Unknown values raise ``UnknownFinishReasonError``."""
    return finish_kind(finish_reason, where=where) == "limit"
