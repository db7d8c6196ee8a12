"""transformers tokenizers: parse token ids as ``tokenizer.parse_response`` does (decoded with special tokens
kept, then parsed), stream them a few at a time (``TokenResponseParser``), take templates from tokenizers,
and check that a tokenizer can produce what a template expects.

Any object with transformers' tokenizer methods works; transformers itself is never imported here.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterable
from typing import Any

import regex

from chatparse.engine.api import parse_response as parse_text
from chatparse.engine.parser import Event, OnMalformed, ResponseParser
from chatparse.errors import ChatparseError, PrefixRequiredError, UsageError, excerpt
from chatparse.integrations.detokenize import (
    IncrementalDetokenizer,
    TokenInputError,
    decode_ids,
    sequence_ids,
    sequences_ids,
)
from chatparse.integrations.tokenizer_config import (
    CONFIG_NAME,
    chat_template_text,
    detect_directory,
    missing_template_error,
    model_type,
    read_response_template,
)
from chatparse.limits import Limits
from chatparse.template.compile import CompiledTemplate, Delimiter, load_template

_UNSET: Any = object()

# Delimiter text written the way tokenizers write special tokens: <|im_end|>, <｜Assistant｜>, <|turn>,
# <turn|>, [TOOL_CALLS], [/INST]. A model emits these as single tokens, so its tokenizer must have them.
SPECIAL_MARKER = regex.compile(r"<\|[^\s<>|]+\|>|<｜[^｜<>]+｜>|<\|[A-Za-z_]+>|<[A-Za-z_]+\|>|\[/?[A-Z][A-Z_]*\]")
# The conversation rendered to see the generation prompt a chat template writes.
PROBE_MESSAGES = [{"role": "user", "content": "Hi"}]


class TokenizerMismatchError(ChatparseError, ValueError):
    """The tokenizer cannot go with the template: it lacks the template's special tokens
    (``missing_special_tokens``) or its chat template opens the assistant turn differently
    (``chat_template_mismatch``)."""

    code = "tokenizer_mismatch"


# --- templates from tokenizers ----------------------------------------------------------------------


def response_template(source: Any) -> dict[str, Any]:
    """The response template stored with a tokenizer: its ``response_template`` attribute, or the
    ``response_template`` key of a tokenizer_config.json or a model directory. Raises
    ``MissingResponseTemplateError`` (code ``no_response_template``) with the fix when there is none."""
    if isinstance(source, str | os.PathLike):
        return read_response_template(source)
    template = getattr(source, "response_template", None)
    if template is None:
        name = getattr(source, "name_or_path", "") or type(source).__name__
        raise missing_template_error(f"the tokenizer {name!r} has no response_template", detect_template(source),
                                     str(name))
    return dict(template)


def detect_template(source: Any) -> str | None:
    """The built-in template that fits a tokenizer (from its chat template, its ``name_or_path`` and, for a
    local directory, its config.json's ``model_type``) or a model directory; None when nothing fits."""
    from chatparse.templates import detect_template as detect

    if isinstance(source, str | os.PathLike):
        return detect_directory(source)
    name = getattr(source, "name_or_path", None) or None
    return detect(model_id=name, model_type=model_type(name) if name and os.path.isdir(name) else None,
                  chat_template=chat_template_text(getattr(source, "chat_template", None)))


def _template(tokenizer: Any, template: Any) -> CompiledTemplate:
    """The template given, else the tokenizer's; a model directory or a tokenizer_config.json given as the
    template is read for its ``response_template`` (with the clear error when it has none)."""
    if template is None:
        template = response_template(tokenizer)
    elif isinstance(template, str | os.PathLike) and _is_tokenizer_path(template):
        template = read_response_template(template)
    return load_template(template)


def _is_tokenizer_path(value: str | os.PathLike[str]) -> bool:
    path = os.fspath(value)
    if isinstance(value, str) and value.lstrip().startswith("{"):
        return False  # JSON text
    return os.path.isdir(path) or os.path.basename(path) == CONFIG_NAME


# --- does the tokenizer fit the template? -----------------------------------------------------------


def special_markers(text: str) -> list[str]:
    """The special-token-like pieces of a delimiter text (``<|im_start|>`` in ``<|im_start|>assistant\\n``)."""
    return list(SPECIAL_MARKER.findall(text))


def _alternatives(delimiter: Delimiter) -> tuple[str, ...]:
    """The texts a delimiter can be written as: its literals, or the literals every regex match contains."""
    if delimiter.literals is not None:
        return delimiter.literals
    return delimiter.info.anchors or ()


def _delimiters(template: CompiledTemplate) -> list[tuple[str, tuple[str, ...]]]:
    """(where, alternatives) of every delimiter the model must be able to write."""
    out = [(template.start_anchor.key, _alternatives(template.start_anchor))]
    for field in template.fields.values():
        for delimiter in (field.open, field.close):
            if delimiter is not None:
                out.append((f"fields.{field.name}.{delimiter.key}", _alternatives(delimiter)))
    if template.end is not None:
        out.append(("chatparse.end", _alternatives(template.end)))
    return out


def _is_one_token(tokenizer: Any, marker: str) -> bool:
    token_id = tokenizer.convert_tokens_to_ids(marker)
    if isinstance(token_id, int) and token_id != getattr(tokenizer, "unk_token_id", None):
        if tokenizer.decode([token_id]) == marker:
            return True
    ids = tokenizer.encode(marker, add_special_tokens=False)
    return len(ids) == 1 and tokenizer.decode(ids) == marker


def _missing_markers(tokenizer: Any, template: CompiledTemplate) -> list[tuple[str, list[str]]]:
    """Delimiters none of whose alternatives the tokenizer can write with its own special tokens."""
    known: dict[str, bool] = {}

    def present(marker: str) -> bool:
        if marker not in known:
            known[marker] = _is_one_token(tokenizer, marker)
        return known[marker]

    missing = []
    for where, alternatives in _delimiters(template):
        marked = [special_markers(text) for text in alternatives]
        if not marked or any(all(present(m) for m in markers) for markers in marked):
            continue
        absent = sorted({m for markers in marked for m in markers if not present(m)})
        missing.append((where, absent))
    return missing


def _anchor_text(template: CompiledTemplate) -> str:
    anchor = template.start_anchor
    if anchor.literals is not None:
        return " or ".join(repr(lit) for lit in anchor.literals)
    return f"the pattern {anchor.pattern.pattern!r}"


def _chat_template_conflict(tokenizer: Any, template: CompiledTemplate) -> str | None:
    """How the tokenizer's chat template contradicts the template's start anchor, or None. The generation
    prompt it renders must contain the anchor; a template that cannot be rendered is read for the
    anchor's special tokens instead."""
    chat = chat_template_text(getattr(tokenizer, "chat_template", None))
    if not chat:
        return None
    try:
        rendered = tokenizer.apply_chat_template(PROBE_MESSAGES, add_generation_prompt=True, tokenize=False)
    except Exception:  # templates may insist on tools, a system turn, ...: fall back to reading the source
        rendered = None
    if isinstance(rendered, str):
        if template.start_anchor.pattern.search(rendered):
            return None
        return f"a generation prompt ending in {excerpt(rendered[-60:])}"
    marked = [special_markers(text) for text in _alternatives(template.start_anchor)]
    if not any(marked) or any(all(m in chat for m in markers) for markers in marked if markers):
        return None
    absent = sorted({m for markers in marked for m in markers if m not in chat})
    return f"a chat template that never writes {', '.join(map(repr, absent))}"


_CHECKED: weakref.WeakKeyDictionary[Any, dict[tuple[int, int, int], CompiledTemplate]] = weakref.WeakKeyDictionary()
_CHECKED_PER_TOKENIZER = 16


def check_tokenizer(tokenizer: Any, template: Any) -> None:
    """Raise ``TokenizerMismatchError`` when ``tokenizer`` cannot go with ``template``: a delimiter's special
    tokens (text like ``<|im_end|>``, ``<｜Assistant｜>``, ``[TOOL_CALLS]``) are not single tokens of the
    tokenizer (``missing_special_tokens``), or its chat template's generation prompt lacks the template's
    start anchor (``chat_template_mismatch``). Results are remembered per tokenizer and template."""
    compiled = load_template(template)
    key = (id(compiled), len(tokenizer), hash(chat_template_text(getattr(tokenizer, "chat_template", None))))
    try:
        seen = _CHECKED.setdefault(tokenizer, {})
    except TypeError:  # not weak-referenceable: check every time
        seen = {}
    if seen.get(key) is compiled:
        return
    _check(tokenizer, compiled)
    if len(seen) >= _CHECKED_PER_TOKENIZER:
        seen.pop(next(iter(seen)))
    seen[key] = compiled  # holding the template keeps its id from being reused


def _check(tokenizer: Any, template: CompiledTemplate) -> None:
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    missing = _missing_markers(tokenizer, template)
    if missing:
        listed = "; ".join(f"{', '.join(map(repr, markers))} ({where})" for where, markers in missing)
        raise TokenizerMismatchError(
            f"expected the tokenizer {name!r} to have the template's special tokens as single tokens, found "
            f"them missing: {listed}. A model with this tokenizer cannot write them, so the template never "
            f"matches its output. Use the template of this tokenizer's family{_suggestion(tokenizer)}, or the "
            "tokenizer of the model the template is for.",
            code="missing_special_tokens", key=missing[0][0], markers=[m for _, ms in missing for m in ms],
        )
    conflict = _chat_template_conflict(tokenizer, template)
    if conflict:
        raise TokenizerMismatchError(
            f"expected the chat template of {name!r} to open the assistant turn with the template's start "
            f"anchor {_anchor_text(template)}, found {conflict}. The template is for another model family: use "
            f"the template of this tokenizer's family{_suggestion(tokenizer)}, or pass check=False if the "
            "prompts are built another way.",
            code="chat_template_mismatch", key="start_anchor",
        )


def _suggestion(tokenizer: Any) -> str:
    name = detect_template(tokenizer)
    return f" ({name!r} fits it)" if name else ""


def _checked_template(tokenizer: Any, template: Any, check: bool) -> CompiledTemplate:
    compiled = _template(tokenizer, template)
    if check:
        check_tokenizer(tokenizer, compiled)
    return compiled


# --- token ids in -------------------------------------------------------------------------------------


def _texts(tokenizer: Any, value: Any, name: str) -> tuple[list[str], bool]:
    """Generations as texts and whether they were a batch: text stays text, token ids are decoded with
    special tokens kept (one sequence, a list of sequences, a 1-D or 2-D array or tensor)."""
    if isinstance(value, str):
        return [value], False
    if isinstance(value, list | tuple) and value and isinstance(value[0], str):
        if not all(isinstance(v, str) for v in value):
            raise TokenInputError(f"{name}: expected a list of strings or of token-id sequences, found a mix",
                                  path=name)
        return list(value), True
    sequences, batched = sequences_ids(value, name)
    if not batched:
        return [decode_ids(tokenizer, sequences[0], name)], False
    return [decode_ids(tokenizer, ids, f"{name}[{i}]") for i, ids in enumerate(sequences)], True


def _prefix_text(tokenizer: Any, prefix: Any) -> Any:
    """One prefix as text: a string, token ids (decoded), or [] for none. A missing prefix stays missing."""
    if prefix is None or prefix is _UNSET or isinstance(prefix, str):
        return prefix
    if isinstance(prefix, list | tuple) and not prefix:
        return ""
    return decode_ids(tokenizer, sequence_ids(prefix, "prefix"), "prefix")


def _is_batch(value: Any) -> bool:
    """Several prefixes: a list of strings, a list of sequences, or a 2-D array or tensor."""
    ndim = getattr(value, "ndim", None)
    if isinstance(ndim, int) and not isinstance(value, list | tuple):
        return ndim >= 2
    if not isinstance(value, list | tuple) or not value:
        return False
    first = value[0]
    return isinstance(first, str | list | tuple) or getattr(first, "ndim", 0) >= 1


def _prefixes(tokenizer: Any, prefix: Any, count: int) -> list[str]:
    """One prefix text per generation: a single prefix is shared, several must match the generations."""
    if not _is_batch(prefix):
        return [_prefix_text(tokenizer, prefix)] * count
    prefixes, _ = _texts(tokenizer, prefix, "prefix")
    if len(prefixes) != count:
        raise PrefixRequiredError(
            f"parse_response got {count} generation(s) but {len(prefixes)} prefixes; pass one prefix per "
            "generation or a single one for all", code="prefix_count_mismatch")
    return prefixes


def parse_response(
    response: Any,
    template: Any = None,
    *,
    tokenizer: Any,
    prefix: Any = _UNSET,
    tools: Iterable[Any] | None = None,
    on_malformed: OnMalformed = "raise",
    limits: Limits | None = None,
    check: bool = True,
    finish_reason: str | list[str | None] | None = None,
) -> Any:
    """Parse a generation given as token ids (or text) into a message, as ``tokenizer.parse_response`` does.

    ``response``: a list of ints, a 1-D numpy array or torch tensor (one message), or a list of sequences or a
    2-D array (a list of messages); strings and lists of strings pass through. Ids are decoded with
    ``tokenizer.decode`` (special tokens kept). ``template`` defaults to ``tokenizer.response_template``.
    ``prefix`` (required) is text or token ids, one for all or one per generation; ``[]`` or ``""`` opts
    out. ``check`` runs ``check_tokenizer`` first. ``finish_reason`` (``"length"``: the token limit cut the
    generation; one for all or one per generation) as in ``chatparse.parse_response``.
    Otherwise as ``chatparse.parse_response``.
    """
    compiled = _checked_template(tokenizer, template, check)
    if prefix is _UNSET or prefix is None:
        ResponseParser(compiled, None)  # raises the PrefixRequiredError with the full explanation
    texts, batched = _texts(tokenizer, response, "response")
    prefixes = _prefixes(tokenizer, prefix, len(texts))
    options: dict[str, Any] = {"tools": tools, "on_malformed": on_malformed, "limits": limits,
                               "finish_reason": finish_reason}
    if not batched:
        return parse_text(texts[0], compiled, prefix=prefixes[0], **options)
    return parse_text(texts, compiled, prefix=prefixes, **options)


class TokenResponseParser:
    """A ``ResponseParser`` fed token ids: ``feed(ids)`` takes one id or several (list, 1-D array or
    tensor) and returns the events the text they complete produces; ``finalize()`` flushes the held text
    and returns ``(message, events)``. The message equals ``parse_response`` of all the ids, however they
    were grouped. Decoding is incremental (``IncrementalDetokenizer``): a character split across tokens
    is parsed once complete, and each step decodes only a short window.
    """

    def __init__(
        self,
        template: Any = None,
        prefix: Any = _UNSET,
        *,
        tokenizer: Any,
        tools: Iterable[Any] | None = None,
        on_malformed: OnMalformed = "raise",
        limits: Limits | None = None,
        check: bool = True,
    ) -> None:
        compiled = _checked_template(tokenizer, template, check)
        text = _prefix_text(tokenizer, prefix)
        self.parser = ResponseParser(compiled, None if text is _UNSET else text, tools=tools,
                                     on_malformed=on_malformed, limits=limits)
        self.detokenizer = IncrementalDetokenizer(tokenizer, name="ids")
        self.initial_events: list[Event] = self.parser.initial_events
        self._finalized = False

    @property
    def template(self) -> CompiledTemplate:
        return self.parser.template

    def feed(self, ids: Any) -> list[Event]:
        """Add generated token ids; returns the events the text they complete produces."""
        self._check_open()
        text = self.detokenizer.feed(ids)
        return self.parser.feed(text) if text else []

    def finalize(self, *, finish_reason: str | None = None) -> tuple[dict[str, Any], list[Event]]:
        """The final message and the last events (the held text, then the closing events);
        ``finish_reason`` as in ``ResponseParser.finalize`` (``"length"``: the token limit cut it)."""
        self._check_open()
        self._finalized = True
        tail = self.detokenizer.finish()
        events = self.parser.feed(tail) if tail else []
        message, final = self.parser.finalize(finish_reason=finish_reason)
        return message, events + final

    def _check_open(self) -> None:
        if self._finalized:
            raise UsageError("TokenResponseParser already finalized; create a new parser for the next generation",
                             code="parser_finalized")


__all__ = [
    "TokenResponseParser",
    "TokenizerMismatchError",
    "check_tokenizer",
    "detect_template",
    "parse_response",
    "response_template",
    "special_markers",
]
