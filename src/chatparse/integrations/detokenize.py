"""Token ids to text, exactly as ``tokenizer.decode`` gives it: input checks (one sequence or a batch, ids
inside the vocabulary) and ``IncrementalDetokenizer``, which turns ids fed one or several at a time into
text pieces that never split a character and whose concatenation equals ``tokenizer.decode(all_ids)``.

Works with any tokenizer that has transformers' ``decode``; imports nothing heavy.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from chatparse.errors import ChatparseError, UsageError

# A character is at most 4 UTF-8 bytes, so at most 4 tokens end inside one; a longer run of tokens that
# still ends in U+FFFD is invalid UTF-8 and is emitted as decode gives it (the hold stays bounded).
MAX_PENDING = 8
# A large feed is decoded in steps of this many tokens, so every decode window stays short.
STEP = 16
# Ids already decoded are dropped from the window list once this many have accumulated.
TRIM_AT = 1024
REPLACEMENT = "\ufffd"


class TokenIdError(ChatparseError, ValueError):
    """A token id outside the tokenizer's vocabulary (the ids belong to another tokenizer or model)."""

    code = "token_id_out_of_range"


class TokenInputError(UsageError, TypeError):
    """Token ids of the wrong type or shape (floats, a 3-D array, a batch where one sequence is expected)."""

    code = "bad_token_ids"


# --- input checks ---------------------------------------------------------------------------------


def _python(value: Any) -> Any:
    """numpy arrays and scalars and torch tensors as Python lists and ints (what ``to_py_obj`` does); a
    tokenizer's output (``BatchEncoding``, a dict) as its ``input_ids``, as ``tokenizer.decode`` reads it."""
    if isinstance(value, list | tuple | str | bytes | bool | int):
        return value
    if isinstance(value, Mapping) and "input_ids" in value:
        return _python(value["input_ids"])
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def _int_list(seq: Any, name: str) -> list[int]:
    if all(type(i) is int for i in seq):
        return list(seq)
    out: list[int] = []
    for pos, item in enumerate(seq):
        item = _python(item)
        if isinstance(item, bool) or not isinstance(item, int):
            raise TokenInputError(
                f"{name}: expected integer token ids, found {type(item).__name__} {item!r} at position {pos}. "
                "Pass a list of ints, a 1-D integer array or tensor, or a batch of those.",
                path=f"{name}[{pos}]",
            )
        out.append(operator.index(item))
    return out


