"""What a serving engine's parser plugin needs, with no engine imported: the template a server uses
(``CHATPARSE_TEMPLATE``, the tokenizer's ``response_template``, detection), one generation parsed whole or
streamed into reasoning / content / tool-call deltas with ids, and where reasoning ends in token ids.
``chatparse.integrations.vllm`` wraps these in vLLM's classes (docs/vllm.md).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatparse.engine.api import parse_response
from chatparse.engine.parser import Event, ResponseParser
from chatparse.errors import ChatparseError, excerpt
from chatparse.integrations.detokenize import IncrementalDetokenizer
from chatparse.integrations.tokenizer_config import (
    TEMPLATE_KEY,
    chat_template_text,
    missing_template_error,
    read_response_template,
)
from chatparse.openai import (
    CONTENT_FIELD,
    REASONING_FIELDS,
    TOOLS_FIELD,
    ChatCompletionStream,
    to_chat_message,
)
from chatparse.template.compile import CompiledTemplate, Delimiter, load_template

PARSER_NAME = "chatparse"  # the --tool-call-parser / --reasoning-parser name of the vLLM and SGLang plugins
TEMPLATE_ENV = "CHATPARSE_TEMPLATE"  # a built-in name, a template file, a tokenizer_config.json or a model dir
CALLS_ENV = "CHATPARSE_CALLS"  # "buffered" (default): each call sent whole at its close; "early": as it forms
CALL_MODES = ("buffered", "early")

logger = logging.getLogger("chatparse.serving")

NewCallId = Callable[[str], str]  # the tool call's name -> its id


def template_special_tokens(tokenizer: Any, template: CompiledTemplate) -> dict[str, int]:
    """The tokenizer's added tokens that ``template``'s markers use, with their ids: the Lark and GBNF forms
    name them as tokens (llguidance matches an added token only as that token, never its bytes spelled out;
    one not spelled ``<...>``, such as MiniMax's ``[e~[``, only by its id). xgrammar matches an added token by
    its text, spelled or not, so the structural tag writes them as text."""
    try:
        added = dict(tokenizer.get_added_vocab())
    except AttributeError:
        return {}
    source = json.dumps(template.to_dict(), ensure_ascii=False)
    return {token: at for token, at in sorted(added.items()) if token and token in source}


# --- which template -------------------------------------------------------------------------------


def server_template(tokenizer: Any = None, *, model: str | None = None, model_type: str | None = None,
                    env: Mapping[str, str] | None = None) -> tuple[CompiledTemplate, str]:
    """The template a server parses with, and where it came from (for the startup log line).

    In order: ``CHATPARSE_TEMPLATE`` (a built-in name, a template file, a tokenizer_config.json or a model
    directory); the tokenizer's ``response_template`` (its attribute or its tokenizer_config.json's key);
    the built-in detected from the tokenizer's chat template, the model id and ``model_type``. None of them:
    ``MissingResponseTemplateError`` saying how to choose one."""
    chosen = (os.environ if env is None else env).get(TEMPLATE_ENV, "").strip()
    if chosen:
        is_dir = os.path.isdir(chosen)
        return load_template(read_response_template(chosen) if is_dir else chosen), f"{TEMPLATE_ENV}={chosen}"
    stored = _tokenizer_template(tokenizer)
    if stored is not None:
        return load_template(stored), f"the tokenizer's {TEMPLATE_KEY}"
    from chatparse.templates import detect_template

    name_or_path = getattr(tokenizer, "name_or_path", None) or None
    model_id = model or name_or_path
    if model_type is None and model_id and os.path.isdir(model_id):
        from chatparse.integrations.tokenizer_config import model_type as directory_model_type

        model_type = directory_model_type(model_id)
    chat = chat_template_text(getattr(tokenizer, "chat_template", None))
    detected = detect_template(model_id=model_id, model_type=model_type, chat_template=chat)
    if detected is not None:
        return load_template(detected), f"{detected!r}, detected from {model_id or 'the chat template'!r}"
    raise missing_template_error(
        f"no {TEMPLATE_ENV} in the environment, no {TEMPLATE_KEY} in the tokenizer, and no built-in matches "
        f"{model_id!r}. Set {TEMPLATE_ENV}=NAME (or a template file)", None, str(model_id))


def _tokenizer_template(tokenizer: Any) -> Mapping[str, Any] | None:
    for value in (getattr(tokenizer, TEMPLATE_KEY, None),
                  (getattr(tokenizer, "init_kwargs", None) or {}).get(TEMPLATE_KEY)):
        if isinstance(value, Mapping):
            return value
    return None


def call_mode(env: Mapping[str, str] | None = None) -> str:
    """``CHATPARSE_CALLS``: ``buffered`` (the default) or ``early``; anything else is a named error."""
    mode = (os.environ if env is None else env).get(CALLS_ENV, "").strip() or "buffered"
    if mode not in CALL_MODES:
        raise ValueError(f"expected {CALLS_ENV} to be one of {', '.join(CALL_MODES)}, found {mode!r}")
    return mode


def tool_dicts(tools: Iterable[Any] | None) -> list[dict[str, Any]] | None:
    """A request's tools as OpenAI tool dicts (pydantic models dumped; Responses API function tools, which
    are flat, nested under ``function``); entries that are no function tool are left out."""
    out: list[dict[str, Any]] = []
    for tool in tools or ():
        data = tool.model_dump(exclude_none=True) if hasattr(tool, "model_dump") else tool
        if not isinstance(data, Mapping):
            continue
        if isinstance(data.get("function"), Mapping):
            out.append(dict(data))
        elif data.get("type") == "function" and isinstance(data.get("name"), str):
            fn = {k: data[k] for k in ("name", "description", "parameters") if k in data}
            out.append({"type": "function", "function": fn})
    return out or None


# --- one generation -------------------------------------------------------------------------------


@dataclass
class CallDelta:
    """A tool call's part of a delta: ``id``, ``name`` on the call's first delta, then argument text."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass
