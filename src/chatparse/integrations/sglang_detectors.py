"""SGLang's parser classes over chatparse (SGLang 0.5.23): ``ChatparseReasoningDetector`` (``--reasoning-parser
chatparse``) and ``ChatparseToolDetector`` (``--tool-call-parser chatparse``), and ``register()``, which adds them
to ``ReasoningParser.DetectorMap`` and ``FunctionCallParser.ToolCallParserEnum``.

Both subclass SGLang's response-template detectors, so its serving layer treats them as it treats its own
``response_template`` parsers: it keeps special tokens in the output text and hands both detectors the rendered
prompt (``prefix``) and the request's tools. Both parse the same raw text with one template: the reasoning
detector returns the reasoning and passes the raw text on to the tool detector, which returns the content and
the calls. For ``tool_choice="required"``, a named tool, ``strict`` tools (or ``SGLANG_TOOL_STRICT_LEVEL``)
and ``parallel_tool_calls=false`` the tool detector gives SGLang the template's grammar as an xgrammar
structural tag (``chatparse.tool_grammar``). Imports SGLang; ``chatparse.integrations.sglang`` does not.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from typing import Any

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import StreamingParseResult as ToolResult
from sglang.srt.function_call.core_types import ToolCallItem
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser
from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult
from sglang.srt.parser.response_template import (
    ResponseTemplateReasoningDetector,
    ResponseTemplateToolDetector,
)

from chatparse.errors import ChatparseError
from chatparse.grammar import tool_grammar
from chatparse.grammar.build import region_texts
from chatparse.integrations.serving import (
    PARSER_NAME as NAME,
)
from chatparse.integrations.serving import (
    TEMPLATE_ENV,
    Delta,
    GenerationStream,
    Parsed,
    call_mode,
    parse_generation,
    reasoning_field,
    server_template,
    template_special_tokens,
    tool_dicts,
)
from chatparse.integrations.transformers import check_tokenizer
from chatparse.openai import TOOLS_FIELD
from chatparse.template.compile import CompiledTemplate, Delimiter

logger = logging.getLogger("sglang.chatparse")
# The reasoning detector parses the text the tool detector parses again, and the tool detector is asked
# whether a text has calls before it parses it: only the parse whose result the client gets logs what the
# message leaves out. A logger outside logging's tree, so no logging configuration turns it back on.
_quiet = logging.Logger("chatparse.quiet", level=logging.CRITICAL + 1)

_CHOSEN: dict[tuple[int, str], tuple[Any, CompiledTemplate]] = {}  # holding the tokenizer keeps its id
_LAST: list[CompiledTemplate] = []  # the template chosen last, for SGLang's constructions without a tokenizer


def template_for(tokenizer: Any) -> CompiledTemplate:
    """The server's template (``chatparse.integrations.serving.server_template``: ``CHATPARSE_TEMPLATE``, the
    tokenizer's ``response_template``, detection), chosen once per tokenizer and checked against it. SGLang
    builds some detectors without the tokenizer; they get the template chosen last."""
    env = os.environ.get(TEMPLATE_ENV, "")
    if tokenizer is None and _LAST and not env:
        return _LAST[-1]
    cached = _CHOSEN.get((id(tokenizer), env))
    if cached is not None:
        return cached[1]
    template, source = server_template(tokenizer)
    if tokenizer is not None:
        check_tokenizer(tokenizer, template)
    logger.info("chatparse: parsing with the template of %s", source)
    _CHOSEN[(id(tokenizer), env)] = (tokenizer, template)
    _LAST[:] = [template]
    return template


def _server_option(flag: str) -> Any:
    """The value of a ``launch_server`` option in this process's published server configuration (None when
    none is published: a direct use of the classes)."""
    try:
        from sglang.srt.runtime_context import get_serving

        serving = get_serving()
    except (ImportError, ValueError):
        return None
    return getattr(serving, flag.removeprefix("--").replace("-", "_"), None)


def _grammar_waits_for_reasoning(template: CompiledTemplate) -> bool:
    """Whether SGLang starts a request's grammar where its reasoning ends (its reasoner grammar backend): when
    a reasoning parser runs and its ``think_end_token`` is text. Otherwise the grammar covers the reasoning."""
    return _server_option("--reasoning-parser") is not None and bool(_think_end(template))


def _grammar_backend() -> str | None:
    """The server's ``--grammar-backend`` (None: not published, or SGLang's default, xgrammar)."""
    try:
        from sglang.srt.runtime_context import get_exec

        return getattr(get_exec().kernel, "grammar_backend", None)
    except (ImportError, ValueError, AttributeError):
        return None


def _partner_check(other_flag: str) -> None:
    """Both parsers read the raw text with one template; with another parser on the other side the text would
    be split twice. Raises at startup (SGLang builds both parsers while it starts) naming the fix."""
    other = _server_option(other_flag)
    if other not in (None, NAME):
        raise ValueError(f"expected {other_flag} {NAME} (or none) beside the {NAME} parser, found {other_flag} "
                         f"{other}: {NAME} parses reasoning, content and tool calls with one template. Use "
                         f"--tool-call-parser {NAME} --reasoning-parser {NAME}.")


def _has_tool_region(message: dict[str, Any]) -> bool:
    return bool(message.get(TOOLS_FIELD)) or any(
        entry.get("field") == TOOLS_FIELD for entry in message.get("malformed") or ())


def _no_id(name: str) -> str:
    return ""  # SGLang's serving layer makes the call ids


def _first_literal(delimiter: Delimiter | None, avoid: tuple[str, ...] = ()) -> str:
    literals = delimiter.literals if delimiter is not None and delimiter.literals else ()
    return next((text for text in literals if text not in avoid), literals[0] if literals else "")


def _think_end(template: CompiledTemplate) -> str:
    """The reasoning detector's ``think_end_token``: the literal that closes the reasoning, or, for a close
    given as a regex (``</think>`` or a call that starts without it), the close the model writes. "" when the
    template has no reasoning, or when its close also closes another field (gpt-oss's ``<|end|>`` ends every
    message): SGLang then starts a grammar at the first token, not where the reasoning ends."""
    field = reasoning_field(template)
    if not field:
        return ""
    tool_field = template.fields.get(TOOLS_FIELD)
    tool_closers = _first_literal(tool_field.close) if tool_field is not None else ""
    literal = _first_literal(template.fields[field].close, (tool_closers,))
    if literal:
        return literal
    try:
        written = region_texts(template.fields[field])[1]
    except ChatparseError:
        return ""
    for name, other in template.fields.items():
        closes = set(other.close.literals) if other.close is not None and other.close.literals else set()
        with contextlib.suppress(ChatparseError):
            closes.add(region_texts(other)[1])
        if name != field and written in closes:
            return ""
    return written


# --- reasoning ---------------------------------------------------------------------------------------------


class ChatparseReasoningDetector(ResponseTemplateReasoningDetector):  # type: ignore[misc]
    """``--reasoning-parser chatparse``: the reasoning of the template's reasoning field. Its normal text is what
    follows in SGLang's pipeline: the raw text when the tool-call parser reads it next (``tool_call_parser_active``,
    the ``chatparse`` tool detector parses it again with the same template), else chatparse's content."""

    def __init__(self, stream_reasoning: bool = True, tokenizer: Any = None, prefix: str = "", tools: Any = None,
                 tool_call_parser_active: bool = False, **_sglang_options: Any) -> None:
        # SGLang's own __init__ loads its response-template engine; none of its state is used here.
        _partner_check("--tool-call-parser")
        self.template = template_for(tokenizer)
        self.stream_reasoning = stream_reasoning
        self.tool_call_parser_active = tool_call_parser_active
        self._prefix = prefix
        self._tools = tool_dicts(tools)
        field = reasoning_field(self.template)
        self.think_start_token = _first_literal(self.template.fields[field].open) if field else ""
        self.think_end_token = _think_end(self.template)
        self.think_start_self_label = ""
        self.think_excluded_tokens = None
        self.message_start_think_openers: list[str] = []
        self.answer_started = False  # no grammar here ends the calls at an answer
        self._stream: GenerationStream | None = None
        self._held = ""  # reasoning held back until the region closes (stream_reasoning=False)

    # What SGLang's serving layer asks for grammars: no grammar comes from chatparse.
    def starts_message(self, prefix: str) -> bool:
        return False

    def answer_opener(self, prefix: str) -> str:
        return ""

    def json_output_started(self, text: str) -> bool:
        stream = GenerationStream(self.template, self._prefix, new_call_id=_no_id, log=_quiet)
        stream.feed(text)
        return stream.reasoning_closed

    @property
    def _log(self) -> logging.Logger:
        return _quiet if self.tool_call_parser_active else logger

    def detect_and_parse(self, text: str) -> ReasoningResult:
        parsed = parse_generation(self.template, self._prefix, text, tools=self._tools, new_call_id=_no_id,
                                  log=self._log)
        # A text with no tool region goes on as its content, so that SGLang's tool step (which leaves a text
        # without calls as it is) returns the content.
        passthrough = self.tool_call_parser_active and _has_tool_region(parsed.message)
        return ReasoningResult(normal_text=text if passthrough else parsed.content or "",
                               reasoning_text=parsed.reasoning or "")

    def parse_streaming_increment(self, new_text: str) -> ReasoningResult:
        if self._stream is None:
            self._stream = GenerationStream(self.template, self._prefix, tools=self._tools, new_call_id=_no_id,
                                            log=self._log)
        if self._stream.finished:
            return ReasoningResult()
        return self._result(new_text, self._stream.feed(new_text), done=False)

    def finish(self) -> ReasoningResult:
        if self._stream is None or self._stream.finished:
            return ReasoningResult()
        return self._result("", self._stream.finish(), done=True)

    def _result(self, raw: str, delta: Delta, *, done: bool) -> ReasoningResult:
        reasoning = delta.reasoning
        if not self.stream_reasoning:
            assert self._stream is not None
            self._held += reasoning
            release = done or self._stream.reasoning_closed
            reasoning, self._held = (self._held, "") if release else ("", self._held)
        normal = raw if self.tool_call_parser_active else delta.content
        return ReasoningResult(normal_text=normal, reasoning_text=reasoning)


