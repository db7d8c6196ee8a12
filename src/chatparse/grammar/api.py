"""``tool_grammar``: the grammar of one request (template, tools, tool choice), cached."""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chatparse.engine import ResponseParser
from chatparse.grammar.build import CHOICES, Builder, region_texts
from chatparse.grammar.ir import Grammar, Ref, seq
from chatparse.grammar.jsonschema import GrammarError
from chatparse.grammar.lark import to_lark
from chatparse.grammar.structural_tag import to_structural_tag
from chatparse.template.compile import CompiledTemplate, load_template
from chatparse.tools.schema import Tool, as_tool

_CACHE: OrderedDict[str, ToolGrammar] = OrderedDict()
_CACHE_SIZE = 256
_LOCK = threading.Lock()


@dataclass(frozen=True)
class ToolGrammar:
    """The grammar of what a model may write after the prompt, up to and including the end of its turn.

    ``lark`` is llguidance's Lark dialect, ``gbnf`` llama.cpp's GBNF, ``structural_tag`` xgrammar's structural
    tag, each written on first use and then kept (a form that cannot be written, e.g. Lark for a special token
    given without its id, raises ``GrammarError`` there, not for the other forms). ``tool_choice`` is ``"auto"``, ``"required"``, ``"none"`` or
    the name of the one tool to call; ``reasoning`` says how the grammar starts: ``"open"`` (the prompt
    opened the reasoning block: free text up to its close first), ``"optional"`` (the model may open one)
    or ``"none"``. ``unenforced`` lists schema keywords a lenient grammar left free.
    """

    tool_choice: str
    parallel_tool_calls: bool
    reasoning: str
    tools: tuple[str, ...]
    unenforced: tuple[str, ...] = ()
    special_tokens: tuple[str, ...] = ()
    grammar: Grammar = field(default_factory=Grammar, repr=False, compare=False)
    token_ids: Mapping[str, int] = field(default_factory=dict, repr=False, compare=False)

    @property
    def _special(self) -> Collection[str]:
        """The special tokens as the writers take them (with their ids when given)."""
        return self.token_ids or self.special_tokens

    @functools.cached_property
    def lark(self) -> str:
        """The grammar in llguidance's Lark dialect (``special_tokens`` as ``<token>`` or ``<[id]>``)."""
        return to_lark(self.grammar, "turn", self._special)

    @functools.cached_property
    def gbnf(self) -> str:
        """The same grammar as llama.cpp's GBNF (start rule ``root``; ``special_tokens`` as ``<token>``),
        written on first use: free text and regex terminals become rules of characters."""
        from chatparse.grammar.gbnf import to_ebnf

        return to_ebnf(self.grammar, Ref("turn"), dialect="gbnf", special=self._special)

    @functools.cached_property
    def structural_tag(self) -> dict[str, Any]:
        """xgrammar's structural tag (``{"type": "structural_tag", "format": ...}``, JSON-ready): what vLLM's
        ``structured_outputs.structural_tag`` and SGLang take; written on first use."""
        return to_structural_tag(self.grammar, "turn", self.special_tokens)


def _choice(tool_choice: Any, names: list[str]) -> tuple[str, str | None]:
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool_choice.get("name")
        if not isinstance(name, str):
            raise GrammarError(f"tool_choice {tool_choice!r} names no function; expected 'auto', 'required', "
                               "'none' or {'type': 'function', 'function': {'name': ...}}", code="bad_tool_choice")
        tool_choice = name
    if not isinstance(tool_choice, str):
        raise GrammarError(f"tool_choice must be a string or a dict, found {type(tool_choice).__name__}",
                           code="bad_tool_choice")
    if tool_choice in CHOICES:
        return tool_choice, None
    if tool_choice not in names:
        raise GrammarError(f"tool_choice names {tool_choice!r}, which is not one of the tools {names}; expected "
                           f"one of {list(CHOICES)} or a tool's name", code="unknown_tool",
                           field=tool_choice)
    return "named", tool_choice