class Delta:
    """What one step of a generation adds to the message."""

    reasoning: str = ""
    content: str = ""
    calls: list[CallDelta] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.reasoning or self.content or self.calls)

    def add(self, other: Delta) -> Delta:
        """This delta followed by ``other``, as one (a call continued across them stays one entry)."""
        calls = [CallDelta(c.index, c.id, c.name, c.arguments) for c in self.calls]
        for call in other.calls:
            if calls and call.id is None and calls[-1].index == call.index:
                calls[-1].arguments += call.arguments
            else:
                calls.append(call)
        return Delta(self.reasoning + other.reasoning, self.content + other.content, calls)


@dataclass(frozen=True)
class Parsed:
    """A whole generation: the wire fields and the parsed message (with its ``malformed`` entries)."""

    reasoning: str | None
    content: str | None
    calls: list[tuple[str, str, str]]  # (id, name, arguments as a JSON string)
    message: dict[str, Any]


def parse_generation(template: Any, prefix: str, text: str, *, tools: Any = None, new_call_id: NewCallId,
                     log: logging.Logger = logger) -> Parsed:
    """``text`` parsed whole with ``on_malformed="recover"``: a broken or cut call is left out (and logged on
    ``log``), the calls beside it are kept, and nothing raises for model output."""
    message = parse_response(text, template, prefix=prefix, tools=tools, on_malformed="recover")
    log_dropped(message, log)
    wire = to_chat_message(message, id_factory=str)
    calls = [(new_call_id(fn["name"]), fn["name"], fn["arguments"])
             for fn in (call["function"] for call in wire.get(TOOLS_FIELD, []))]
    return Parsed(wire.get("reasoning_content"), wire["content"], calls, message)


