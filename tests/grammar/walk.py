"""Random walks through a Lark grammar with llguidance's byte tokenizer: at each step a random allowed
token (bytes a model could write next), biased towards the grammar's own markers and towards ending, so
that walks finish in a few hundred steps. What a walk writes is, by construction, text the grammar admits.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence

import llguidance

TOKENIZER = llguidance.LLTokenizer("byte")
EOS = TOKENIZER.eos_token
# Values a walk likes to write inside free text and strings: markers of many formats, newlines, quotes,
# indentation and non-ASCII text.
SPICE = ("\n", "  ", '"', "\\n", "é", "한국어", "🙂", "</", "<", ">", "{", "}", "[", "]", ",", ":", "=", " ",
         "</parameter>", "</function>", "<tool_call>", "</tool_call>", "<|im_end|>", "</think>", "```")


@functools.lru_cache(maxsize=32)
def _compiled(lark: str) -> llguidance.LLMatcher:
    return llguidance.LLMatcher(TOKENIZER, lark)


def matcher_of(lark: str, limits: llguidance.LLParserLimits | None = None) -> llguidance.LLMatcher:
    """A fresh matcher of ``lark`` (compiling a grammar costs far more than copying a compiled one; with
    ``limits``, compiled anew)."""
    if limits is not None:
        return llguidance.LLMatcher(TOKENIZER, lark, limits=limits)
    return _compiled(lark).deep_copy()


def allowed(matcher: llguidance.LLMatcher) -> list[int]:
    mask = matcher.compute_bitmask()
    return [i for i in range(TOKENIZER.vocab_size) if mask[i >> 3] >> (i & 7) & 1]


def try_write(matcher: llguidance.LLMatcher, text: str) -> bool:
    """Write ``text`` if the grammar admits all of it here; otherwise write nothing."""
    ids = TOKENIZER.tokenize_bytes(text.encode())
    taken = matcher.try_consume_tokens(ids)
    if taken == len(ids):
        return True
    if taken:
        matcher.rollback(taken)
    return False


def walk(lark: str, rng: random.Random, literals: Sequence[str], *, steps: int = 2000,
         stop_weight: float = 0.15, limits: llguidance.LLParserLimits | None = None) -> str | None:
    """One random output of ``lark`` (None when the walk did not finish within ``steps`` tokens); ``limits``:
    llguidance's parser limits (grammars of one rule per character need longer Earley rows)."""
    matcher = matcher_of(lark, limits)
    assert not matcher.is_error(), matcher.get_error()
    out = bytearray()
    pool = list(literals) + list(SPICE)
    for step in range(steps):
        if matcher.is_stopped():
            break
        late = step > steps // 5
        if matcher.is_accepting() and rng.random() < (0.6 if late else stop_weight):
            break
        choice = rng.random()
        if choice < (0.55 if late else 0.35):
            text = rng.choice(pool)
            if try_write(matcher, text):
                out += text.encode()
                continue
        forced = matcher.compute_ff_bytes()
        if forced and rng.random() < 0.5:
            ids = TOKENIZER.tokenize_bytes(forced)
            matcher.consume_tokens(ids)
            out += forced
            continue
        options = [t for t in allowed(matcher) if t != EOS]
        if not options:
            break
        if late:  # prefer what closes things
            closers = [t for t in options if bytes([t]) in (b'"', b"}", b"]", b">", b"<", b"\n")] if \
                all(t < 256 for t in options) else []
            if closers and rng.random() < 0.7:
                options = closers
        printable = [t for t in options if t < 256 and (32 <= t < 127 or t == 10)]
        token = rng.choice(printable if printable and rng.random() < 0.9 else options)
        assert matcher.consume_token(token), matcher.get_error()
        out += bytes([token]) if token < 256 else b""
    else:
        return None
    if not matcher.is_accepting():
        return None
    try:
        return out.decode()
    except UnicodeDecodeError:  # a walk that stopped inside a multi-byte character
        return None


def accepts(lark: str, text: str, limits: llguidance.LLParserLimits | None = None) -> tuple[bool, str]:
    """Whether ``lark`` admits all of ``text`` (and may end there); the reason when not."""
    matcher = matcher_of(lark, limits)
    if matcher.is_error():
        return False, matcher.get_error()
    data = text.encode()
    for i, token in enumerate(TOKENIZER.tokenize_bytes(data)):
        if not matcher.consume_token(token):
            return False, f"rejected at byte {i}: {data[max(0, i - 60): i + 1].decode(errors='replace')!r}"
    if not matcher.is_accepting():
        return False, "the grammar cannot end here"
    return True, ""
