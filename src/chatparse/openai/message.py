"""The OpenAI message shape: a parsed message as a Chat Completions ``message`` / whole completion
(``to_chat_message``, ``to_chat_completion``), its ``finish_reason``, and JSON text for arguments."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from chatparse.errors import InputTypeError
from chatparse.finish import finish_kind
from chatparse.openai.ids import IdFactory, default_call_id

Chunk = dict[str, Any]
# ``json.dumps(value, ensure_ascii=False)`` builds this encoder on every call; one is enough.
_ENCODER = json.JSONEncoder(ensure_ascii=False)
_encode_string: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]
# ``_ENCODER.encode`` builds the C encoder on every call; this one is built once (no cycle check: a cycle
# overflows the stack, and ``_encode`` asks the standard path which error it is). None without the C module.
_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_encode_c = None if _make_encoder is None else _make_encoder(
    None, _ENCODER.default, _encode_string, None, ": ", ", ", False, False, True)


def _encode(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``: the same text, the same errors."""
    if type(value) is str:
        return _encode_string(value)
    if _encode_c is not None:
        try:
            return "".join(_encode_c(value, 0))
        except RecursionError:
            pass  # a cycle, or nesting too deep: the standard encoder raises the error that says which
    return _ENCODER.encode(value)


REASONING_FIELDS = ("thinking", "reasoning_content", "reasoning")
CONTENT_FIELD = "content"
TOOLS_FIELD = "tool_calls"


def arguments_json(arguments: Any, where: str = "arguments") -> str:
    """The wire form of typed arguments: ``json.dumps`` with ``ensure_ascii=False`` (as vLLM)."""
    if isinstance(arguments, str):
        return arguments  # already a string (e.g. an untyped template): passed through unchanged
    return _json_text({} if arguments is None else arguments, where)


def _json_text(value: Any, where: str) -> str:
    """``value`` as JSON text; a value JSON cannot hold (a set, bytes, a cycle, an integer past the
    4,300-digit limit) is an ``InputTypeError`` naming ``where``. ``NaN``/``Infinity`` are written as
    Python's ``json`` (and vLLM) write them: the JSON readers of the content parsers accept them from the
    model, as transformers' do, so a parse can hold them."""
    try:
        return _encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
        raise InputTypeError(
            f"Expected a JSON value at {where}, found a {type(value).__name__} JSON cannot hold ({reason}). Convert "
            "the message's values to str, int, float, bool, None, list and dict first.",
            code="not_json", path=where,
        ) from None


def finish_reason(message: Mapping[str, Any], reason: str | None = "stop") -> str:
    """The wire's finish reason for a message that ended for ``reason`` (the engine's, in the vocabulary of
    ``chatparse.finish``, any case): ``length`` for a token-limit reason (``max_tokens``, ...); else
    ``tool_calls`` when the message made calls; else ``stop`` for an ended turn (``end_turn``, ``eos``, ...)
    or the reason itself for another stop (``content_filter``, ``abort``). An unknown reason raises
    ``UnknownFinishReasonError``."""
    return _finish(bool(message.get("tool_calls")), reason)


def to_chat_message(
    message: Mapping[str, Any],
    *,
    reasoning_key: str = "reasoning_content",
    id_factory: IdFactory | None = None,
) -> dict[str, Any]:
    """A parsed message as a Chat Completions assistant message.

    ``content`` is None when absent; ``thinking`` goes under ``reasoning_key``; each tool call gets
    ``id_factory(index)`` (a random ``call_…`` id by default) and its arguments as a JSON string.
    """
    if not isinstance(message, Mapping):
        raise InputTypeError(f"Expected a parsed message (a dict), found {type(message).__name__}. Pass the dict "
                             "parse_response or ResponseParser.finalize returns.")
    make_id = id_factory or default_call_id
    out: dict[str, Any] = {"role": "assistant", "content": _text_or_none(message.get(CONTENT_FIELD), CONTENT_FIELD)}
    reasoning_field = next((k for k in REASONING_FIELDS if message.get(k) is not None), None)
    if reasoning_field is not None:
        out[reasoning_key] = _text_or_none(message[reasoning_field], reasoning_field)
    calls = [_wire_call(call, i, make_id) for i, call in enumerate(_call_list(message.get(TOOLS_FIELD)))]
    if calls:
        out["tool_calls"] = calls
    return out


def to_chat_completion(
    message: Mapping[str, Any],
    *,
    model: str,
    finish_reason: str | None = "stop",
    created: int | None = None,
    id: str | None = None,
    reasoning_key: str = "reasoning_content",
    id_factory: IdFactory | None = None,
) -> dict[str, Any]:
    """The full ``chat.completion`` object for one parsed message (one choice)."""
    wire = to_chat_message(message, reasoning_key=reasoning_key, id_factory=id_factory)
    return {
        "id": id or "chatcmpl-" + uuid.uuid4().hex,
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": wire,
            "finish_reason": _finish(bool(wire.get("tool_calls")), finish_reason),
            "logprobs": None,
        }],
    }


def _call_list(value: Any) -> list[Any]:
    """The message's tool calls as a list of call objects (a lone call object is one call)."""
    if isinstance(value, Mapping):
        return [value]
    return [call for call in value if isinstance(call, Mapping)] if isinstance(value, list) else []


def _finish(made_calls: bool, reason: str | None) -> str:
    kind = finish_kind(reason)
    if kind == "limit":
        return "length"
    if made_calls:
        return "tool_calls"
    return str(reason).strip().lower() if kind == "interrupted" else "stop"


def _text_or_none(value: Any, where: str) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else _json_text(value, where)


def _call_name(fn: Mapping[str, Any], where: str) -> str:
    """A call's name on the wire: the string, or the JSON text of another value ("" for none)."""
    name = fn.get("name")
    return "" if name is None else name if isinstance(name, str) else _json_text(name, where)


def _wire_call(call: Any, index: int, make_id: IdFactory) -> dict[str, Any]:
    fn = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(fn, Mapping):
        fn = {}  # not a call object (a template whose transform builds something else): an empty call
    where = f"tool_calls[{index}].function"
    return {
        "id": make_id(index),
        "type": "function",
        "function": {"name": _call_name(fn, f"{where}.name"),
                     "arguments": arguments_json(fn.get("arguments"), f"{where}.arguments")},
    }