# --- tool calls --------------------------------------------------------------------------------------------


class ChatparseToolDetector(ResponseTemplateToolDetector):  # type: ignore[misc]
    """``--tool-call-parser chatparse``: the content and the calls of the raw text, parsed with the rendered
    prompt as prefix and the request's tools for typing. ``tool_index`` is the call's ordinal in the message.

    A call cut by the token limit or one that does not parse is never returned: it is left out and logged (on
    ``sglang.chatparse``), the calls beside it are kept. Calls stream whole at their close
    (``CHATPARSE_CALLS=buffered``, the default), so the streamed deltas add up to the non-streaming message;
    ``early`` streams the name and the arguments as they form."""

    constrains_every_turn = False

    def __init__(self, tokenizer: Any = None, prefix: str = "", tools: Any = None, constrained: bool = False,
                 **_sglang_options: Any) -> None:
        BaseFormatDetector.__init__(self)  # SGLang's response-template state is not used
        _partner_check("--reasoning-parser")
        self.template = template_for(tokenizer)
        self._tokenizer = tokenizer
        self.calls = call_mode()
        self._prefix = prefix
        self._tools = tool_dicts(tools)
        field = self.template.fields.get(TOOLS_FIELD)
        close = field.close if field is not None else None
        # SGLang's detokenizer keeps a stop token that closes a call (gpt-oss's <|call|>) in the text.
        self.tool_close_literals = list(close.literals) if close is not None and close.literals else []
        self.eot_token = self.tool_close_literals[0] if self.tool_close_literals else ""
        self.incomplete_tool_call_indices: set[int] = set()
        self._stream: GenerationStream | None = None
        self._arguments: dict[int, str] = {}  # streamed arguments per call (early calls)

    def has_tool_call(self, text: str) -> bool:
        return _has_tool_region(self._parse_quietly(text).message)

    def detect_and_parse(self, text: str, tools: Any) -> ToolResult:
        parsed = parse_generation(self.template, self._prefix, text, tools=self._tools or tool_dicts(tools),
                                  new_call_id=_no_id, log=logger)
        calls = [ToolCallItem(tool_index=index, name=name, parameters=arguments)
                 for index, (_, name, arguments) in enumerate(parsed.calls)]
        return ToolResult(normal_text=parsed.content or "", calls=calls)

    def parse_streaming_increment(self, new_text: str, tools: Any) -> ToolResult:
        if self._stream is None:
            self._stream = GenerationStream(self.template, self._prefix, tools=self._tools or tool_dicts(tools),
                                            calls=self.calls, new_call_id=_no_id, log=logger)
        if self._stream.finished:
            return ToolResult()
        return self._result(self._stream.feed(new_text))

    def finish(self, tools: Any) -> ToolResult:
        if self._stream is None or self._stream.finished:
            return ToolResult()
        result = self._result(self._stream.finish())
        # A call sent as it formed whose arguments never completed: not a finished call (finish reason).
        self.incomplete_tool_call_indices = {index for index, text in self._arguments.items()
                                             if not _is_json(text)}
        return result

    def _result(self, delta: Delta) -> ToolResult:
        items = []
        for call in delta.calls:
            self._arguments[call.index] = self._arguments.get(call.index, "") + call.arguments
            items.append(ToolCallItem(tool_index=call.index, name=call.name if call.id is not None else None,
                                      parameters=call.arguments))
        return ToolResult(normal_text=delta.content, calls=items)

    # What SGLang's serving layer asks for grammars: the template's grammar as a structural tag.
    def supports_structural_tag(self) -> bool:
        """Whether the template has a grammar. SGLang then reads the calls of a ``required`` or named request
        with this detector (in the model's own format) rather than as a JSON array."""
        return _grammar_problem(self.template) is None

    def open_call_closer(self, text: str) -> str | None:
        """The closer of a call that ``text`` leaves open at its end: the template's call closer whose
        addition completes a call (None: none does). Under a tool grammar SGLang keeps a stop token that is
        such a closer (gpt-oss's ``<|call|>``) and trims one that is not."""
        count = len(self._parse_quietly(text).calls)
        return next((closer for closer in self.tool_close_literals
                     if len(self._parse_quietly(text + closer).calls) > count), None)

    def _parse_quietly(self, text: str) -> Parsed:
        return parse_generation(self.template, self._prefix, text, tools=self._tools, new_call_id=_no_id,
                                log=_quiet)

    def get_structural_tag(self, tools: Any = None, tool_choice: Any = "auto", thinking_mode: bool = False,
                           parallel_tool_calls: bool = True, message_start: bool = False, **_options: Any) -> Any:
        """The template's grammar for these tools and this choice as xgrammar's ``StructuralTag`` (None from
        the message start: the reasoning detector never claims it, so SGLang does not ask for that one)."""
        if message_start:
            return None
        guarantee = _asked_guarantee(tool_choice, parallel_tool_calls, strict=False) or "auto"
        return self._structural_tag(tools, tool_choice, parallel_tool_calls, thinking_mode, guarantee=guarantee)

    def validate_structure_constraint_request(self, tool_choice: Any, parallel_tool_calls: bool,
                                              strict_requested: bool, *, tools: Any = None,
                                              thinking_mode: bool = False, **_options: Any) -> Any:
        """The constraint of a request that asks for a guarantee (``required``, a named tool, strict tools or
        ``SGLANG_TOOL_STRICT_LEVEL``, ``parallel_tool_calls=false``): the template's grammar as a structural
        tag, which SGLang applies from where reasoning ends. None for plain ``auto`` and ``none`` (free text,
        as SGLang's own parsers leave it). A guarantee no grammar can give here raises ``ValueError``, which
        SGLang answers with a 400 naming the fix."""
        guarantee = _asked_guarantee(tool_choice, parallel_tool_calls, strict_requested)
        if guarantee is None:
            return None
        return self._structural_tag(tools, tool_choice, parallel_tool_calls, thinking_mode, guarantee=guarantee)

    def _structural_tag(self, tools: Any, tool_choice: Any, parallel_tool_calls: bool, thinking_mode: bool, *,
                        guarantee: str) -> Any:
        backend = _grammar_backend()
        if backend not in (None, GRAMMAR_BACKEND):
            raise ValueError(f"the {NAME} tool-call parser enforces {guarantee} with an xgrammar structural tag, "
                             f"but this server runs --grammar-backend {backend}. Start SGLang with "
                             f"--grammar-backend {GRAMMAR_BACKEND} (its default), or use tool_choice='auto' with "
                             "non-strict tools.")
        choice = tool_choice.model_dump() if hasattr(tool_choice, "model_dump") else tool_choice
        try:
            grammar = tool_grammar(
                self.template, tool_dicts(tools) or self._tools or [], tool_choice=choice or "auto",
                parallel_tool_calls=parallel_tool_calls is not False,
                special_tokens=template_special_tokens(self._tokenizer, self.template),
                reasoning=thinking_mode or not _grammar_waits_for_reasoning(self.template))
            tag = grammar.structural_tag
        except ChatparseError as exc:
            raise ValueError(f"the {NAME} tool-call parser cannot guarantee {guarantee} with this model's template "
                             f"and these tools ({exc.code}): {exc}. Use tool_choice='auto' with non-strict "
                             "tools.") from exc
        from xgrammar import StructuralTag

        return StructuralTag.model_validate(tag)


