"""vLLM's parser classes over chatparse (vLLM 0.33): ``ChatparseParser``, vLLM's unified ``Parser`` that the
chat-completion and Responses serving code drives (``parse``, ``parse_delta``, ``is_reasoning_end``,
``count_reasoning_tokens``, ``adjust_request``); the ``chatparse`` tool and reasoning parsers that
``--tool-call-parser`` / ``--reasoning-parser`` select; and ``register()``, which registers them and lets
vLLM's ``ParserManager`` compose them into ``ChatparseParser`` (one template parses the whole message).

Imports vLLM; ``chatparse.integrations.vllm`` does not.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any, cast

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionNamedToolChoiceParam
from vllm.exceptions import VLLMValidationError
from vllm.parser.abstract_parser import Parser
from vllm.parser.parser_manager import ParserManager
from vllm.reasoning import ReasoningParser, ReasoningParserManager
from vllm.renderers.chat_utils import make_tool_call_id
from vllm.sampling_params import StructuredOutputsParams
from vllm.tool_parsers import ToolParser, ToolParserManager
from vllm.tool_parsers.tool_strict_level import ToolStrictLevel

from chatparse.errors import ChatparseError
from chatparse.grammar import tool_grammar
from chatparse.integrations.serving import (
    PARSER_NAME as NAME,
)
from chatparse.integrations.serving import (
    TEMPLATE_ENV,
    Delta,
    GenerationStream,
    ReasoningCounter,
    ReasoningWatch,
    call_mode,
    closer_ids,
    content_ids,
    parse_generation,
    reasoning_field,
    server_template,
    template_special_tokens,
    tool_dicts,
)
from chatparse.integrations.transformers import check_tokenizer
from chatparse.template.compile import CompiledTemplate

logger = logging.getLogger("vllm.chatparse")  # under vLLM's logger: its handler prints these lines

_TEMPLATES: dict[tuple[int, str], tuple[Any, CompiledTemplate]] = {}  # holding the tokenizer keeps its id


def server_template_for(tokenizer: Any, model_config: Any = None) -> CompiledTemplate:
    """The server's template (``chatparse.integrations.serving.server_template``), chosen once per tokenizer
    (vLLM has one; its startup check constructs the parser with the tokenizer alone, so the tokenizer's
    ``name_or_path`` is what detection sees first) and checked against it: the template's special tokens
    must be tokens of the model."""
    model = getattr(model_config, "model", None)
    hf_config = getattr(model_config, "hf_config", None)
    key = (id(tokenizer), os.environ.get(TEMPLATE_ENV, ""))
    cached = _TEMPLATES.get(key)
    if cached is not None:
        return cached[1]
    template, source = server_template(tokenizer, model=model, model_type=getattr(hf_config, "model_type", None))
    check_tokenizer(tokenizer, template)
    logger.info("chatparse: parsing with the template of %s", source)
    _TEMPLATES[key] = (tokenizer, template)
    return template


def decode(tokenizer: Any, ids: Sequence[int]) -> str:
    """Ids as text with special tokens kept (vLLM's detokenizer settings after ``adjust_request``)."""
    try:
        return cast(str, tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False,
                                          spaces_between_special_tokens=False))
    except TypeError:
        return cast(str, tokenizer.decode(list(ids), skip_special_tokens=False))


def _thinking_disabled(kwargs: dict[str, Any]) -> bool:
    chat_kwargs = kwargs.get("chat_template_kwargs") or {}
    return chat_kwargs.get("enable_thinking", True) is False or chat_kwargs.get("thinking", True) is False


def delta_message(delta: Delta, *, include_reasoning: bool = True) -> DeltaMessage | None:
    """A chatparse ``Delta`` as vLLM's ``DeltaMessage`` (None when it carries nothing)."""
    calls = [DeltaToolCall(index=c.index, id=c.id, type="function" if c.id is not None else None,
                           function=DeltaFunctionCall(name=c.name, arguments=c.arguments))
             for c in delta.calls]
    reasoning = delta.reasoning if include_reasoning else ""
    if not (reasoning or delta.content or calls):
        return None
    return DeltaMessage(reasoning=reasoning or None, content=delta.content or None, tool_calls=calls)


