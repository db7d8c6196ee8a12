"""The structural tag (xgrammar's format tree) says what the Lark grammar says.

Without xgrammar (CI: it needs torch): the tree's shape, and its language, by flattening it back into one
GBNF text (tokens spelled as text, each ``grammar`` format's rules renamed apart) that llguidance reads:
random walks through the Lark grammar are admitted by the flattened tag and walks through the flattened tag
by the Lark grammar, for every built-in with a grammar. With xgrammar (the vLLM venv): the tag compiles for
every built-in with xgrammar's compiler and a tokenizer with the family's special tokens, and the turns the
family's real chat template renders are accepted token by token.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Iterator
from typing import Any

import llguidance
import pytest

import chatparse
from chatparse.grammar import GrammarError, tool_grammar
from chatparse.grammar.gbnf import quote, to_ebnf
from chatparse.grammar.ir import Grammar, Lit, Ref, Rep, Until, rx_escape, seq
from chatparse.grammar.structural_tag import to_structural_tag
from chatparse.template.compile import load_template
from chatparse.templates import get_template
from tests.grammar.gbnf_lark import gbnf_to_lark
from tests.grammar.test_builtins import (
    NO_FREE_FORM_OBJECTS,
    STRESS_TOOLS,
    _check_message,
    _free_form_objects_declared,
    _grammar_families,
    _prefix,
    _rendered,
    _turns,
)
from tests.grammar.token_walk import XGrammarMatcher, assert_token_walks_parse_back
from tests.grammar.walk import accepts, walk
from tests.tokens import template_markers

WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def _specials(family: str) -> list[str]:
    """The markers a real tokenizer of the family has as added tokens (special or not)."""
    special, tags = template_markers(get_template(family))
    return special + tags


def _formats(fmt: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield fmt
    for child in fmt.get("elements", ()):
        yield from _formats(child)
    if "content" in fmt:
        yield from _formats(fmt["content"])


# --- the tree's shape ---------------------------------------------------------------------------------


def test_markers_are_text_and_the_turns_end_is_split_out() -> None:
    specials = ["<tool_call>", "</tool_call>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>"]
    grammar = tool_grammar("qwen3", WEATHER, tool_choice="required", special_tokens=specials)
    tag = grammar.structural_tag
    assert tag["type"] == "structural_tag" and tag == json.loads(json.dumps(tag))
    formats = list(_formats(tag["format"]))
    assert not [f for f in formats if f["type"] == "token"]  # xgrammar 0.2.8's cache mixes token formats up
    ends = [f["content"]["value"] for f in formats if f["type"] == "optional" and f["content"]["type"] == "const_string"]
    assert sorted(ends) == ["<|endoftext|>", "<|im_end|>"]  # the turn's last token, optional
    assert any('"<tool_call>' in f.get("grammar", "") for f in formats)  # other markers: text in the grammar


def _depth(node: Any) -> int:
    """How deep JSON objects and arrays nest (vLLM refuses a structural tag deeper than 80)."""
    if isinstance(node, dict):
        return 1 + max((_depth(v) for v in node.values()), default=0)
    if isinstance(node, list):
        return 1 + max((_depth(v) for v in node), default=0)
    return 0


def test_a_grammar_without_special_tokens_is_one_grammar_format() -> None:
    tag = tool_grammar("qwen3", WEATHER).structural_tag
    assert tag["format"]["type"] == "grammar" and tag["format"]["grammar"].startswith("root ::= ")


def test_the_token_that_ends_the_turn_is_optional() -> None:
    # a stop token never matches a token format in xgrammar (it ends the output where the grammar may end)
    grammar = tool_grammar("gpt_oss", WEATHER, tool_choice="required", special_tokens=_specials("gpt_oss"))
    formats = list(_formats(grammar.structural_tag["format"]))
    assert [f for f in formats if f["type"] == "optional" and f["content"].get("value") == "<|call|>"]
    assert not [f for f in formats if f.get("value") == "<|call|>"  # only as the optional's content
                and not any(o.get("content") is f for o in formats)]
    lark = _flat_lark(grammar.structural_tag)  # <|end|> ends the analysis message, followed by more: required
    call = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}')
    assert accepts(lark, call)[0] and accepts(lark, call + "<|call|>")[0]
    assert accepts(lark, "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant" + call)[0]
    assert not accepts(lark, "<|channel|>analysis<|message|>Hm.<|start|>assistant" + call)[0]


def test_text_before_a_token_holds_no_such_token() -> None:
    grammar = Grammar({"turn": seq(Until(rx_escape("<|end|>")), Lit("done"))})
    tag = to_structural_tag(grammar, "turn", ["<|end|>"])
    lark = _flat_lark(tag)
    assert accepts(lark, "abc<|end|>done")[0]
    assert not accepts(lark, "a<|end|>b<|end|>done")[0]


@pytest.mark.parametrize(("low", "high"), [(1, 3), (0, None), (2, None), (0, 2)])
def test_the_last_repetition_ends_the_turn(low: int, high: int | None) -> None:
    """``(x<t>){low,high}`` at the end of the turn: the last ``<t>`` may be left to a stop token."""
    tag = to_structural_tag(Grammar({"turn": Rep(Lit("x<t>"), low, high)}), "turn", ["<t>"])
    lark = _flat_lark(tag)
    for count in range(6):
        within = low <= count and (high is None or count <= high)
        assert accepts(lark, "x<t>" * count)[0] is within, count
        if count:
            assert accepts(lark, "x<t>" * (count - 1) + "x")[0] is within, count
    assert not accepts(lark, "xx")[0]


def test_a_rule_that_reaches_itself_through_a_token_is_refused() -> None:
    grammar = Grammar({"turn": seq(Lit("<t>"), Rep(Ref("turn"), 0, 1))})
    with pytest.raises(GrammarError) as info:
        to_structural_tag(grammar, "turn", ["<t>"])
    assert info.value.code == "recursive_token_rule"


# --- the language, through llguidance -----------------------------------------------------------------

_LEXEME = re.compile(r'"(?:[^"\\]|\\.)*"|\[(?:[^\]\\]|\\.)*\]|[A-Za-z][A-Za-z0-9_-]*|.', re.S)
_CHAR = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)|.", re.S)


def _chars(literal: str) -> str:
    """A quoted literal as a sequence of one-character literals: llguidance's lexer reads the longest lexeme
    without backtracking, so a marker literal beside free text spelled character by character would cut the
    text wrongly (``</s>`` against ``<`` then ``/``)."""
    units = _CHAR.findall(literal[1:-1])
    return "(" + " ".join(f'"{u}"' for u in units) + ")" if len(units) > 1 else literal


def _lexeme(match: str, prefix: str) -> str:
    if match[0].isalpha():
        return prefix + match
    return _chars(match) if match[0] == '"' else match


def flatten(tag: dict[str, Any]) -> str:
    """One GBNF text for the whole tag: tokens as their text, each grammar format's rules prefixed apart."""
    rules: list[str] = []

    def expr(fmt: dict[str, Any]) -> str:
        kind = fmt["type"]
        if kind == "const_string":
            return _chars(quote(fmt["value"])) if fmt["value"] else '""'
        if kind == "token":
            return _chars(quote(fmt["token"]))
        if kind == "grammar":
            prefix = f"g{len(rules)}-"
            rules.append("".join(_lexeme(m, prefix) for m in _LEXEME.findall(fmt["grammar"])))
            return prefix + "root"
        if kind == "sequence":
            return "(" + " ".join(expr(f) for f in fmt["elements"]) + ")"
        if kind == "or":
            return "(" + " | ".join(expr(f) for f in fmt["elements"]) + ")"
        suffix = {"optional": "?", "star": "*", "plus": "+"}[kind]
        return f"({expr(fmt['content'])}){suffix}"

    root = expr(tag["format"])
    return "\n".join([f"root ::= {root}", *rules]) + "\n"