def _reasoning_state(template: CompiledTemplate, builder: Builder, prefix: str) -> str:
    thinking = builder.plan.thinking
    if thinking is None:
        return "none"
    parser = ResponseParser(template, prefix=prefix)
    opened, closed = region_texts(thinking)
    # A prompt ending in the close itself may leave the parser's region open (a close pattern with more
    # alternatives waits for the next character): the written close decides.
    if parser.current_region == thinking.name and not prefix.rstrip().endswith(closed):
        return "open"
    if prefix.rstrip().endswith(opened):  # an open the parser holds back (its pattern may still go on)
        return "open"
    at = prefix.rfind(opened)
    if at >= 0 and prefix.find(closed, at + len(opened)) >= 0 and not prefix[at:].rstrip().endswith(opened):
        tail = prefix[prefix.find(closed, at) + len(closed):]
        if not tail.strip() or tail.isspace():
            return "closed"
    return "optional"


def tool_grammar(
    template: Any,
    tools: Iterable[Any],
    *,
    tool_choice: Any = "auto",
    parallel_tool_calls: bool = True,
    prefix: str = "",
    special_tokens: Collection[str] | Mapping[str, int] = (),
    lenient: bool = False,
    reasoning: bool = True,
) -> ToolGrammar:
    """The grammar a constrained model follows so that it writes only what ``template``'s parser reads.

    ``template``: a built-in name, a dict or a compiled template. ``tools``: the request's tools (OpenAI
    dicts, functions, pydantic models). ``tool_choice``: ``"auto"`` (free text and calls, each call exact
    once started), ``"required"`` (at least one call), ``"none"`` (no call can start), or one tool's name (or
    OpenAI's ``{"type": "function", "function": {"name": ...}}``): exactly that call.
    ``parallel_tool_calls=False``: at most one call (exactly one under ``required``). ``prefix``: the prompt,
    as for parsing (it decides whether reasoning is already open). ``special_tokens``: markers that are
    single added tokens of the model's tokenizer (written as token references in the Lark and GBNF texts), or
    a mapping of each to its id in the tokenizer, which names a token not spelled ``<...>`` (MiniMax's
    ``[e~[``) by its id there; without its id such a token raises ``GrammarError`` (``special_token``).
    ``lenient``: leave schema keywords a grammar cannot enforce free (listed in ``unenforced``) instead
    of raising ``GrammarError``. ``reasoning=False``: the grammar starts after the reasoning block, where
    vLLM and SGLang start applying a grammar when a reasoning parser runs. Results are cached by all of
    these.
    """
    compiled = load_template(template)
    tool_list: list[Tool] = [as_tool(t) for t in tools]
    # (keys in their order: a schema's property order is the order the grammar writes them in)
    key = json.dumps([_template_key(template, compiled), [t.to_dict() for t in tool_list],
                      tool_choice, parallel_tool_calls, prefix,
                      sorted(special_tokens.items()) if isinstance(special_tokens, Mapping) else sorted(special_tokens),
                      lenient, reasoning],
                     default=str)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    names = [t.name for t in tool_list]
    choice, name = _choice(tool_choice, names)
    if choice != "none" and not tool_list:
        raise GrammarError(f"tool_choice {tool_choice!r} needs tools; none were given", code="no_tools")
    builder = Builder(compiled, tool_list, lenient=lenient)
    state = _reasoning_state(compiled, builder, prefix) if reasoning else "none"
    builder.grammar.rules["turn"] = seq(builder.reasoning(state),
                                        builder.answer(None if choice == "named" else choice, name,
                                                       parallel_tool_calls))
    result = ToolGrammar(
        tool_choice=name if name is not None else choice,
        parallel_tool_calls=parallel_tool_calls,
        reasoning=state,
        tools=tuple(names),
        unenforced=tuple(builder.schemas.unenforced),
        special_tokens=tuple(sorted(special_tokens)),
        grammar=builder.grammar,
        token_ids=dict(special_tokens) if isinstance(special_tokens, Mapping) else {},
    )
    with _LOCK:
        _CACHE[key] = result
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return result


def _template_key(template: Any, compiled: CompiledTemplate) -> Any:
    return template if isinstance(template, str) else compiled.to_dict()