GRAMMAR_ENV = "CHATPARSE_GRAMMAR"  # "auto": constrain every request with tools, not only those that ask


def _guarantee(request: Any, level: Any) -> tuple[str, str] | None:
    """What the request asks a grammar to guarantee, with the parameter that asked (None: nothing; ``auto``
    with non-strict tools stays free text unless ``--tool-strict-level`` or CHATPARSE_GRAMMAR=auto says so)."""
    if request.tool_choice == "required":
        return "tool_choice='required'", "tool_choice"
    if isinstance(request.tool_choice, ChatCompletionNamedToolChoiceParam) or (
            request.tool_choice not in (None, "auto", "none") and not isinstance(request.tool_choice, str)):
        return "a named tool choice", "tool_choice"
    for tool in request.tools or ():
        data = tool.model_dump(exclude_none=True) if hasattr(tool, "model_dump") else tool
        function = data.get("function") if isinstance(data, dict) else None
        if isinstance(data, dict) and (data.get("strict") or (isinstance(function, dict) and function.get("strict"))):
            return "strict tools", "tools"
    if level is not None and level != ToolStrictLevel.AUTO:
        return f"--tool-strict-level {level.name.lower()}", "tools"
    if os.environ.get(GRAMMAR_ENV, "").strip().lower() == "auto":
        return f"{GRAMMAR_ENV}=auto", "tools"
    return None


GRAMMAR_FORM_ENV = "CHATPARSE_GRAMMAR_FORM"  # "lark" or "structural_tag": overrides what the backend decides
GRAMMAR_FORMS = ("lark", "structural_tag")


def configured_backend(argv: Sequence[str] | None = None) -> str | None:
    """The server's structured-output backend as configured (``--structured-outputs-config '{"backend": ...}'``
    or ``--structured-outputs-config.backend ...``; None when not given: vLLM's ``auto``). A tool parser is
    given no engine configuration, and vLLM's API server sets no current config: the command line is read, or
    the current config where one is set (an engine process, a test)."""
    try:
        from vllm.config import get_current_vllm_config_or_none
    except ImportError:
        config = None
    else:
        config = get_current_vllm_config_or_none()
    if config is not None:
        return cast(str, config.structured_outputs_config.backend)
    args = list(sys.argv if argv is None else argv)
    for index, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        name = name.replace("_", "-")
        if name not in ("--structured-outputs-config", "--structured-outputs-config.backend"):
            continue
        if not eq:
            value = args[index + 1] if index + 1 < len(args) else ""
        if name.endswith(".backend"):
            return value
        try:
            data = json.loads(value)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("backend"), str):
            return str(data["backend"])
    return None


def grammar_form(argv: Sequence[str] | None = None) -> str:
    """The form ``adjust_request`` sends: ``lark`` (``structured_outputs.grammar``) when the server's backend
    is ``guidance`` (llguidance reads no ``format``-style structural tag), else ``structural_tag`` (xgrammar,
    which vLLM's default ``auto`` backend picks for it). CHATPARSE_GRAMMAR_FORM overrides (a backend set in a
    config file, an ``auto`` server that an earlier request already bound to guidance)."""
    forced = os.environ.get(GRAMMAR_FORM_ENV, "").strip().lower().replace("-", "_")
    if forced in GRAMMAR_FORMS:
        return forced
    if forced:
        logger.warning("chatparse: %s=%r is none of %s; ignored", GRAMMAR_FORM_ENV, forced, list(GRAMMAR_FORMS))
    return "lark" if configured_backend(argv) == "guidance" else "structural_tag"


def _choice(request: Any) -> Any:
    choice = request.tool_choice
    if hasattr(choice, "model_dump"):
        choice = choice.model_dump(exclude_none=True)
    return "auto" if choice is None else choice


def added_vocab(tokenizer: Any) -> dict[str, int]:
    """The tokenizer's added tokens and their ids (none for a tokenizer that does not say)."""
    try:
        return dict(tokenizer.get_added_vocab())
    except AttributeError:
        return {}


special_tokens = template_special_tokens


# --- the unified parser -----------------------------------------------------------------------------


