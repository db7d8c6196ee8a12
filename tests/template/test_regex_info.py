"""Static facts about delimiter patterns: the engine's fast paths are only as right as these."""

from __future__ import annotations

import sys

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

import chatparse
from chatparse.template.regex_info import REGEX_SPACE, UNKNOWN, analyze, fuzzy_braces, literal_strings


def test_regex_space_is_exactly_what_regex_matches_with_backslash_s() -> None:
    space = regex.compile(r"\s")
    found = {chr(i) for i in range(sys.maxunicode + 1) if space.match(chr(i))}
    assert found == REGEX_SPACE
    assert "\x1c" not in REGEX_SPACE and "\x1c".isspace()  # why str.isspace() is not the test


@pytest.mark.parametrize(
    ("pattern", "first"),
    [
        ("<tool_call>", {"<"}),
        ("[ab]c|d", {"a", "b", "d"}),
        ("(?=<tool_call>)", {"<"}),  # zero-width: the character the lookahead needs
        ("</think>\\s*|(?=<tool_call>\\s{0,16}<function=)", {"<"}),
        ("(?:<tool_call>\\s*)?<function=", {"<"}),  # an optional prefix: its first or what follows
        ("(?<=\\})</tool_call>", {"<"}),  # a lookbehind says nothing about the next character
        ("(?=.*x)abc", {"a"}),  # a lookahead of unknown start is ignored, not trusted
        ("x?", None),  # may match empty anywhere
        ("(?=a)|b?", None),
        ("\\Z", None),
        ("\\s*<x>", None),  # a lead run: not one character class the engine can search for cheaply
        ("(?i)<x>", None),
    ],
)
def test_first_chars(pattern: str, first: set[str] | None) -> None:
    info = analyze(pattern)
    assert info.first_chars == (None if first is None else frozenset(first))


@pytest.mark.parametrize(
    ("pattern", "forming"),
    [
        ("\\s*<tool_call>", True),
        ("\\s*(?:<\\|im_end\\|>|<\\|endoftext\\|>)\\s*", True),
        ("\\s*(?:<tool_call>\\s*)?<function=(?P<name>[^>\\n]+)>", True),
        ("\\s*(?=<x>)", True),  # a lookahead reads the next character too
        ("\\s*(?<=a)<x>", False),  # a lookbehind after the run can fail without reading further
        ("\\s*\\b<x>", False),
        ("\\s*\\s<x>", False),  # what follows can itself be a lead character
        ("[ \\t]*<x>", True),
        ("(?a)\\s*<x>", False),  # ASCII mode: the lead test would not be exact
        ("(?i)x*<y>", False),
    ],
)
def test_lead_forming(pattern: str, forming: bool) -> None:
    assert analyze(pattern).lead_forming is forming


@given(st.text(alphabet=" \t\n\x0b\x0c\r\x1c\x85\xa0\u2028<ax", max_size=12))
def test_lead_forming_means_a_trailing_run_is_a_partial_match(text: str) -> None:
    """The fact the engine relies on instead of a regex call, checked against the regex module."""
    for source in ("\\s*<tool_call>", "\\s*(?:<tool_call>\\s*)?<function=", "[ \\t]*(?=<x>)"):
        info = analyze(source)
        assert info.lead_forming and info.lead is not None
        run = len(text)
        while run and info.lead(text[run - 1]):
            run -= 1
        if run < len(text):
            m = regex.compile(source).match(text, run, partial=True)
            assert m is not None and m.partial, (source, text)


@given(st.text(alphabet=" \t\n<>atool_cl/", max_size=30))
def test_first_chars_hold_for_every_match(text: str) -> None:
    for source in ("</think>\\s*|(?=<tool_call>)", "(?:<tool_call>\\s*)?<function=", "(?=<t)|<a"):
        first = analyze(source).first_chars
        assert first is not None
        for m in regex.compile(source).finditer(text, overlapped=True):
            assert m.start() < len(text) and text[m.start()] in first, (source, text, m)