class GenerationStream:
    """One generation streamed into ``Delta`` objects (a ``ChatCompletionStream`` underneath, with
    ``on_malformed="recover"``). ``calls="buffered"`` sends each call whole when it closes, so the deltas
    add up to exactly ``parse_generation``'s result; ``"early"`` sends the name and each argument as soon as
    they are certain (a cut call's accumulated arguments are then never valid JSON). Ids come from
    ``new_call_id(name)`` in the order calls start; what the message does not carry is logged on ``log``."""

    def __init__(self, template: Any, prefix: str, *, tools: Any = None, calls: str = "buffered",
                 new_call_id: NewCallId, log: logging.Logger = logger) -> None:
        if calls not in CALL_MODES:
            raise ValueError(f"expected calls to be one of {', '.join(CALL_MODES)}, found {calls!r}")
        self._stream = ChatCompletionStream(template, prefix, tools=tools, on_malformed="recover",
                                            buffer_calls=calls == "buffered", id_factory=str)
        self._new_call_id = new_call_id
        self._log = log
        self._reasoning = reasoning_field(self.template)
        self._reasoning_seen = False
        self.finished = False

    @property
    def template(self) -> CompiledTemplate:
        return self._stream.parser.template

    @property
    def message(self) -> dict[str, Any] | None:
        """The parsed message, once ``finish`` ran."""
        return self._stream.message

    @property
    def mismatches(self) -> list[str]:
        """Fields whose early deltas could not be reconciled with the final value (empty unless a bug)."""
        return self._stream.mismatches

    @property
    def buffered(self) -> bool:
        return self._stream.buffer_calls

    @property
    def reasoning_closed(self) -> bool:
        """The reasoning region was open and is closed now (or the template has none)."""
        return self._reasoning is None or (self._reasoning_seen and self._stream.parser.current_region != self._reasoning)

    def feed(self, text: str) -> Delta:
        delta = self._delta(self._stream.feed(text)) if text else Delta()
        if delta.reasoning or self._stream.parser.current_region == self._reasoning:
            self._reasoning_seen = True
        return delta

    def finish(self) -> Delta:
        """The rest of the generation (held text, calls completed by its end)."""
        self.finished = True
        # The engine's finish reason does not reach the parser here: finishing with none (the text-only rule)
        # keeps a raw-code call whose end was never written truncated, never a cut program read as a call.
        delta = self._delta(self._stream.finish(None))
        if self._stream.message is not None:
            log_dropped(self._stream.message, self._log)
        return delta

    def _delta(self, chunks: list[dict[str, Any]]) -> Delta:
        out = Delta()
        for chunk in chunks:
            delta = chunk["choices"][0]["delta"]
            out.reasoning += delta.get(self._stream.reasoning_key) or ""
            out.content += delta.get(CONTENT_FIELD) or ""
            for call in delta.get(TOOLS_FIELD) or ():
                self._add_call(out.calls, call)
        return out

    def _add_call(self, calls: list[CallDelta], call: Mapping[str, Any]) -> None:
        fn = call.get("function") or {}
        if "id" in call:  # the call's first delta: its name is known, so is its id
            name = str(fn.get("name") or "")
            calls.append(CallDelta(call["index"], self._new_call_id(name), name, fn.get("arguments") or ""))
        elif calls and calls[-1].index == call["index"]:
            calls[-1].arguments += fn.get("arguments") or ""
        else:
            calls.append(CallDelta(call["index"], arguments=fn.get("arguments") or ""))


def log_dropped(message: Mapping[str, Any], log: logging.Logger = logger) -> None:
    """One log line per region the message does not carry to the client: a call that was cut off or did not
    parse (``malformed``), a next turn written past a missed stop (``trailing``), text outside every region
    (``unparsed``)."""
    for entry in message.get("malformed") or ():
        log.warning("chatparse: dropped a %s region (%s): %s", entry.get("field"), entry.get("code"),
                       excerpt(str(entry.get("raw", ""))))
    for key in ("trailing", "unparsed"):
        if message.get(key):
            log.info("chatparse: dropped %s text: %s", key, excerpt(str(message[key])))


# --- where reasoning ends -------------------------------------------------------------------------


def reasoning_field(template: CompiledTemplate) -> str | None:
    return next((name for name in REASONING_FIELDS if name in template.fields), None)


class ReasoningWatch:
    """Whether reasoning has ended in a token sequence (a prompt, or a prompt and the output so far): the
    reasoning region closed, or a tool call or content text began. Fed a growing sequence it decodes and
    parses only the new ids; a sequence that does not extend the last one is read from the start.
    ``thinking_disabled``: a prompt that leaves nothing open has ended reasoning (``enable_thinking=False``)."""

    CHECK = 8  # ids compared to tell whether a sequence extends the last one

    def __init__(self, template: CompiledTemplate, tokenizer: Any, *, thinking_disabled: bool = False) -> None:
        self.template = template
        self.tokenizer = tokenizer
        self.thinking_disabled = thinking_disabled
        self.field = reasoning_field(template)
        self._ids: list[int] = []
        self._parser: ResponseParser | None = None
        self._detok: IncrementalDetokenizer | None = None
        self._ended = False
        self._output = False  # text was fed after the prefix

    def ended(self, ids: Sequence[int]) -> bool:
        if self.field is None:
            return True
        ids = list(ids)
        if self._parser is None or not self._extends(ids):
            self._start(ids)
        elif len(ids) > len(self._ids) and not self._ended:
            assert self._detok is not None
            text = self._detok.feed(ids[len(self._ids):])
            self._ids = ids
            self._output = self._output or bool(text)
            self._track(self._feed(text))
        else:
            self._ids = ids
        if self._ended:
            return True
        return not self._output and self.thinking_disabled and self._parser is not None \
            and self._parser.current_region != self.field

    def _extends(self, ids: list[int]) -> bool:
        n = len(self._ids)
        return len(ids) >= n and ids[max(0, n - self.CHECK):n] == self._ids[max(0, n - self.CHECK):]

    def _start(self, ids: list[int]) -> None:
        self._ids, self._ended, self._output = ids, False, False
        self._detok = IncrementalDetokenizer(self.tokenizer)
        prefix = self._detok.feed(ids) if ids else ""
        try:
            self._parser = ResponseParser(self.template, prefix, on_malformed="recover")
        except ChatparseError:
            self._parser = ResponseParser(self.template, "", on_malformed="recover")
        self._track(self._parser.initial_events)

    def _feed(self, text: str) -> list[Event]:
        assert self._parser is not None
        try:
            return self._parser.feed(text) if text else []
        except ChatparseError:  # a model output the parser rejects: reasoning is over as far as it can tell
            self._ended = True
            return []

    def _track(self, events: list[Event]) -> None:
        for event in events:
            name, kind = event["field"], event["type"]
            if name == self.field and kind in ("region_close", "region_malformed"):
                self._ended = True
            elif name == TOOLS_FIELD and kind == "region_open":
                self._ended = True
            elif name == CONTENT_FIELD and kind == "region_chunk" and event["text"].strip():
                self._ended = True