class ChatparseParser(Parser):  # type: ignore[misc]
    """One generation at a time (vLLM makes one per request and choice): reasoning, content and tool calls
    parsed by one chatparse template with the rendered prompt as prefix and the request's tools for typing.

    A call cut by the token limit or one that does not parse is never returned: it is left out and logged
    (on vLLM's logger, ``vllm.chatparse``), the calls beside it are kept; the finish reason is vLLM's (``length`` stays
    ``length``). Calls stream whole at their close (``CHATPARSE_CALLS=buffered``, the default) or as they
    form (``early``), so the streamed deltas add up to ``parse``'s message."""

    reasoning_parser_cls: type[ReasoningParser] | None = None
    tool_parser_cls: type[ToolParser] | None = None
    always_adjust_request = True

    def __init__(self, tokenizer: Any, tools: list[Any] | None = None, *args: Any, model_config: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(tokenizer, tools, *args, model_config=model_config, **kwargs)
        self.template = server_template_for(tokenizer, model_config)
        self.calls = call_mode()
        self._tools = tool_dicts(tools)
        self._thinking_disabled = _thinking_disabled(kwargs)
        self._prompt_ids: list[int] | None = None
        self._prefix = ""
        self._stream: GenerationStream | None = None
        self._counter: ReasoningCounter | None = None

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        ids = list(prompt_token_ids)
        if ids != self._prompt_ids:
            self._prompt_ids = ids
            self._prefix = decode(self.model_tokenizer, ids)
            self._stream = None
            self._counter = None

    def adjust_request(self, request: Any) -> Any:
        """Special tokens stay in the output text (the template's markers are special tokens); a request
        for a tool guarantee no grammar enforces here is rejected with the parameter named."""
        request.skip_special_tokens = False
        if hasattr(request, "spaces_between_special_tokens"):
            request.spaces_between_special_tokens = False
        if self._tool_parser is not None and request.tools and request.tool_choice != "none":
            asked = _guarantee(request, getattr(self, "tool_strict_level", None))
            if asked is not None:
                self._constrain(request, *asked)
        return request

    def _constrain(self, request: Any, guarantee: str, parameter: str) -> None:
        """Constrain the model to the template's own call format (``chatparse.tool_grammar``: xgrammar's
        structural tag, or llguidance's Lark on the guidance backend, see ``grammar_form``), from where reasoning
        ends when a reasoning parser runs, as vLLM applies grammars. A template with no grammar is a 400 naming
        why."""
        if request.structured_outputs is not None and request.tool_choice == "auto":
            logger.warning("chatparse: the request's own structured output is kept; %s is not enforced", guarantee)
            return
        form = grammar_form()
        try:
            grammar = tool_grammar(self.template, tool_dicts(request.tools) or [], tool_choice=_choice(request),
                                   parallel_tool_calls=request.parallel_tool_calls is not False,
                                   special_tokens=special_tokens(self.model_tokenizer, self.template),
                                   reasoning=self.reasoning_parser_cls is None)
            structured = StructuredOutputsParams(grammar=grammar.lark) if form == "lark" else \
                StructuredOutputsParams(structural_tag=json.dumps(grammar.structural_tag))
        except ChatparseError as exc:
            raise VLLMValidationError(
                f"the chatparse parser cannot guarantee {guarantee} for this model's template: {exc}. Use "
                "tool_choice='auto' with non-strict tools.", parameter=parameter) from exc
        request.structured_outputs = structured
        request.response_format = None

    def is_reasoning_end(self, input_ids: list[int]) -> bool:
        return ReasoningWatch(self.template, self.model_tokenizer,
                              thinking_disabled=self._thinking_disabled).ended(input_ids)

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        if self._counter is None:
            self._counter = ReasoningCounter(self.template, self._prefix, self.model_tokenizer)
        return self._counter.count(token_ids)

    def parse(self, model_output: str, request: Any, enable_auto_tools: bool = False,
              model_output_token_ids: Sequence[int] = ()) -> tuple[str | None, str | None, list[FunctionCall] | None]:
        self._initialize_history_tool_call_cnt(request)
        parsed = parse_generation(self.template, self._prefix, model_output, tools=self._tools,
                                  new_call_id=self._new_call_id, log=logger)
        calls = [FunctionCall(id=call_id, name=name, arguments=arguments) for call_id, name, arguments in parsed.calls]
        return parsed.reasoning, parsed.content, calls or None

    def parse_delta(self, delta_text: str, delta_token_ids: list[int], request: Any,
                    prompt_token_ids: list[int] | None = None, *, finished: bool) -> DeltaMessage | None:
        self._initialize_history_tool_call_cnt(request)
        if self._stream is None:
            if prompt_token_ids is not None and self._prompt_ids is None:
                self.set_prompt_token_ids(prompt_token_ids)
            self._stream = GenerationStream(self.template, self._prefix, tools=self._tools, calls=self.calls,
                                            new_call_id=self._new_call_id, log=logger)
        if self._stream.finished:
            return None
        delta = self._stream.feed(delta_text)
        if finished:
            delta = delta.add(self._stream.finish())
        return delta_message(delta, include_reasoning=request.include_reasoning)

    def _new_call_id(self, name: str) -> str:
        state = self._stream_state
        call_id = make_tool_call_id(id_type=state.tool_call_id_type, func_name=name,
                                    idx=state.history_tool_call_cnt)
        state.history_tool_call_cnt += 1
        return cast(str, call_id)


# --- the parsers the command line names --------------------------------------------------------------


class ChatparseReasoningParser(ReasoningParser):  # type: ignore[misc]
    """``--reasoning-parser chatparse``. vLLM's structured-output manager uses it on its own to learn
    where reasoning ends (``is_reasoning_end`` on the prompt, ``is_reasoning_end_streaming`` every step,
    reading only the new ids); the serving layer gets ``ChatparseParser``. Called on their own, the
    ``extract_*`` methods parse the whole generation and return its reasoning and content."""

    engine_based_streaming = True  # fed deltas only; finish_streaming flushes

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self.template = server_template_for(tokenizer, kwargs.get("model_config"))
        self._thinking_disabled = _thinking_disabled(kwargs)
        self._watch = ReasoningWatch(self.template, tokenizer, thinking_disabled=self._thinking_disabled)
        self._closers = closer_ids(self.template, tokenizer)
        self._prefix = ""
        self._stream: GenerationStream | None = None
        self._counter: ReasoningCounter | None = None

    @property
    def reasoning_start_str(self) -> str | None:
        return self._literal("open")

    @property
    def reasoning_end_str(self) -> str | None:
        return self._literal("close")

    def _literal(self, which: str) -> str | None:
        name = reasoning_field(self.template)
        delimiter = getattr(self.template.fields[name], which) if name else None
        return delimiter.literals[0] if delimiter is not None and delimiter.literals else None

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        self._prefix = decode(self.model_tokenizer, prompt_token_ids)
        self._stream = None

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        return ReasoningWatch(self.template, self.model_tokenizer,
                              thinking_disabled=self._thinking_disabled).ended(input_ids)

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Iterable[int]) -> bool:
        return self._watch.ended(input_ids)

    def has_engine_confirmed_reasoning_end(self) -> bool:
        return self._stream is not None and self._stream.reasoning_closed

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        return content_ids(input_ids, self._closers)

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        if self._counter is None:
            self._counter = ReasoningCounter(self.template, self._prefix, self.model_tokenizer)
        return self._counter.count(token_ids)

    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        parsed = parse_generation(self.template, self._prefix, model_output, new_call_id=lambda name: "", log=logger)
        return parsed.reasoning, parsed.content

    def extract_reasoning_streaming(self, previous_text: str, current_text: str, delta_text: str,
                                    previous_token_ids: Sequence[int], current_token_ids: Sequence[int],
                                    delta_token_ids: Sequence[int]) -> DeltaMessage | None:
        if self._stream is None:
            self._stream = GenerationStream(self.template, self._prefix, new_call_id=lambda name: "", log=logger)
        delta = self._stream.feed(delta_text)
        return delta_message(Delta(delta.reasoning, delta.content))

    def finish_streaming(self) -> DeltaMessage | None:
        if self._stream is None or self._stream.finished:
            return None
        delta = self._stream.finish()
        return delta_message(Delta(delta.reasoning, delta.content))


