"""``escaped-newline-text``: prose whose newlines a tokenizer decoded as the two characters backslash + ``n``
(MiniCPM-V), repaired. A lone backslash followed by ``n`` or ``r`` (and the pair ``\\r\\n``) becomes a
newline, except where a backslash is meant: inside code (fenced blocks, inline code) and math (``$…$``,
``$$…$$``, ``\\(…\\)``, ``\\[…\\]``); runs of two or more backslashes stay as written. Tokens the model
writes that are not text (reserved tokens) can be removed. One pass over the text (linear time). A
chatparse extension for reasoning and content fields (transformers' ``text`` parser only strips).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import regex

from chatparse.content.args import check_allowed, check_string_list

Args = Mapping[str, Any]
# What the scan stops at: a protected span's opener, or a run of backslashes (an escaped newline, or not).
_SPAN_OPENERS = ("```", "$$", "\\(", "\\[", "`", "$")
_SPAN_CLOSERS = {"```": "```", "$$": "$$", "\\(": "\\)", "\\[": "\\]", "`": "`", "$": "$"}
_STOP = regex.compile(r"```|\$\$|\\\(|\\\[|`|\$|\\+")
_ARGS: dict[str, type | tuple[type, ...]] = {"strip": bool, "remove": list}


def repair_escaped_newlines(text: str) -> str:
    """``text`` with its lone escaped newlines (``\\n``, ``\\r``, ``\\r\\n``) made newlines, outside code and
    math. An opener without its closer protects nothing, except a code fence (a block cut by the end of the
    text is still code)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    absent: set[str] = set()  # closers known not to occur again (keeps unclosed openers linear)
    pos = 0
    while True:
        m = _STOP.search(text, pos)
        if m is None:
            out.append(text[pos:])
            return "".join(out)
        token = m.group()
        out.append(text[pos : m.start()])
        if token in _SPAN_CLOSERS:
            closer = _SPAN_CLOSERS[token]
            close = -1 if closer in absent else text.find(closer, m.end())
            if close < 0:
                absent.add(closer)
            if close < 0 and token == "```":
                close = len(text)
            if close >= 0:
                end = min(close + len(closer), len(text))
                out.append(text[m.start() : end])
                pos = end
                continue
            out.append(token)
            pos = m.end()
            continue
        # A run of backslashes: only a lone one followed by n or r is an escaped newline.
        pos = m.end()
        if len(token) == 1 and text.startswith(("r\\n", "n", "r"), pos):
            out.append("\n")
            pos += 3 if text.startswith("r\\n", pos) else 1
        else:
            out.append(token)


def parse_escaped_newline_text(text: str, args: Args) -> str:
    """Reasoning or content text with escaped newlines repaired (see the module docstring).

    ``content_args``: ``remove`` (literal tokens deleted from the text first, e.g. reserved tokens the
    model writes), ``strip`` (default true, as the ``text`` parser: the ends of the text are stripped)."""
    for token in args.get("remove", ()):
        if token in text:
            text = text.replace(token, "")
    text = repair_escaped_newlines(text)
    return text.strip() if args.get("strip", True) else text


def validate_escaped_newline_text_args(args: Args) -> None:
    """Load-time check of ``escaped-newline-text`` content_args."""
    check_allowed("escaped-newline-text", args, _ARGS)
    check_string_list("escaped-newline-text", args, "remove")


EXTENSIONS = {"escaped-newline-text": (parse_escaped_newline_text, validate_escaped_newline_text_args, None)}


def register() -> None:
    """Register every parser of this module (safe to call more than once)."""
    from chatparse.content.registry import register_extensions

    register_extensions(EXTENSIONS)


register()