def sequence_ids(value: Any, name: str = "ids") -> list[int]:
    """One sequence of token ids as a list of ints: an int, a list or tuple of ints, a 0-D or 1-D integer
    numpy array or torch tensor, a tokenizer's output (its ``input_ids``). A batch or anything else raises
    ``TokenInputError``."""
    value = _python(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if not isinstance(value, list | tuple):
        raise TokenInputError(f"{name}: expected token ids (ints, a 1-D array or tensor), found "
                              f"{type(value).__name__}", path=name)
    if any(isinstance(_python(item), list | tuple) for item in value[:1]):
        raise TokenInputError(f"{name}: expected one sequence of token ids, found a batch (a list of sequences). "
                              "Feed one sequence per parser.", path=name)
    return _int_list(value, name)


def sequences_ids(value: Any, name: str = "ids") -> tuple[list[list[int]], bool]:
    """Token ids as sequences, and whether they were a batch: a list of sequences or a 2-D array is a batch
    (an empty list is an empty batch, as transformers reads it); anything ``sequence_ids`` takes is one."""
    if isinstance(value, Mapping) and "input_ids" in value:
        value = value["input_ids"]
    ndim = getattr(value, "ndim", None)
    if isinstance(ndim, int) and ndim <= 1:
        return [sequence_ids(value, name)], False
    value = _python(value)
    if isinstance(value, list | tuple) and (not value or isinstance(_python(value[0]), list | tuple)):
        return [sequence_ids(row, f"{name}[{i}]") for i, row in enumerate(value)], True
    return [sequence_ids(value, name)], False


@dataclass(frozen=True)
class _Vocabulary:
    size: int  # ids 0 .. size-1 may exist
    holes: frozenset[int]  # ids below size that no token has


_VOCABULARIES: weakref.WeakKeyDictionary[Any, _Vocabulary] = weakref.WeakKeyDictionary()


def _vocabulary(tokenizer: Any) -> _Vocabulary:
    """The valid ids of ``tokenizer``, computed once per tokenizer (and again if tokens are added)."""
    size = len(tokenizer)
    try:
        known = _VOCABULARIES.get(tokenizer)
    except TypeError:  # not weak-referenceable: compute every time
        known = None
    if known is not None and known.size == size:
        return known
    ids = set(tokenizer.get_vocab().values())
    top = max(size, max(ids, default=-1) + 1)
    vocabulary = _Vocabulary(top, frozenset(range(top)) - ids if len(ids) < top else frozenset())
    if top == size:
        try:
            _VOCABULARIES[tokenizer] = vocabulary
        except TypeError:
            pass
    return vocabulary


def check_ids(tokenizer: Any, ids: list[int], name: str = "ids", start: int = 0) -> None:
    """Raise ``TokenIdError`` for the first id of ``ids`` that is not a token of ``tokenizer``
    (``start``: the position of ``ids[0]`` in the whole sequence, for the message)."""
    if not ids:
        return
    vocabulary = _vocabulary(tokenizer)
    low, high = min(ids), max(ids)
    if low >= 0 and high < vocabulary.size and (not vocabulary.holes or vocabulary.holes.isdisjoint(ids)):
        return
    pos, bad = next((i, t) for i, t in enumerate(ids)
                    if t < 0 or t >= vocabulary.size or t in vocabulary.holes)
    hole = ", an id no token has" if bad in vocabulary.holes else ""
    raise TokenIdError(
        f"{name}: expected token ids of this tokenizer (0 to {vocabulary.size - 1}), found {bad} at position "
        f"{start + pos}{hole}. The ids come from another tokenizer or model; decode them with the tokenizer of "
        "the model that generated them.",
        offset=start + pos, path=f"{name}[{start + pos}]", token_id=bad,
    )


def decode_ids(tokenizer: Any, ids: list[int], name: str = "ids") -> str:
    """``tokenizer.decode(ids)`` (special tokens kept, the tokenizer's own clean-up setting) after
    ``check_ids``: the text transformers' ``tokenizer.parse_response`` parses."""
    check_ids(tokenizer, ids, name)
    text: str = tokenizer.decode(ids)
    return text


# --- the clean-up of tokenization spaces, streamed ---------------------------------------------------

# ``clean_up_tokenization`` only deletes spaces, each in a match of one of its patterns (" .", " ' ",
# " n't", ...). Two adjacent non-space characters that no pattern holds side by side cannot be inside one
# match, in any pass, so the text can be cut between them and both parts cleaned apart.
_CLEANUP_PAIRS = frozenset({"n'", "'t", "'m", "'s", "'v", "ve", "'r", "re"})
# A tail longer than this without such a point (only spaces and quotes) is cut anyway, to stay linear.
_CLEANUP_HOLD_CAP = 1024


def _cleanup_cut(text: str) -> int:
    """The last point where ``text`` can be cut so that cleaning both parts equals cleaning the whole,
    whatever text follows (at least one character is always held: the next one decides)."""
    for c in range(len(text) - 1, 0, -1):
        left, right = text[c - 1], text[c]
        if left != " " and right != " " and left + right not in _CLEANUP_PAIRS:
            return c
    return len(text) - 8 if len(text) > _CLEANUP_HOLD_CAP else 0


class _CleanupStage:
    """Applies the tokenizer's ``clean_up_tokenization`` to streamed text, holding back a tail that a
    replacement could still reach."""

    def __init__(self, clean: Callable[[str], str]) -> None:
        self._clean = clean
        self._held = ""

    def push(self, text: str, *, final: bool = False) -> str:
        text = self._held + text
        cut = len(text) if final else _cleanup_cut(text)
        self._held = text[cut:]
        return self._clean(text[:cut]) if cut else ""


def _cleanup_applies(tokenizer: Any) -> bool:
    """Whether ``tokenizer.decode`` cleans up tokenization spaces (transformers skips it for BPE models even
    when the setting is on), found by decoding a probe both ways."""
    if not getattr(tokenizer, "clean_up_tokenization_spaces", False):
        return False
    try:
        probe = tokenizer.encode("a .", add_special_tokens=False)
        raw = tokenizer.decode(probe, clean_up_tokenization_spaces=False)
        cleaned = tokenizer.decode(probe)
    except Exception:  # a tokenizer that cannot take the probe: trust its setting
        return True
    if " ." in raw:
        return " ." not in cleaned
    return True  # the probe lost its space: trust the setting


# --- incremental detokenization ----------------------------------------------------------------------


class IncrementalDetokenizer:
    """Token ids in, text out, a few tokens at a time.

    ``feed(ids)`` returns the text those ids complete; ``finish()`` returns the rest. The pieces joined equal
    ``tokenizer.decode(all_ids)`` (special tokens kept). A character split across byte-level tokens waits
    until its last byte arrives. Each step decodes only a short window (the tokens of the previous piece,
    which give the decoder its context, and the new ones), so the cost is linear in the number of tokens.
    """

    def __init__(self, tokenizer: Any, *, check: bool = True, name: str = "ids") -> None:
        self._tokenizer = tokenizer
        self._check = check
        self._name = name
        self._ids: list[int] = []
        self._prefix = 0  # window start: the first token of the last emitted piece
        self._read = 0  # tokens before this are emitted
        self._prefix_text: str | None = None  # decode(ids[prefix:read]), kept while nothing is emitted
        self._dropped = 0  # ids trimmed from the front of ``_ids``
        self._finished = False
        self._cleanup = _CleanupStage(tokenizer.clean_up_tokenization) if _cleanup_applies(tokenizer) else None

    @property
    def count(self) -> int:
        """Token ids fed so far."""
        return self._dropped + len(self._ids)

    def feed(self, ids: Any) -> str:
        """Add one id or a sequence of them (list, 1-D array or tensor); returns the text they complete."""
        if self._finished:
            raise UsageError("IncrementalDetokenizer.feed() called after finish(); create a new one for the next "
                             "generation", code="detokenizer_finished")
        new = sequence_ids(ids, self._name)
        if self._check:
            check_ids(self._tokenizer, new, self._name, self.count)
        pieces = []
        for start in range(0, len(new), STEP):
            self._ids.extend(new[start : start + STEP])
            pieces.append(self._advance(final=False))
        return self._clean("".join(pieces), final=False)

    def finish(self) -> str:
        """The text still held (an incomplete character at the end decodes as decode gives it)."""
        if self._finished:
            return ""
        self._finished = True
        return self._clean(self._advance(final=True), final=True)

    def _decode(self, ids: list[int]) -> str:
        if self._cleanup is not None:
            text: str = self._tokenizer.decode(ids, clean_up_tokenization_spaces=False)
        else:
            text = self._tokenizer.decode(ids)
        return text

    def _advance(self, *, final: bool) -> str:
        ids = self._ids
        end = len(ids)
        if self._read == end:
            return ""
        if self._prefix_text is None:
            self._prefix_text = self._decode(ids[self._prefix : self._read])
        full = self._decode(ids[self._prefix :])
        if not final and full.endswith(REPLACEMENT):
            if end - self._read <= MAX_PENDING:
                return ""  # a character is still incomplete
            # Many tokens wait: emit up to the last complete character among the newest few, or all when
            # they are invalid UTF-8 (no later byte can complete them).
            for cut in range(end - 1, end - MAX_PENDING, -1):
                text = self._decode(ids[self._prefix : cut])
                if not text.endswith(REPLACEMENT):
                    full, end = text, cut
                    break
        piece = full[len(self._prefix_text) :]
        self._prefix, self._read, self._prefix_text = self._read, end, None
        if self._prefix >= TRIM_AT:
            del ids[: self._prefix]
            self._dropped += self._prefix
            self._read -= self._prefix
            self._prefix = 0
        return piece

    def _clean(self, text: str, *, final: bool) -> str:
        return self._cleanup.push(text, final=final) if self._cleanup is not None else text
