"""The Lark writer: the rules the start reaches, each once; operands parenthesized where Lark needs it."""

from __future__ import annotations

import pytest

from chatparse.grammar.ir import EMPTY, Alt, Grammar, Lit, Ref, Rep, Rx, Seq, Until
from chatparse.grammar.lark import to_lark
from tests.grammar.walk import accepts


def test_only_the_rules_the_start_reaches_are_written() -> None:
    grammar = Grammar()
    grammar.rules["start_value"] = Seq((Lit("a"), Ref("used")))
    grammar.rules["unused"] = Lit("never")
    grammar.rules["used"] = Alt((Lit("b"), Ref("used_too")))
    grammar.rules["used_too"] = Lit("c")
    lark = to_lark(grammar, "start_value")
    assert "unused" not in lark and "never" not in lark
    assert [line.split(":")[0] for line in lark.splitlines()[2:]] == ["start", "start_value", "used", "used_too"]
    assert accepts(lark, "ab")[0] and accepts(lark, "ac")[0] and not accepts(lark, "a")[0]


def test_a_shared_node_is_written_alike_everywhere() -> None:
    grammar = Grammar()
    shared = Alt((Seq((Lit("x"), Rx("[0-9]"))), EMPTY))
    free = Until(r"\.", ("!",))
    grammar.rules["start_value"] = Seq((shared, Lit("-"), Rep(shared, 1, 2), Lit("-"), free, Seq((shared, free))))
    lark = to_lark(grammar, "start_value")
    assert lark.count('("x" /[0-9]/)?') == 3 and lark.count("until_") == 3  # one lexeme, referred to twice
    for text, ok in (("--a.a.", True), ("x1-x2x3-a.x4b.", True), ("x1--a.", False), ("--a!.a.", False)):
        assert accepts(lark, text)[0] == ok, text


def test_special_tokens_not_spelled_like_tags_are_named_by_id() -> None:
    import llguidance

    from chatparse.grammar import GrammarError, tool_grammar
    from tests.grammar.test_build_write_forms import _SpecialTokenizer

    # MiniMax M2's end of turn '[e~[' is an added token: Lark (and GBNF) can name it only by its id.
    specials = ["<minimax:tool_call>", "</minimax:tool_call>", "<think>", "</think>", "[e~[", "]~b]"]
    tokenizer = _SpecialTokenizer(specials)
    ids = {token: 256 + i for i, token in enumerate(specials)}
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    grammar = tool_grammar("minimax_m2", tools, tool_choice="required", special_tokens=ids)
    assert "<[260]>" in grammar.lark and "<minimax:tool_call>" in grammar.lark
    assert "<[260]>" in grammar.gbnf
    matcher = llguidance.LLMatcher(llguidance.LLTokenizer(llguidance.TokenizerWrapper(tokenizer)), grammar.lark)
    assert not matcher.is_error(), matcher.get_error()
    # markers as their tokens; the value's '[e~[' as bytes (text); the end of turn as its token
    pieces = [tokenizer(b'<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">'),
              list(b"Oslo [e~[ x"), tokenizer(b"</parameter>\n</invoke>\n</minimax:tool_call>"),
              [ids["[e~["]]]
    assert all(matcher.consume_token(t) for piece in pieces for t in piece) and matcher.is_accepting()
    for form in ("lark", "gbnf"):
        with pytest.raises(GrammarError) as info:
            _ = getattr(tool_grammar("minimax_m2", tools, tool_choice="required", special_tokens=specials), form)
        assert info.value.code == "special_token"