def test_a_group_name_reused_across_alternatives_is_still_analyzed() -> None:
    """gpt-oss's tool header names the function in either of two alternatives, with the same group name,
    which `regex` allows and the standard parser rejects."""
    info = analyze(r"<\|channel\|>x to=(?P<name>\w+)<\|message\|>|(?<![^\s>])to=(?P<name>\w+) <\|channel\|>")
    assert info.first_chars == frozenset("<t")
    assert info.context == 2
    # An escaped parenthesis is not a group and keeps its text.
    assert analyze(r"\(?P<a>x(?P<a>y)|(?P<a>z)").first_chars == frozenset("(Pz")


@pytest.mark.parametrize(
    ("pattern", "anchors", "exact", "tails"),
    [
        ("\\s*<think>", ("<think>",), True, ("<think>",)),
        ("\\s*(?:<\\|im_end\\|>|<\\|endoftext\\|>)\\s*", ("<|im_end|>", "<|endoftext|>"), True, None),
        ("\\s*</tool_call>(?<=\\}\\s*</tool_call>)\\s*", ("</tool_call>",), True, None),
        ("(?<![^\\s>])to=(?P<n>\\w+)<\\|m\\|>|<\\|c\\|>x", ("to=", "<|c|>x"), False, ("<|m|>", "<|c|>x")),
        ("\\s+<x>", None, True, ("<x>",)),  # a required lead run: an anchor prefix alone is no partial match
        ("\\s*(?: <x>|<y>)", None, True, (" <x>", "<y>")),  # an anchor may start with a lead character
        ("</think>\\s*|(?=<tool_call>)", None, True, None),
    ],
)
def test_anchors_and_tails(pattern: str, anchors: tuple[str, ...] | None, exact: bool,
                           tails: tuple[str, ...] | None) -> None:
    info = analyze(pattern)
    assert info.anchors == anchors
    assert info.anchors_exact is exact
    assert info.tails == tails


@given(st.text(alphabet=" \n<>|/xyto=cmh", max_size=40))
def test_every_match_has_an_anchor_after_its_lead_and_ends_with_a_tail(text: str) -> None:
    for source in ("\\s*<x>\\s*", "\\s*(?:<\\|x\\|>|<y>)", "(?<![^\\s>])to=(?P<n>\\w+)<\\|m\\|>|<\\|c\\|>x", "<x>[^<]*</x>"):
        info = analyze(source)
        assert info.anchors is not None
        for m in regex.compile(source).finditer(text, overlapped=True):
            body = m.group()
            after = body.lstrip(" \n") if info.lead is not None else body
            assert any(after.startswith(a) for a in info.anchors), (source, text, m)
            if info.tails is not None:
                assert any(body.endswith(t) for t in info.tails), (source, text, m)


@pytest.mark.parametrize(("pattern", "fuzzy"), [
    (r"(?:<p=){e<=1}", True), (r"(?:abc){i<=1,d<=1}", True), (r"x{1i+1d<4}", True), (r"(?:ab){e}", True),
    (r"a{2,3}", False), (r"a{3}", False), (r"\{e<=1}", False), (r"[{e}]", False), (r"\{\"name\"", False),
    (r"<tool_call>\s*\{", False), (r"{}", False),
])
def test_fuzzy_constraints_are_recognised(pattern: str, fuzzy: bool) -> None:
    assert fuzzy_braces(pattern) is fuzzy
    if fuzzy:
        assert analyze(pattern) is UNKNOWN and literal_strings(pattern) is None


def test_a_fuzzy_delimiter_matches_as_the_regex_module_reads_it() -> None:
    """The standard parser reads `{e<=1}` as literal text: anchors from it made the scanner skip every
    match (the reference, which runs the `regex` module's search, finds them)."""
    template = {"start_anchor": "<s>", "fields": {"x": {"open_pattern": "(?:<call>){e<=1}", "close": "</x>"},
                                                  "content": {}}}
    text = "<call>a</x>b<cxll>c</x>d"
    assert chatparse.parse_response(text, template, prefix="") == {"x": "c", "content": "d"}
    parser = chatparse.ResponseParser(template, prefix="")
    for ch in text:
        parser.feed(ch)
    assert parser.finalize()[0] == {"x": "c", "content": "d"}
