"""Marker tokens, token-safe common prefixes and suffixes, and regexes built from rendered text."""

from __future__ import annotations

import regex

from chatparse.synthesize.text import Lexer, digits_as_wildcards, escape, flex

LEXER = Lexer(["<s>", "]~b]"])


def test_markers_of_every_bracket_shape() -> None:
    text = ('<|im_start|>x<turn|><|turn>y<｜tool▁sep｜><think>[TOOL_CALLS]<｜DSML｜invoke name="f">'
            '<|"|>]~b]<SPECIAL_11>')
    assert LEXER.markers(text) == ["<|im_start|>", "<turn|>", "<|turn>", "<｜tool▁sep｜>", "<think>", "[TOOL_CALLS]",
                                   "<｜DSML｜invoke", '<|"|>', "]~b]", "<SPECIAL_11>"]


def test_a_special_token_does_not_cut_a_longer_marker() -> None:
    assert Lexer(["<SPECIAL_1>"]).markers("<SPECIAL_11>Assistant") == ["<SPECIAL_11>"]


def test_common_prefix_never_cuts_a_token() -> None:
    assert LEXER.prefix_len(["<|assistant|><think>", "<|assistant|></think>"]) == len("<|assistant|>")
    assert LEXER.prefix_len(["<|im_end|>\nA", "<|im_start|>"]) == 0
    assert LEXER.prefix_len(["call get_weather", "call get_time"]) == len("call ")


def test_common_suffix_never_cuts_a_token() -> None:
    assert LEXER.suffix_len(["x</tool_call>", "y<tool_call>"]) == 0
    assert LEXER.suffix_len(["a<|im_end|>\n", "b\n<|im_end|>\n"]) == len("<|im_end|>\n")


def test_leading_and_trailing_markers() -> None:
    assert LEXER.leading_marker("\n</think>\n\nHi") == "</think>"
    assert LEXER.trailing_marker("<|im_start|>assistant\n<think>\n") == "<think>"
    assert LEXER.trailing_marker("assistant\n") == ""


def test_flex_allows_any_whitespace_between_markers() -> None:
    pattern = flex("</function>\n</tool_call>", LEXER)
    assert pattern == r"</function>\s*</tool_call>"
    assert regex.fullmatch(pattern, "</function></tool_call>")
    assert flex('<invoke name="', LEXER) == '<invoke\\s+name="'


def test_escape_and_digit_wildcards() -> None:
    assert escape("[ARGS]\n(x).") == r"\[ARGS\]\n\(x\)\."
    assert digits_as_wildcards([":0<|b|>", ":1<|b|>"]) == r":\d+<\|b\|>"
    assert digits_as_wildcards(["a", "b"]) is None
