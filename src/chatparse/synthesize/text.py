"""Text arithmetic on renders: marker tokens (special tokens, ``<|x|>``, ``<x>``, ``[X]``, ...), common
prefixes and suffixes that never cut a token in two, and regexes built from rendered marker text."""

from __future__ import annotations

from collections.abc import Iterable

import regex

# Bracketed markers as chat templates write them; a tag with attributes or ``=`` is not one token (its name
# part is data: ``<function=NAME>``, ``<invoke name="NAME">``).
_MARKER_SOURCES = (
    r"<\|[^<>\s|]{0,64}\|>",  # <|im_start|>  <|"|>
    r"<\|[^<>\s|]{1,64}>",  # <|turn>  <|channel>
    r"<[^<>\s|]{1,64}\|>",  # <turn|>  <channel|>
    r"</?｜[^<>\n]{1,64}?｜[^<>\s=\"]{0,64}>",  # <｜tool▁sep｜>  <｜DSML｜invoke>
    r"</?[A-Za-z_][\w:.\-]{0,63}>",  # <think>  </tool_call>  <seed:think>  <SPECIAL_11>
    r"\[/?[A-Z][A-Z_]{1,31}\]",  # [INST]  [TOOL_CALLS]  [/THINK]
    r"</?(?:｜[^<>\n]{1,32}?｜)?[A-Za-z_][\w:.\-]{0,63}(?=[\s=])",  # the head of a tag with attributes
)
_WORD = r"\w+"
_WINDOW = 256  # longer than any token


class Lexer:
    """Splits text into tokens: markers (the tokenizer's special tokens first), words, single whitespace
    characters and single punctuation characters."""

    def __init__(self, special_tokens: Iterable[str] = ()) -> None:
        specials = sorted({t for t in special_tokens if t and not t.isspace()}, key=len, reverse=True)
        # The bracketed shapes first: a special token that is a prefix of a longer marker (<SPECIAL_1> of
        # <SPECIAL_11>) must not cut it.
        alternatives = list(_MARKER_SOURCES) + [regex.escape(t) for t in specials]
        self._marker = regex.compile("|".join(f"(?:{a})" for a in alternatives))
        self._token = regex.compile(f"(?P<m>{self._marker.pattern})|(?P<w>{_WORD})|(?P<o>.)", regex.DOTALL)
        self.special_tokens = tuple(specials)

    def tokens(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, kind)`` per token; kind is ``m`` (marker), ``w`` (word), ``s`` (whitespace) or
        ``o`` (other single character)."""
        out = []
        for match in self._token.finditer(text):
            kind = match.lastgroup or "o"
            if kind == "o" and match.group().isspace():
                kind = "s"
            out.append((match.start(), match.end(), kind))
        return out

    def markers(self, text: str) -> list[str]:
        """The marker tokens of ``text``, in order."""
        return [text[a:b] for a, b, kind in self.tokens(text) if kind == "m"]

    def is_marker(self, text: str) -> bool:
        """``text`` is exactly one marker token."""
        return self._marker.fullmatch(text) is not None

    def cuts(self, text: str, at: int) -> bool:
        """True when position ``at`` is strictly inside a marker or word token of ``text`` (tokens are short:
        the text is read from a little before ``at``)."""
        if at <= 0 or at >= len(text):
            return False
        for match in self._token.finditer(text, max(0, at - _WINDOW), min(len(text), at + _WINDOW)):
            if match.start() >= at:
                return False
            if match.end() > at and match.lastgroup in ("m", "w"):
                return True
        return False

    def prefix_len(self, texts: Iterable[str]) -> int:
        """Length of the common prefix of ``texts``, shortened so that it cuts no token of any of them."""
        items = list(texts)
        if not items:
            return 0
        n = _common_prefix_len(items)
        while n > 0 and any(self.cuts(t, n) for t in items):
            n -= 1
        return n

    def suffix_len(self, texts: Iterable[str]) -> int:
        """Length of the common suffix of ``texts``, shortened so that it cuts no token of any of them."""
        items = list(texts)
        if not items:
            return 0
        n = _common_prefix_len([t[::-1] for t in items])
        while n > 0 and any(self.cuts(t, len(t) - n) for t in items):
            n -= 1
        return n

    def first_marker(self, text: str) -> tuple[int, int] | None:
        """Span of the first marker token of ``text``."""
        for a, b, kind in self.tokens(text):
            if kind == "m":
                return a, b
        return None

    def leading_marker(self, text: str) -> str:
        """The marker token ``text`` starts with after whitespace, or ``""``."""
        stripped = text.lstrip()
        match = self._marker.match(stripped)
        return match.group() if match else ""

    def trailing_marker(self, text: str) -> str:
        """The marker token ``text`` ends with before whitespace, or ``""``."""
        stripped = text.rstrip()
        last = ""
        for a, b, kind in self.tokens(stripped):
            last = stripped[a:b] if kind == "m" and b == len(stripped) else ""
        return last


def _common_prefix_len(items: list[str]) -> int:
    """Length of the common prefix, by bisection over slice comparisons."""
    first = min(items, key=len)
    low, high = 0, len(first)
    while low < high:
        mid = (low + high + 1) // 2
        head = first[:mid]
        if all(t.startswith(head) for t in items):
            low = mid
        else:
            high = mid - 1
    return low


def flex(text: str, lexer: Lexer) -> str:
    r"""A regex for rendered marker text: each token escaped, whitespace between tokens optional
    (``\s*``), whitespace at the ends dropped; digit runs given as ``\d+`` stay."""
    text = text.strip()
    parts: list[str] = []
    gap = False
    previous = ""
    for a, b, kind in lexer.tokens(text):
        piece = text[a:b]
        if kind == "s":
            gap = True
            continue
        if gap:  # between two words a space is needed; next to a bracket or mark it is optional
            parts.append(r"\s+" if previous[-1:].isalnum() and piece[:1].isalnum() else r"\s*")
        parts.append(escape(piece))
        previous, gap = piece, False
    return "".join(parts)


_SPECIAL = frozenset("\\.^$|?*+()[]{}")
_CONTROL = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def escape(text: str) -> str:
    """``text`` as a regex matching it literally: only metacharacters are escaped, newlines and tabs are
    written ``\\n`` and ``\\t`` (readable in a template file)."""
    return "".join("\\" + ch if ch in _SPECIAL else _CONTROL.get(ch, ch) for ch in text)


def digits_as_wildcards(variants: list[str]) -> str | None:
    r"""One regex for texts that differ only in digit runs (``:0`` / ``:1`` → ``:\d+``), or None."""
    splits = [regex.split(r"(\d+)", v) for v in variants]
    if len({len(s) for s in splits}) != 1:
        return None
    out = []
    for i, pieces in enumerate(zip(*splits, strict=True)):
        if i % 2:
            out.append(escape(pieces[0]) if len(set(pieces)) == 1 else r"\d+")
        elif len(set(pieces)) != 1:
            return None
        else:
            out.append(escape(pieces[0]))
    return "".join(out)