# The flattened tag writes free text one rule per character (right-recursive): Earley rows grow with the text.
LIMITS = llguidance.LLParserLimits(max_items_in_row=200_000, step_max_items=2_000_000)


def _flat_lark(tag: dict[str, Any]) -> str:
    return gbnf_to_lark(flatten(tag))


def _reference_lark(grammar: Grammar) -> str:
    """The whole grammar as one GBNF text with no special tokens, read the same way as a flattened tag."""
    text = to_ebnf(grammar, Ref("turn"), dialect="gbnf")
    return gbnf_to_lark("".join(_lexeme(m, "") for m in _LEXEME.findall(text)))


@pytest.mark.parametrize("family", _grammar_families())
def test_the_structural_tag_says_what_the_lark_grammar_says(family: str) -> None:
    """Walks through the Lark grammar are admitted by the tag; walks through the tag are admitted by the
    same grammar written whole (llguidance's lexer makes the Lark form narrower in places: it reads
    ``/[ \\t\\n]{1,8}/`` greedily before ``"\\n</tool_calls>"``) and parse back into the calls the choice demands."""
    template = get_template(family)
    prefix = _prefix(family)
    specials = _specials(family)
    rng = random.Random(family)
    tools = STRESS_TOOLS
    for choice in ("auto", "required", "plan_trip"):
        grammar = tool_grammar(template, tools, tool_choice=choice, prefix=prefix, special_tokens=specials)
        plain = tool_grammar(template, tools, tool_choice=choice, prefix=prefix)
        assert _depth(grammar.structural_tag) <= 80
        flat = _flat_lark(grammar.structural_tag)
        whole = _reference_lark(plain.grammar)
        literals = sorted(grammar.grammar.literals() | set(specials))
        for _ in range(3):
            text = walk(plain.lark, rng, literals)
            if text is not None:
                ok, why = accepts(flat, text, LIMITS)
                assert ok, f"{family} {choice}: the tag rejects the Lark walk {text!r}: {why}"
            text = walk(flat, rng, literals, limits=LIMITS)
            if text is not None:
                # the tag may end before the turn's last token (a stop token ends the output there)
                ok, why = accepts(whole, text, LIMITS)
                assert ok or any(accepts(whole, text + tok, LIMITS)[0] for tok in specials), \
                    f"{family} {choice}: the whole grammar rejects the tag's walk {text!r}: {why}"
                message = chatparse.parse_response(text, template, prefix=prefix, tools=tools)
                _check_message(message, choice, True)


