"""The Lark writer: the rules the start reaches, each once; operands parenthesized where Lark needs it."""

from __future__ import annotations

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