class ReasoningCounter:
    """How many generated tokens are reasoning (for usage reports): a token counts when the reasoning region
    is open before it or its text opens, continues or closes that region (a token whose text is held until a
    later one resolves it counts with that one). Fed a growing sequence, each id
    is decoded and parsed once; a sequence that does not extend the last one is counted from the start."""

    def __init__(self, template: CompiledTemplate, prefix: str, tokenizer: Any) -> None:
        self.template, self.prefix, self.tokenizer = template, prefix, tokenizer
        self.field = reasoning_field(template)
        self._restart()

    def _restart(self) -> None:
        self._ids: list[int] = []
        self._count = 0
        self._held = 0  # tokens whose text the parser still holds (no event yet)
        self._failed = False
        self._parser = ResponseParser(self.template, self.prefix, on_malformed="recover")
        self._detok = IncrementalDetokenizer(self.tokenizer)

    def count(self, ids: Sequence[int]) -> int:
        if self.field is None:
            return 0
        ids = list(ids)
        n = len(self._ids)
        if len(ids) < n or ids[max(0, n - ReasoningWatch.CHECK):n] != self._ids[max(0, n - ReasoningWatch.CHECK):]:
            self._restart()
            n = 0
        for token in ids[n:]:
            if self._failed:
                break
            inside = self._parser.current_region == self.field
            try:
                text = self._detok.feed([token])
                events = self._parser.feed(text) if text else []
            except ChatparseError:
                self._failed = True  # the count so far stands
                break
            if inside or any(event["field"] == self.field for event in events):
                self._count += 1 + self._held  # held tokens (a forming opener) were reasoning too
                self._held = 0
            elif events:
                self._held = 0
            else:
                self._held += 1
        self._ids = ids
        return self._count


def closer_ids(template: CompiledTemplate, tokenizer: Any) -> list[list[int]]:
    """Token ids of the reasoning region's literal closers (``</think>``), for a cheap look at new ids;
    empty when the closer is a pattern or the template has no reasoning field."""
    name = reasoning_field(template)
    close: Delimiter | None = template.fields[name].close if name else None
    if close is None or close.literals is None:
        return []
    out = []
    for literal in close.literals:
        ids = tokenizer.encode(literal, add_special_tokens=False)
        if ids:
            out.append(list(ids))
    return out


def content_ids(ids: Sequence[int], closers: list[list[int]]) -> list[int]:
    """The ids after the last literal reasoning closer in ``ids``; all of them when none occurs."""
    ids = list(ids)
    best = -1
    for closer in closers:
        for start in range(len(ids) - len(closer), -1, -1):
            if ids[start:start + len(closer)] == closer:
                best = max(best, start + len(closer))
                break
    return ids if best < 0 else ids[best:]


__all__ = [
    "CALLS_ENV",
    "CALL_MODES",
    "TEMPLATE_ENV",
    "CallDelta",
    "Delta",
    "GenerationStream",
    "Parsed",
    "ReasoningCounter",
    "ReasoningWatch",
    "call_mode",
    "closer_ids",
    "content_ids",
    "log_dropped",
    "parse_generation",
    "reasoning_field",
    "server_template",
    "tool_dicts",
]