# --- xgrammar itself (the vLLM venv) ------------------------------------------------------------------


def _xgrammar_tokenizer(family: str) -> tuple[Any, list[int]]:
    """The family's test tokenizer, and as stop tokens its end-of-turn markers (as a real model's
    generation config lists them); a family whose end marker is text (MiniMax M2's ``[e~[``) gets an
    end-of-sequence token of its own."""
    from tests.integrations.tokenizers import family_tokenizer

    tokenizer = family_tokenizer(family)
    ends = [tokenizer.convert_tokens_to_ids(e) for e in load_template(family).ext.end if e in _specials(family)]
    stops = [i for i in ends if isinstance(i, int) and i != tokenizer.unk_token_id]
    if not stops:
        tokenizer = copy.deepcopy(tokenizer)
        tokenizer.add_special_tokens({"eos_token": "<test_eos>"})
        stops = [tokenizer.eos_token_id]
    return tokenizer, stops


@pytest.mark.parametrize("family", [f for f in _grammar_families() if _turns(f)])
def test_xgrammar_accepts_what_the_chat_template_renders(family: str) -> None:
    """The tag, compiled as vLLM compiles it (and checked as vLLM checks it), accepts the rendered turns token
    by token."""
    xgr = pytest.importorskip("xgrammar")
    template = get_template(family)
    tokenizer, stops = _xgrammar_tokenizer(family)
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer), stop_token_ids=stops)
    compiler = xgr.GrammarCompiler(info, cache_enabled=False)
    tools = _rendered(family)["tools_schema"]  # type: ignore[index]
    if family in NO_FREE_FORM_OBJECTS:
        tools = _free_form_objects_declared(family, tools)
    for prompt, text in _turns(family):
        choices = ["auto"]
        message = chatparse.parse_response(text, template, prefix=prompt, tools=tools)
        if message.get("tool_calls") and not message.get("content"):
            choices.append("required")
        for choice in choices:
            grammar = tool_grammar(template, tools, tool_choice=choice, prefix=prompt,
                                   special_tokens=_specials(family))
            tag = json.dumps(grammar.structural_tag)
            xgr.Grammar.from_structural_tag(tag)  # vLLM's check of a request's tag (no tokenizer)
            matcher = xgr.GrammarMatcher(compiler.compile_structural_tag(tag))
            ids = tokenizer.encode(text, add_special_tokens=False)
            for at, token in enumerate(ids):
                assert matcher.accept_token(token), \
                    f"{choice}: xgrammar rejects {tokenizer.decode(ids[:at + 1])!r} (of {text!r})"
            assert matcher.is_terminated() or matcher.is_completed(), f"{choice}: the turn cannot end after {text!r}"


def test_tags_compiled_one_after_another_mask_what_they_accept() -> None:
    """vLLM compiles every request's tag with one caching compiler: the tags of several requests, compiled in
    turn, still allow exactly the tokens their matchers accept (``token`` formats would not, see the notes of
    ``structural_tag``)."""
    xgr = pytest.importorskip("xgrammar")
    tokenizer, stops = _xgrammar_tokenizer("gpt_oss")
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=len(tokenizer), stop_token_ids=stops)
    compiler = xgr.GrammarCompiler(info, cache_enabled=True)
    tags = [tool_grammar("gpt_oss", WEATHER, tool_choice=choice, special_tokens=_specials("gpt_oss"),
                         reasoning=False).structural_tag for choice in ("required", "get_weather", "auto")]
    text = ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}'
    stop_texts = tokenizer.convert_ids_to_tokens(stops)
    for tag in tags:
        matcher = XGrammarMatcher(tokenizer, json.dumps(tag), stop_texts, compiler)
        for token in tokenizer.encode(text, add_special_tokens=False):
            assert token in matcher.allowed() and matcher.consume([token])


@pytest.mark.parametrize("family", _grammar_families())
def test_what_xgrammar_lets_the_model_write_parses_back(family: str) -> None:
    """Random walks with xgrammar's matcher and the family's tokenizer (markers as tokens, the turn's end
    tokens as stop tokens, left out of the text as vLLM leaves them) parse back into the calls each choice
    demands, with schema-valid arguments."""
    pytest.importorskip("xgrammar")
    tokenizer, stops = _xgrammar_tokenizer(family)
    stop_texts = [tokenizer.convert_ids_to_tokens(i) for i in stops]
    assert_token_walks_parse_back(family, tokenizer, lambda grammar: XGrammarMatcher(
        tokenizer, json.dumps(grammar.structural_tag), stop_texts), _specials(family))
