"""The Lark writer: the rules the start reaches, each once; operands parenthesized where Lark needs it."""

from __future__ import annotations

import pytest

from chatparse.grammar import tool_grammar
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

    from chatparse.grammar import GrammarError
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


def _family_renders() -> list[str]:
    from tests.grammar.test_builtins import _grammar_families, _turns

    return [family for family in _grammar_families() if _turns(family)]


@pytest.mark.parametrize("family", _family_renders())
def test_the_model_tokenizer_writes_what_the_chat_template_renders(family: str) -> None:
    """With the family's markers as the tokenizer's added tokens (what the vLLM plugin passes on the guidance
    backend), llguidance accepts every rendered turn token by token: free text whose stop holds a token ends
    where the token comes (a lexeme is bytes and can never match a token)."""
    from chatparse.integrations.serving import template_special_tokens
    from chatparse.template.compile import load_template
    from tests.grammar.test_builtins import (
        NO_FREE_FORM_OBJECTS,
        _free_form_objects_declared,
        _rendered,
        _turns,
    )
    from tests.grammar.token_walk import GuidanceMatcher
    from tests.integrations.tokenizers import family_tokenizer

    tokenizer = family_tokenizer(family)
    special = template_special_tokens(tokenizer, load_template(family))
    tools = _rendered(family)["tools_schema"]  # type: ignore[index]
    if family in NO_FREE_FORM_OBJECTS:
        tools = _free_form_objects_declared(family, tools)
    for prompt, text in _turns(family):
        grammar = tool_grammar(family, tools, prefix=prompt, special_tokens=special)
        matcher = GuidanceMatcher(tokenizer, grammar.lark)
        ids = tokenizer.encode(text, add_special_tokens=False)
        for at, token in enumerate(ids):
            assert matcher.consume([token]), f"llguidance rejects {tokenizer.decode(ids[:at + 1])!r} (of {text!r})"
        assert matcher.can_end(), f"the turn cannot end after {text!r}"


@pytest.mark.parametrize("family", ["qwen3_coder", "glm45", "mimo", "seed_oss", "inkling", "gpt_oss"])
def test_what_llguidance_lets_the_model_write_parses_back(family: str) -> None:
    """Random walks with llguidance's matcher and the family's tokenizer (markers as tokens, as the vLLM plugin
    passes them on the guidance backend) parse back into the calls each choice demands."""
    from chatparse.integrations.serving import template_special_tokens
    from chatparse.template.compile import load_template
    from tests.grammar.token_walk import GuidanceMatcher, assert_token_walks_parse_back
    from tests.integrations.tokenizers import family_tokenizer

    tokenizer = family_tokenizer(family)
    assert_token_walks_parse_back(family, tokenizer, lambda grammar: GuidanceMatcher(tokenizer, grammar.lark),
                                  template_special_tokens(tokenizer, load_template(family)))