class ChatparseToolParser(ToolParser):  # type: ignore[misc]
    """``--tool-call-parser chatparse`` (with ``--enable-auto-tool-choice``). The serving layer gets
    ``ChatparseParser``; called on their own, ``extract_tool_calls(_streaming)`` parse the text given as a
    whole generation (prompt unknown) and return its content and calls."""

    supports_required_and_named = False  # the model's own call format, not vLLM's JSON list
    engine_based_streaming = True

    def __init__(self, tokenizer: Any, tools: list[Any] | None = None, **kwargs: Any) -> None:
        super().__init__(tokenizer, tools)
        self.template = server_template_for(tokenizer, kwargs.get("model_config"))
        self._tools = tool_dicts(tools)
        self._stream: GenerationStream | None = None

    def adjust_request(self, request: Any) -> Any:
        request = super().adjust_request(request)
        request.skip_special_tokens = False
        return request

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        parsed = parse_generation(self.template, "", model_output, tools=self._tools,
                                  new_call_id=lambda name: cast(str, make_tool_call_id()), log=logger)
        calls = [ToolCall(id=call_id, function=FunctionCall(id=call_id, name=name, arguments=arguments))
                 for call_id, name, arguments in parsed.calls]
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=parsed.content)

    def extract_tool_calls_streaming(self, previous_text: str, current_text: str, delta_text: str,
                                     previous_token_ids: Sequence[int], current_token_ids: Sequence[int],
                                     delta_token_ids: Sequence[int], request: Any) -> DeltaMessage | None:
        if self._stream is None:
            self._stream = GenerationStream(self.template, "", tools=self._tools, calls=call_mode(),
                                            new_call_id=lambda name: cast(str, make_tool_call_id()), log=logger)
        return delta_message(self._stream.feed(delta_text))

    def finish_streaming(self) -> DeltaMessage | None:
        if self._stream is None or self._stream.finished:
            return None
        return delta_message(self._stream.finish())