GRAMMAR_BACKEND = "xgrammar"  # the grammar backend that compiles the tag (SGLang's llguidance takes legacy tags)
_PROBE_TOOL = {"type": "function", "function": {"name": "probe", "parameters": {"type": "object"}}}
_PROBED: dict[int, tuple[CompiledTemplate, str | None]] = {}


def _grammar_problem(template: CompiledTemplate) -> str | None:
    """Why ``template`` has no grammar (None: it has one), found once per template."""
    probed = _PROBED.get(id(template))
    if probed is not None and probed[0] is template:
        return probed[1]
    problem = None
    try:
        _ = tool_grammar(template, [_PROBE_TOOL], tool_choice="required", reasoning=False).structural_tag
    except ChatparseError as exc:
        problem = str(exc)
    _PROBED[id(template)] = (template, problem)
    return problem


def _asked_guarantee(tool_choice: Any, parallel_tool_calls: bool, strict: bool) -> str | None:
    """The guarantee a request asks a grammar for (None: plain ``auto`` or ``none``, nothing to enforce)."""
    if tool_choice == "required":
        return "tool_choice='required'"
    if tool_choice not in ("auto", "none", None):
        return "a named tool_choice"
    if tool_choice == "none":
        return None
    if strict:
        return "strict tools"
    if parallel_tool_calls is False:
        return "parallel_tool_calls=false"
    return None


def _is_json(text: str) -> bool:
    with contextlib.suppress(ValueError):
        return json.loads(text) is not None or text.strip() == "null"
    return False


# --- registration --------------------------------------------------------------------------------------------


def register() -> None:
    """Add the detectors to SGLang's parser maps under ``chatparse`` (idempotent). SGLang's argument parser
    reads its ``--tool-call-parser`` / ``--reasoning-parser`` choices from these maps."""
    FunctionCallParser.ToolCallParserEnum[NAME] = ChatparseToolDetector
    ReasoningParser.DetectorMap[NAME] = ChatparseReasoningDetector


__all__ = ["ChatparseReasoningDetector", "ChatparseToolDetector", "register", "template_for"]
