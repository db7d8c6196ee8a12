"""content.regex_search: the literal prefilter and the single-pass shortcut give exactly what
``pattern.search``/``pattern.match`` give, and a pattern that can backtrack stays under the budget."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chatparse.content.args import compiled, regex_deadline
from chatparse.content.regex_search import searcher
from chatparse.errors import RegexBudgetError

SINGLE_PASS = [
    r"<parameter=(?P<key>[^>\n]+)>",
    r"<arg_key>(?P<key>[^<]*)</arg_key>\s*<arg_value>",
    r'<atem:parameter\s+name="(?P<key>[^"]*)"\s*>',
    r"<p=(?P<key>\w+?)>",
    r"<p=(?P<key>[a-z]{1,3})",
    r"(?:<q>\s*)?<p=(?P<key>[^>\n]+)>",  # an optional part
    r"</p>\s*</q>|</p>(?=\s{0,8}(?:<q>|<p=))",  # alternatives, a lookahead that ends the pattern
    r"(?<![^\s>])<p=(?P<key>[^>]+)>|(?:(?<=\n)|(?<=<q>))<p>",  # lookbehinds of fixed text
    r"""<p\s+name=["'](?P<key>[^"'<>]+)["'](?:\s+kind="(?P<kind>a|bb)")?\s*>""",
]
NOT_SINGLE_PASS = [
    r"<p=(?P<key>.*)>",  # the repeat can take the '>' that follows it
    r"<p=(?P<key>[^>]*)[^<]*>",  # a repeat followed by a repeat
    r"<p=(?P<key>(?:ab)+)>",  # a repeat of more than one character
    r"(?i)<p=(?P<key>[^>]+)>",
    r"<p=(?P<key>ab|a)>(?:x|xy)(?:y|yz)(?:z|zw)(?:w|wq)",  # too many ways through
    r"(?:a|a)*b",
    r"a?a?a?a?aaaa",  # optional characters the next literal can also read
    r"<p=(?P<key>[^>]*)(?=x)",  # a repeat before a lookahead
    r"(?=<p=[^>]*)>",  # a lookahead that does not end the pattern
    r"(?<=[^>]*x)<p>",  # a lookbehind with a repeat
    r"<p=[[:alpha:]]*[[:alpha:]]*>",  # `regex` reads POSIX classes, the standard parser a nested set
    r"<p=(?P<key>[^>]+)>{e<=1}",  # a fuzzy constraint
]
# Searched patterns for the equivalence property: with and without leading literals, single-pass or not.
PATTERNS = SINGLE_PASS[:2] + SINGLE_PASS[5:] + NOT_SINGLE_PASS[:3] + [
    r"(?:<q>|<p=)(?P<key>[^>]*)>",
    r"(?<=\n)<p=(?P<key>[^>]+)>",
    r"(?:<q>)?<p=(?P<key>[^>\n]+)>",
]
PIECES = ["<p=", "<parameter=", "<q>", "</p>", "</q>", "<p name=", '"', "'", " kind=", "<arg_key>", "</arg_key>",
          "<arg_value>", "a", "b", ">", "<", "\n", " ", "x"]


@pytest.mark.parametrize("pattern", SINGLE_PASS)
def test_single_pass_patterns_are_recognised(pattern: str) -> None:
    assert searcher(pattern).single_pass


@pytest.mark.parametrize("pattern", NOT_SINGLE_PASS)
def test_patterns_that_can_rescan_are_not_single_pass(pattern: str) -> None:
    assert not searcher(pattern).single_pass


def test_leading_literals_are_the_anchors() -> None:
    assert searcher(r"<parameter=(?P<key>[^>\n]+)>").anchors == ("<parameter=",)
    assert set(searcher(r"(?:<q>|<p=)(?P<key>[^>]*)>").anchors or ()) == {"<q>", "<p="}
    assert set(searcher(r"(?:<q>)?<p=(?P<key>[^>]+)>").anchors or ()) == {"<q>", "<p="}  # with or without
    assert searcher(r"\s*<p=(?P<key>[^>]+)>").anchors is None
    assert searcher(r"(?:<p=){e<=1}(?P<key>[^>]+)>").anchors is None  # fuzzy: '<q=' matches too
    assert searcher(r"(?:<p=){e<=1}(?P<key>[^>]+)>").search("<q=k>") is not None


def _same(got: object, expected: object) -> None:
    if expected is None:
        assert got is None
    else:
        assert got is not None
        assert (got.span(), got.groupdict()) == (expected.span(), expected.groupdict())  # type: ignore[attr-defined]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PATTERNS), st.lists(st.sampled_from(PIECES), max_size=40), st.data())
def test_search_and_match_give_what_the_pattern_gives(pattern: str, pieces: list[str], data: st.DataObject) -> None:
    regex_pattern, fast = compiled(pattern), searcher(pattern)
    text = "".join(pieces)
    starts = [i for i, c in enumerate(text) if c == "<"]  # where matches start: the interesting positions
    pos = data.draw(st.sampled_from(starts) if starts else st.just(0)) + data.draw(st.sampled_from([0, 0, -1, 1]))
    pos = max(0, min(pos, len(text)))
    with regex_deadline(10.0):
        _same(fast.search(text, pos), regex_pattern.search(text, pos))
        _same(fast.match(text, pos), regex_pattern.match(text, pos))


def test_many_literals_that_start_no_match_hand_over_to_one_search() -> None:
    text = "<p=\n" * 5_000 + "<p=k>"
    with regex_deadline(10.0):
        found = searcher(r"<p=(?P<key>[^>\n]+)>").search(text)
    assert found is not None and found.start() == len(text) - 5 and found["key"] == "k"


def test_a_pattern_that_backtracks_still_runs_under_the_budget() -> None:
    pattern = searcher(r"<p=(?P<key>(?:a|a)+)>")
    assert not pattern.single_pass
    with regex_deadline(0.05), pytest.raises(RegexBudgetError):
        pattern.search("<p=" + "a" * 40)
