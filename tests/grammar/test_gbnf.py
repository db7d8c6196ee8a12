"""``ToolGrammar.gbnf`` (llama.cpp) and the xgrammar EBNF dialect write the grammar's rules exactly: for every
built-in, the GBNF (read back by llguidance's GBNF reader) admits the chat template's real renders and its
random walks parse back as the Lark ones do; for families with intricate free text, walks through either
form are admitted by the other; random regex terminals mean the same in both forms; and, where xgrammar is
installed, its dialect compiles and admits the real renders."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatparse.grammar import GrammarError, ToolGrammar, tool_grammar
from chatparse.grammar.gbnf import char_class, quote, to_ebnf
from chatparse.grammar.ir import Grammar, Lit, Ref, Rep, Rx, Seq, Until, rx_escape
from chatparse.grammar.lark import to_lark
from chatparse.templates import get_template
from tests.grammar.gbnf_lark import gbnf_to_lark, left_recursive_rules
from tests.grammar.test_builtins import (
    STRESS_TOOLS,
    _free_text_stops,
    _grammar_families,
    _prefix,
    _rendered,
    _turns,
    assert_admits_renders,
    assert_walks_parse_back,
)
from tests.grammar.walk import accepts, walk

# Every built-in's grammar has a GBNF form (keys and call openers are written without \w, whose Unicode tables
# no character class here can copy exactly; regular.py refuses it: test_regular.py).


def gbnf_form(grammar: ToolGrammar) -> str:
    return gbnf_to_lark(grammar.gbnf)


def _families() -> list[str]:
    return _grammar_families()


@pytest.mark.parametrize("family", [f for f in _families() if _turns(f)])
def test_gbnf_admits_what_the_chat_template_renders(family: str) -> None:
    assert_admits_renders(family, gbnf_form)


@pytest.mark.parametrize("family", _grammar_families())
def test_random_walks_through_gbnf_parse_back(family: str) -> None:
    template = get_template(family)
    options: dict[str, Any] = {"choices": [("auto", True), ("required", False), ("plan_trip", True)]}
    assert_walks_parse_back(template, _prefix(family), f"gbnf {family}", _free_text_stops(template),
                            form=gbnf_form, walks=2, **options)


@pytest.mark.parametrize("family", _families())
def test_gbnf_has_no_left_recursion(family: str) -> None:  # llama.cpp refuses a left-recursive grammar
    assert left_recursive_rules(tool_grammar(family, STRESS_TOOLS, prefix=_prefix(family)).gbnf) == []


@pytest.mark.parametrize("family", ["qwen3_coder", "gpt_oss", "deepseek_v3.2", "glm47"])
def test_gbnf_and_lark_admit_each_others_walks(family: str) -> None:
    template = get_template(family)
    rng = random.Random(family)
    for choice in ("auto", "required"):
        grammar = tool_grammar(template, STRESS_TOOLS, tool_choice=choice, prefix=_prefix(family))
        gbnf = gbnf_form(grammar)
        literals = sorted(grammar.grammar.literals() | _free_text_stops(template))
        for source, target, name in ((grammar.lark, gbnf, "gbnf"), (gbnf, grammar.lark, "lark")):
            for _ in range(4):
                text = walk(source, rng, literals, steps=1200)
                if text is not None:
                    ok, why = accepts(target, text)
                    assert ok, f"{family} {choice}: the {name} grammar rejects {text!r}: {why}"


def test_keys_and_openers_with_non_ascii_names_still_have_a_gbnf_form() -> None:
    tools = [{"type": "function", "function": {"name": "città", "parameters": {"type": "object", "properties": {
        "città": {"type": "string"}, "free": {"type": "object"}}}}}]
    for family in ("functiongemma", "gemma4", "llama4_pythonic"):
        for choice in ("auto", "required"):
            assert tool_grammar(family, tools, tool_choice=choice).gbnf.startswith("root ::= ")


def test_left_recursion_is_found() -> None:
    assert left_recursive_rules('root ::= a "x"\na ::= b? a "y" | "z"\nb ::= "q"') == ["a"]
    assert left_recursive_rules('root ::= a "x"\na ::= "y" a | "z"') == []
    assert left_recursive_rules('root ::= ([a]*)* "x"') == ["root"]
    assert left_recursive_rules('root ::= ([a]*){0,3} "x"*') == []


def test_special_tokens_are_token_references() -> None:
    # text before a stop that is a special token: any text without the excludes, then the token itself
    until = Until(rx_escape("<|call|>"), excludes=(rx_escape("<|end|>"),))
    grammar = Grammar({"turn": Seq((Lit("hi<|end|>"), until))})
    gbnf = to_ebnf(grammar, Ref("turn"), dialect="gbnf", special=["<|end|>", "<|call|>"])
    found = re.search(r'^turn ::= "hi" <\|end\|> (text-\d+) <\|call\|>$', gbnf, re.M)
    assert found, gbnf
    lark = gbnf_to_lark(gbnf.replace(" <|call|>", "").replace(" <|end|>", ' "<|end|>"'))
    for text, ok in (("hi<|end|>x<|call|>y", True), ("hi<|end|>", True), ("hi<|end|>a<|end|>", False)):
        assert accepts(lark, text)[0] is ok, text
    with pytest.raises(GrammarError) as info:
        to_ebnf(grammar, Ref("turn"), dialect="xgrammar", special=["<|end|>"])
    assert info.value.code == "special_token"


def test_a_loop_that_can_write_nothing_is_refused_in_gbnf() -> None:
    grammar = Grammar({"turn": Rep(Ref("maybe")), "maybe": Rep(Lit("a"), 0, 1)})
    with pytest.raises(GrammarError) as info:
        to_ebnf(grammar, Ref("turn"), dialect="gbnf")
    assert info.value.code == "nullable_repeat"
    assert "turn ::= maybe*" in to_ebnf(grammar, Ref("turn"), dialect="xgrammar")  # (Earley parsers take it)


def test_gbnf_is_cached_on_the_tool_grammar() -> None:
    grammar = tool_grammar("qwen3", STRESS_TOOLS)
    assert grammar.gbnf is grammar.gbnf
    assert grammar.gbnf.startswith("root ::= ")


@pytest.mark.parametrize(("chars", "text"), [
    (((0x22, 0x22), (0x5C, 0x5C)), '[\\"\\\\]'),
    (((0, 0x21), (0x23, 0x10FFFF)), '[^\\"]'),
    (((0x2D, 0x2D), (0x5D, 0x5E)), "[\\x2D\\]-\\x5E]"),
    (((0x85, 0x85), (0xE9, 0xE9), (0x1F642, 0x1F642)), "[\\u0085é🙂]"),
    (((0, 0x10FFFF),), "[\\x00-\\U0010FFFF]"),
])
def test_character_classes(chars: Any, text: str) -> None:
    assert char_class(chars) == text


def test_literals_escape_quotes_backslashes_and_controls() -> None:
    assert quote('a"\\\n\t\x01é') == '"a\\"\\\\\\n\\t\\x01é"'


def _xgrammar() -> Any:
    try:
        import xgrammar as xgr  # type: ignore[import-not-found, unused-ignore]
        import xgrammar.testing  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    return xgr


@pytest.mark.skipif(_xgrammar() is None, reason="xgrammar is not installed (it needs torch; see the vLLM venv)")
@pytest.mark.parametrize("family", ["qwen3", "qwen3_coder", "gpt_oss", "deepseek_v3.2", "glm47", "mistral_v3"])
def test_xgrammar_dialect_compiles_and_admits_real_renders(family: str) -> None:
    xgr = _xgrammar()
    template = get_template(family)
    tools = _rendered(family)["tools_schema"]  # type: ignore[index]
    for prompt, text in _turns(family):
        grammar = tool_grammar(template, tools, prefix=prompt)
        ebnf = to_ebnf(grammar.grammar, Ref("turn"), dialect="xgrammar")
        assert xgr.testing._is_grammar_accept_string(xgr.Grammar.from_ebnf(ebnf), text), \
            f"{family}: xgrammar rejects {text!r}"


CHARS = 'ab"\\[]^-é🙂\n<'
_ATOMS = st.one_of(
    st.sampled_from(CHARS).map(rx_escape),
    st.lists(st.sampled_from(CHARS), min_size=1, max_size=3).map(
        lambda cs: "[" + "".join("\\" + c if c in "\\]^-[" else ("\\n" if c == "\n" else c) for c in cs) + "]"),
    st.lists(st.sampled_from(CHARS), min_size=1, max_size=3).map(
        lambda cs: "[^" + "".join("\\" + c if c in "\\]^-[" else ("\\n" if c == "\n" else c) for c in cs) + "]"),
    st.just("(?s:.)"),
)
REGEXES = st.recursive(_ATOMS, lambda inner: st.one_of(
    st.lists(inner, min_size=2, max_size=3).map("".join),
    st.lists(inner, min_size=2, max_size=3).map(lambda items: "(?:" + "|".join(items) + ")"),
    st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{0,3}", "{1,}"])).map(lambda t: f"(?:{t[0]}){t[1]}"),
), max_leaves=6)


@settings(max_examples=80, deadline=None)
@given(pattern=REGEXES, texts=st.lists(st.text(alphabet=CHARS + "x", max_size=6), min_size=8, max_size=8))
def test_regex_terminals_as_gbnf_admit_what_llguidance_admits(pattern: str, texts: list[str]) -> None:
    grammar = Grammar({"value": Rx(pattern)})
    text = to_ebnf(grammar, Ref("value"), dialect="gbnf")
    assert left_recursive_rules(text) == [], text  # (x*)* is written (x)*: llama.cpp's x* rule must progress
    gbnf = gbnf_to_lark(text)
    lark = to_lark(grammar, "value")
    for sample in texts:
        expected, _ = accepts(lark, sample)
        assert accepts(gbnf, sample)[0] == expected, f"{pattern!r}: {sample!r} (llguidance: {expected})"


@pytest.mark.parametrize(("family", "specials", "text"), [
    ("qwen3", ["<tool_call>", "</tool_call>", "<|im_end|>", "<think>", "</think>"],
     '<think>\nHm.\n</think>\n\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call><|im_end|>'),
    ("gpt_oss", ["<|channel|>", "<|message|>", "<|end|>", "<|start|>", "<|call|>", "<|constrain|>", "<|return|>"],
     "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|channel|>commentary to=functions.get_time "
     "<|constrain|>json<|message|>{}<|call|>"),
])
def test_markers_that_are_tokens_in_gbnf(family: str, specials: list[str], text: str) -> None:
    import llguidance

    from tests.grammar.test_build_write_forms import _SpecialTokenizer

    tools = [STRESS_TOOLS[1]]
    gbnf = tool_grammar(family, tools, tool_choice="required", special_tokens=specials).gbnf
    assert all(tok in gbnf for tok in specials[:3]) and f'"{specials[0]}' not in gbnf
    tokenizer = _SpecialTokenizer(specials)
    lark = gbnf_to_lark(gbnf)

    def admits(ids: list[int]) -> bool:
        matcher = llguidance.LLMatcher(llguidance.LLTokenizer(llguidance.TokenizerWrapper(tokenizer)), lark)
        assert not matcher.is_error(), matcher.get_error()
        return all(matcher.consume_token(t) for t in ids) and matcher.is_accepting()

    assert admits(tokenizer(text.encode()))
    assert not admits(list(text.encode()))  # the markers spelled byte by byte are not the tokens
