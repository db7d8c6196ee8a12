"""The one-shot entry point: construct a parser, feed the whole text once, finalize."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, overload

from chatparse.engine.parser import OnMalformed, ResponseParser
from chatparse.errors import ChatparseError, EngineFault, InputTypeError, PrefixRequiredError
from chatparse.limits import Limits
from chatparse.template.compile import load_template

_UNSET: Any = object()


@overload
def parse_response(text: str, template: Any, *, prefix: str = ..., tools: Iterable[Any] | None = ...,
                   on_malformed: OnMalformed = ..., limits: Limits | None = ...,
                   finish_reason: str | None = ...) -> dict[str, Any]: ...
@overload
def parse_response(text: list[str], template: Any, *, prefix: str | list[str] = ...,
                   tools: Iterable[Any] | None = ..., on_malformed: OnMalformed = ...,
                   limits: Limits | None = ..., finish_reason: str | list[str | None] | None = ...,
                   ) -> list[dict[str, Any]]: ...


def parse_response(
    text: str | list[str],
    template: Any,
    *,
    prefix: str | list[str] = _UNSET,
    tools: Iterable[Any] | None = None,
    on_malformed: OnMalformed = "raise",
    limits: Limits | None = None,
    finish_reason: str | list[str | None] | None = None,
) -> dict[str, Any] | list[dict[str, Any]]:
    """Parse a complete generation (or a list of them) into a message dict (or a list of them).

    ``prefix`` is required: the prompt the model saw (``prefix=""`` opts out). For a batch it may be one
    string for all or a list with one prefix per generation. ``limits`` sets the regex time budgets and
    the hold-back cap (``chatparse.Limits``). ``finish_reason`` is why generation stopped, when the engine
    said (one for all, or a list with one per generation): ``"length"`` (the token limit cut the text)
    makes a call whose close never came ``truncated`` even when its parameters were all closed (see
    ``ResponseParser.finalize``). Only ``ChatparseError`` subclasses are raised.
    """
    try:
        return _parse(text, template, prefix, tools, on_malformed, limits, finish_reason)
    except ChatparseError:
        raise
    except RecursionError as exc:
        raise EngineFault(f"Input nested too deeply: {exc}", code="too_deep") from exc
    except Exception as exc:
        raise EngineFault(f"Unexpected {type(exc).__name__} while parsing: {str(exc)[:200]}",
                          exception=type(exc).__name__) from exc


def _parse(text: Any, template: Any, prefix: Any, tools: Iterable[Any] | None, on_malformed: OnMalformed,
           limits: Limits | None, finish_reason: Any = None) -> dict[str, Any] | list[dict[str, Any]]:
    compiled = load_template(template)  # the template is checked before the prefix
    if prefix is _UNSET or prefix is None:
        ResponseParser(compiled, None)  # raises the PrefixRequiredError with the full explanation
    tools = list(tools) if tools is not None else None
    if isinstance(text, list | tuple) and text and all(type(t) is int for t in text):
        raise InputTypeError(_not_text(text))
    if isinstance(text, list):
        prefixes = prefix if isinstance(prefix, list) else [prefix] * len(text)
        if len(prefixes) != len(text):
            raise PrefixRequiredError(
                f"parse_response got {len(text)} generations but {len(prefixes)} prefixes; pass one prefix "
                "per generation or a single string for all", code="prefix_count_mismatch",
            )
        reasons = finish_reason if isinstance(finish_reason, list) else [finish_reason] * len(text)
        if len(reasons) != len(text):
            raise InputTypeError(f"parse_response got {len(text)} generations but {len(reasons)} finish reasons; "
                                 "pass one finish_reason per generation or a single one for all")
        return [_parse_one(t, compiled, p, tools, on_malformed, limits, r)
                for t, p, r in zip(text, prefixes, reasons, strict=True)]
    if isinstance(prefix, list):
        raise PrefixRequiredError("a list of prefixes needs a list of generations", code="prefix_count_mismatch")
    if isinstance(finish_reason, list):
        raise InputTypeError("a list of finish reasons needs a list of generations")
    return _parse_one(text, compiled, prefix, tools, on_malformed, limits, finish_reason)


def _parse_one(text: str, template: Any, prefix: str, tools: Any, on_malformed: OnMalformed,
               limits: Limits | None, finish_reason: str | None = None) -> dict[str, Any]:
    if not isinstance(text, str):
        raise InputTypeError(_not_text(text))
    parser = ResponseParser(template, prefix, tools=tools, on_malformed=on_malformed, limits=limits)
    parser._keep_events = False  # the message is all we return
    parser.feed(text)
    message, _ = parser.finalize(finish_reason=finish_reason)
    return message


def _not_text(value: Any) -> str:
    """The advice for a generation that is not text: decode bytes, detokenize token ids."""
    found = type(value).__name__
    if isinstance(value, bytes | bytearray | memoryview):
        return (f"parse_response takes the generated text as str, found {found}: decode it first "
                "(data.decode('utf-8')); to parse bytes as they stream in, use ResponseParser(...).feed_bytes()")
    if (isinstance(value, list | tuple) and all(type(v) is int for v in value)) or hasattr(value, "tolist"):
        return ("parse_response takes the generated text as str, found token ids (a list of int): detokenize "
                "them first (tokenizer.decode(ids, skip_special_tokens=False)), or pass the ids to "
                "chatparse.integrations.transformers.parse_response(ids, tokenizer=tokenizer, prefix=...)")
    return f"parse_response takes the generated text as str (or a list of str for a batch), found {found}"