# --- registration ----------------------------------------------------------------------------------


def register() -> None:
    """Register the ``chatparse`` tool and reasoning parsers with vLLM and teach its ``ParserManager`` to
    compose them into ``ChatparseParser`` (as it does for its own response-template parsers). Idempotent."""
    ToolParserManager.register_module(NAME, module=ChatparseToolParser)
    ReasoningParserManager.register_module(NAME, module=ChatparseReasoningParser)
    compose = ParserManager.__dict__["_compose_parser"].__func__
    if not getattr(compose, "_chatparse", False):
        wrapped = _composer(compose)
        wrapped._chatparse = True  # type: ignore[attr-defined]
        ParserManager._compose_parser = classmethod(wrapped)


def _composer(original: Any) -> Any:
    def _compose_parser(cls: Any, **kwargs: Any) -> Any:
        reasoning_name = kwargs.get("reasoning_parser_name")
        tool_name = kwargs.get("tool_parser_name")
        reasoning_cls = cls.get_reasoning_parser(reasoning_name)
        tool_cls = cls.get_tool_parser(tool_name, kwargs.get("enable_auto_tools", False), kwargs.get("model_name"))
        chosen = [c for c in (reasoning_cls, tool_cls) if c is not None]
        ours = [c for c in chosen if issubclass(c, ChatparseReasoningParser | ChatparseToolParser)]
        if not ours:
            return original(cls, **kwargs)
        if len(ours) != len(chosen):
            raise TypeError(f"--reasoning-parser {reasoning_name} and --tool-call-parser {tool_name} cannot be "
                            f"combined: {NAME} parses the whole message with one template; name {NAME} for both")
        level = kwargs.get("tool_strict_level")
        return type("ChatparseParser", (ChatparseParser,), {
            "reasoning_parser_cls": reasoning_cls, "tool_parser_cls": tool_cls,
            "tool_strict_level": None if level is None else ToolStrictLevel.from_name(level)})

    return _compose_parser


__all__ = ["GRAMMAR_ENV", "GRAMMAR_FORM_ENV", "ChatparseParser", "ChatparseReasoningParser", "ChatparseToolParser",
           "configured_backend", "decode", "delta_message", "grammar_form", "register", "server_template_for"]
