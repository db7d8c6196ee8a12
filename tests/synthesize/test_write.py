"""Synthesized templates carry the form their model writes calls in (``chatparse.write``), so that
``tool_grammar`` builds their grammar: random walks through it parse back (as for the built-ins,
tests/grammar/test_builtins.py) and every turn the chat template itself renders is admitted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import jinja2
import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from chatparse.synthesize import SynthesizedTemplate, synthesize_template
from chatparse.synthesize import probes as P
from chatparse.synthesize.write import NoWrittenForm, _index_form, spell_calls, written_form
from tests.grammar.test_builtins import STRESS_TOOLS, assert_walks_parse_back
from tests.grammar.walk import accepts
from tests.synthesize.families import FAMILIES, source

Get = Callable[[str], SynthesizedTemplate]

# The forms of the families whose built-ins write calls with a placeholder or a body of their own: the
# synthesis finds the same ones in the renders.
FORMS: dict[str, dict[str, Any]] = {
    # '{index}': a call counter
    "kimi_k2": {"call": "<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>{body}"
                        "<|tool_call_end|>", "body": "json-arguments",
                "group": ["<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"]},
    # '{string}': DSML's string="true" (raw text) / "false" (JSON) attribute
    "deepseek_v3_2": {"call": '<｜DSML｜invoke name="{name}">\n{body}</｜DSML｜invoke>', "body": "xml-parameters",
                      "parameter": '<｜DSML｜parameter name="{key}" string="{string}">{value}</｜DSML｜parameter>\n',
                      "separator": "\n", "group": ["<｜DSML｜function_calls>\n", "\n</｜DSML｜function_calls>"]},
    # keys sorted, as the template writes them
    "gemma4": {"call": "<|tool_call>call:{name}{body}<tool_call|>", "body": "bare-key-object",
               "values": {"order": "sorted"}},
}
# Forms the grammar builder of this branch cannot write yet, and why.
PENDING: dict[str, str] = {}
GRAMMAR = sorted(set(FAMILIES) - set(PENDING))

HEAD = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
TAIL = "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
# Small templates of syntaxes the family templates do not use: (source, whether a form is written).
INLINE: dict[str, tuple[str, bool]] = {
    "json_array": (HEAD + "{% if m.tool_calls %}<tools>[{% for c in m.tool_calls %}{\"name\": \"{{ c.function.name }}"
                   "\", \"arguments\": {{ c.function.arguments | tojson }}}{% if not loop.last %}, {% endif %}"
                   "{% endfor %}]</tools>{% endif %}" + TAIL, True),
    # the calls' close ends the turn (Apriel's '</tool_calls>'): the grammar still closes the array
    "json_array_ends_turn": ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}{% if m.tool_calls %}"
                             "<tools>[{% for c in m.tool_calls %}{\"name\": \"{{ c.function.name }}\", "
                             "\"arguments\": {{ c.function.arguments | tojson }}}{% if not loop.last %}, {% endif %}"
                             "{% endfor %}]</tools>{% else %}<|im_end|>\n{% endif %}{% endfor %}"
                             "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}", True),
    "python_calls": (HEAD + "{% if m.tool_calls %}[{% for c in m.tool_calls %}{{ c.function.name }}("
                     "{% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }}{% if not loop.last %}, "
                     "{% endif %}{% endfor %}){% if not loop.last %}, {% endif %}{% endfor %}]{% endif %}" + TAIL, False),
}
_INLINE_CACHE: dict[str, SynthesizedTemplate] = {}


def _inline(name: str) -> SynthesizedTemplate:
    if name not in _INLINE_CACHE:
        _INLINE_CACHE[name] = synthesize_template(INLINE[name][0], verify_messages=20)
    return _INLINE_CACHE[name]


def _get(synthesized: Get, name: str) -> tuple[SynthesizedTemplate, str, dict[str, Any]]:
    """The synthesis of ``name`` (a family or an inline template), its source and its special tokens."""
    if name in INLINE:
        return _inline(name), INLINE[name][0], {}
    tokens = {k: v for k, v in FAMILIES[name]["tokens"].items() if k != "end_tokens"}
    return synthesized(name), source(name), tokens


def _prompt(result: SynthesizedTemplate) -> P.Prompt:
    """The prompt with reasoning switched on where the template has a switch, else the default one."""
    on = [p for p in result.prompts if p.label in ("thinking=True", "enable_thinking=True")]
    return on[0] if on else next(p for p in result.prompts if p.label == "default")


def test_a_form_spells_calls_as_rendered() -> None:
    form = {"call": "<c>{name}:{index}{body}</c>", "group": ["<all>", "</all>"], "separator": "\n"}
    text = spell_calls(form, [P.CALL_A, P.CALL_NONE], lambda c: str(len(c.arguments)))
    assert text == "<all><c>get_weather:02</c>\n<c>get_time:10</c></all>"


def test_a_counter_after_the_name_is_an_index() -> None:
    assert _index_form([":0<|arg|>", ":1<|arg|>"]) == ":{index}<|arg|>"
    assert _index_form(["<sep>", "<sep>"]) == "<sep>"
    with pytest.raises(NoWrittenForm, match="different texts after their names"):
        _index_form([":7<|arg|>", ":3<|arg|>"])  # digits that differ but do not count the calls
    with pytest.raises(NoWrittenForm):
        _index_form(["<a>", "<b>"])


def test_a_form_that_does_not_spell_the_render_is_refused() -> None:
    """A section whose second call is written differently from the first (a call form cannot say so)."""
    from chatparse.synthesize.calls import CallFormat, Sections
    from chatparse.synthesize.text import Lexer

    one = '<c>{"name": "get_weather", "arguments": {"city": "Seoul", "days": 2}}</c>'
    two = one + '<d>{"name": "write_file", "arguments": {"path": "notes/a.txt", "content": "first line"}}</d>'
    calls = CallFormat("json-object", item_open="<c>", item_close="</c>",
                       json_keys={"name_key": "name", "arguments_key": "arguments"})
    with pytest.raises(NoWrittenForm, match="spells"):
        written_form(calls, Sections(one, two, None, None), Lexer([]))
    form = written_form(replace(calls, multiple=False), Sections(one, None, None, None), Lexer([]))
    assert form == {"call": '<c>{"name": "{name}", "arguments": {body}}</c>', "body": "json-arguments"}


def test_harmony_is_a_turn_of_messages(synthesized: Get) -> None:
    """gpt-oss: after reasoning the template writes the assistant header again and the answer on its final
    channel; a call is a message of its own, written after the header as after the prompt (a space first)."""
    fields = synthesized("gpt_oss")["fields"]
    assert fields["content"]["chatparse"]["write"] == {"open": "<|channel|>final<|message|>", "close": "<|return|>",
                                                       "layout": "messages", "header": "<|start|>assistant"}
    assert fields["tool_calls"]["chatparse"]["write"]["call"] == \
        " to=functions.{name}<|channel|>commentary json<|message|>{body}<|call|>"
    for name in sorted(set(FAMILIES) - {"gpt_oss"}):
        assert "write" not in synthesized(name)["fields"]["content"]["chatparse"], name


@pytest.mark.parametrize("name", sorted(FORMS))
def test_forms_the_builder_gets_elsewhere(synthesized: Get, name: str) -> None:
    assert synthesized(name)["fields"]["tool_calls"]["chatparse"]["write"] == FORMS[name]


@pytest.mark.parametrize("name", sorted(n for n, (_, written) in INLINE.items() if not written))
def test_no_form_where_no_body_kind_fits(name: str) -> None:
    result = _inline(name)
    assert result.exact
    assert "write" not in result["fields"]["tool_calls"]["chatparse"]
    assert any("no written form" in line for _, line in result.format.evidence)
    with pytest.raises(GrammarError) as info:
        tool_grammar(dict(result), STRESS_TOOLS)
    assert info.value.code == "no_write_form"


WALKED = GRAMMAR + sorted(n for n, (_, written) in INLINE.items() if written)
# The grammar ends a turn with the template's first end marker; a call turn the chat template ends with
# another one (the calls' close, after content's '<|im_end|>') is written without it.
OTHER_END = {"json_array_ends_turn"}


def test_a_close_that_ends_the_turn_is_not_in_the_group() -> None:
    """The calls' close ends the turn: the group keeps the array's ']' and leaves the end marker to the turn."""
    result = _inline("json_array_ends_turn")
    assert "</tools>" in result["chatparse"]["end"]
    assert result["fields"]["tool_calls"]["chatparse"]["write"]["group"] == ["<tools>[", "]"]


@pytest.mark.parametrize("name", WALKED)
def test_random_walks_parse_back(synthesized: Get, name: str) -> None:
    result = _get(synthesized, name)[0]
    template = dict(result)
    assert "write" in template["fields"]["tool_calls"]["chatparse"]  # written as rendered, not a derived default
    prefix = _prompt(result).text
    assert_walks_parse_back(template, prefix, name)


MESSAGES: list[dict[str, Any]] = [
    {"content": P.CONTENT}, {"content": P.CONTENT, "reasoning": P.REASONING}, {"calls": [P.CALL_A]},
    {"calls": [P.CALL_A], "reasoning": P.REASONING}, {"calls": [P.CALL_A, P.CALL_B]}, {"calls": [P.CALL_NONE]},
    {"calls": [P.CALL_TYPED]}, {"calls": [P.CALL_B], "content": P.CONTENT},
]


def _turns(result: SynthesizedTemplate, chat_template: str,
           tokens: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(prompt, generated turn up to its end marker, has calls) for each message the chat template renders
    after each generation prompt it continues."""
    from transformers.utils.chat_template_utils import render_jinja_template

    base = P.base(result.format.with_system)
    ends = result.get("chatparse", {}).get("end", [])
    turns = []
    for prompt in result.prompts:
        if prompt.after_tool:
            continue
        for spec in MESSAGES:
            message = P.assistant(result.format.form, **spec)
            try:
                rendered = render_jinja_template(conversations=[[*base, message]], tools=P.TOOLS,
                                                 chat_template=chat_template, **tokens,
                                                 **prompt.switches)[0][0]  # type: ignore[index]
            except jinja2.TemplateError:  # a message the template refuses (Llama 3: two calls)
                continue
            if not rendered.startswith(prompt.text):
                continue
            text = rendered[len(prompt.text):]
            found = [(text.find(e), e) for e in ends if e in text]
            if found:
                at, marker = min(found)
                text = text[: at + len(marker)]
            turns.append((prompt.text, text, bool(spec.get("calls"))))
    return turns


@pytest.mark.parametrize("name", [n for n in WALKED if n not in OTHER_END])
def test_the_grammar_admits_what_the_chat_template_renders(synthesized: Get, name: str) -> None:
    result, chat_template, tokens = _get(synthesized, name)
    template = dict(result)
    turns = _turns(result, chat_template, tokens)
    assert any(calls for _, _, calls in turns)
    for prompt, text, has_calls in turns:
        ok, why = accepts(tool_grammar(template, P.TOOLS, prefix=prompt).lark, text)
        assert ok, f"auto grammar rejects {text!r} after {prompt[-40:]!r}: {why}"
        message = chatparse.parse_response(text, template, prefix=prompt, tools=P.TOOLS)
        if has_calls and not message.get("content"):
            ok, why = accepts(tool_grammar(template, P.TOOLS, tool_choice="required", prefix=prompt).lark, text)
            assert ok, f"required grammar rejects {text!r}: {why}"
