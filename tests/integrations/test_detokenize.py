"""chatparse.integrations.detokenize: token-id input checks and incremental detokenization against
``tokenizer.decode`` of real tokenizers (byte-level BPE, sentencepiece-style byte fallback, WordPiece with
clean-up), however the ids are grouped."""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast

from chatparse.errors import UsageError
from chatparse.integrations.detokenize import (
    MAX_PENDING,
    STEP,
    IncrementalDetokenizer,
    TokenIdError,
    TokenInputError,
    _CleanupStage,
    check_ids,
    decode_ids,
    sequence_ids,
    sequences_ids,
)
from tests.integrations import tokenizers as tk
from tests.tokens import groupings

TEXTS = [
    "안녕하세요, 세계! 😀🙂 and plain ascii. 東京タワー — ünïcödé 👩‍👩‍👧",
    "<|im_start|>assistant\n<think>추론 🤔</think>\n\n답: 42 .<|im_end|>",
    "  leading spaces, trailing spaces  \n\n\ttabs ' quotes 's n't ! ? .",
    "",
]
TOKENIZERS = {
    "byte_level": lambda: tk.byte_level(special=["<|im_start|>", "<|im_end|>"], added=["<think>", "</think>"]),
    "sentencepiece_like": lambda: tk.sentencepiece_like(special=["<|im_start|>", "<|im_end|>"]),
    "wordpiece": lambda: tk.wordpiece(special=["<|im_start|>", "<|im_end|>"]),
}


@pytest.fixture(scope="module", params=sorted(TOKENIZERS))
def tokenizer(request: pytest.FixtureRequest) -> Any:
    return TOKENIZERS[request.param]()


def stream(tokenizer: Any, groups: list[list[int]]) -> list[str]:
    detokenizer = IncrementalDetokenizer(tokenizer)
    return [detokenizer.feed(group) for group in groups] + [detokenizer.finish()]


@pytest.mark.parametrize("text", TEXTS)
def test_pieces_join_to_decode_in_every_grouping(tokenizer: Any, text: str) -> None:
    ids = tokenizer.encode(text, add_special_tokens=False)
    whole = tokenizer.decode(ids)
    for name, groups in groupings(ids, seed=len(text)).items():
        pieces = stream(tokenizer, groups)
        assert "".join(pieces) == whole, name
        if "\ufffd" not in whole:
            assert not any("\ufffd" in p for p in pieces), f"{name}: a character was split"


def test_a_character_split_across_byte_tokens_arrives_whole() -> None:
    tokenizer = tk.sentencepiece_like()
    ids = tokenizer.encode("a😀", add_special_tokens=False)
    assert tokenizer.convert_ids_to_tokens(ids)[-4:] == ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"]
    detokenizer = IncrementalDetokenizer(tokenizer)
    assert [detokenizer.feed(i) for i in ids] == ["a", "", "", "", "😀"]
    assert detokenizer.finish() == ""


def test_an_incomplete_character_at_the_end_decodes_as_decode_does() -> None:
    tokenizer = tk.sentencepiece_like()
    ids = tokenizer.encode("ok😀", add_special_tokens=False)[:-1]  # the emoji's last byte never comes
    detokenizer = IncrementalDetokenizer(tokenizer)
    assert "".join(detokenizer.feed(i) for i in ids) == "ok"
    assert "ok" + detokenizer.finish() == tokenizer.decode(ids)


def test_invalid_utf8_is_held_at_most_max_pending_tokens() -> None:
    tokenizer = tk.sentencepiece_like()
    lone = tokenizer.convert_tokens_to_ids("<0x80>")  # a continuation byte with no lead: never valid
    head = tokenizer.encode("x", add_special_tokens=False)
    ids = head + [lone] * (4 * MAX_PENDING)
    detokenizer = IncrementalDetokenizer(tokenizer)
    pieces = [detokenizer.feed(i) for i in ids]
    assert "".join(pieces[: len(head)]) == "x"
    held = 0
    for piece in pieces[len(head) :]:
        held = 0 if piece else held + 1
        assert held <= MAX_PENDING
    assert "".join(pieces) + detokenizer.finish() == tokenizer.decode(ids)


class RecordingDecode:
    """Wraps a real tokenizer's decode to record how many ids each call decodes."""

    def __init__(self, tokenizer: Any) -> None:
        self.sizes: list[int] = []
        self._decode = tokenizer.decode

    def __call__(self, ids: Any, **kwargs: Any) -> Any:
        self.sizes.append(len(ids))
        return self._decode(ids, **kwargs)


@pytest.mark.parametrize("group", [1, 3, 1000])
def test_each_step_decodes_a_short_window(group: int) -> None:
    tokenizer = tk.byte_level()
    ids = tokenizer.encode(TEXTS[0] * 60, add_special_tokens=False)
    assert len(ids) > 2000
    recorder = RecordingDecode(tokenizer)
    tokenizer.decode = recorder  # type: ignore[method-assign]
    try:
        pieces = stream(tokenizer, [ids[i : i + group] for i in range(0, len(ids), group)])
    finally:
        del tokenizer.decode
    assert "".join(pieces) == tokenizer.decode(ids)
    assert max(recorder.sizes) <= 2 * STEP + 2 * MAX_PENDING
    assert sum(recorder.sizes) <= 12 * len(ids)  # linear in the ids


def test_clean_up_of_tokenization_spaces_matches_decode() -> None:
    tokenizer = tk.wordpiece()
    text = "it's fine, isn't it? yes ! no . 'm 've 're , ok"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) != tokenizer.decode(ids, clean_up_tokenization_spaces=False)  # clean-up is on
    for name, groups in groupings(ids, seed=5).items():
        assert "".join(stream(tokenizer, groups)) == tokenizer.decode(ids), name


def test_bpe_tokenizers_skip_the_clean_up_as_decode_does() -> None:
    tokenizer = tk.byte_level(clean_up_tokenization_spaces=True)
    ids = tokenizer.encode("a . b ?", add_special_tokens=False)
    assert "".join(stream(tokenizer, [[i] for i in ids])) == tokenizer.decode(ids) == "a . b ?"


@cache
def _wordpiece() -> Any:
    return tk.wordpiece()


@given(st.text(alphabet=" .?!,'nmtsvrex", max_size=40), st.lists(st.integers(0, 40), max_size=6))
def test_clean_up_stage_equals_clean_up_of_the_whole(text: str, cuts: list[int]) -> None:
    tokenizer = _wordpiece()
    stage = _CleanupStage(tokenizer.clean_up_tokenization)
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    out = "".join(stage.push(p) for p in pieces) + stage.push("", final=True)
    assert out == tokenizer.clean_up_tokenization(text)


# --- input checks -------------------------------------------------------------------------------------


def test_sequences_take_lists_arrays_and_batches() -> None:
    assert sequence_ids(5) == [5]
    assert sequence_ids((1, 2)) == [1, 2]
    assert sequence_ids(np.array([3, 4], dtype=np.int32)) == [3, 4]
    assert sequence_ids([np.int64(7), 8]) == [7, 8]
    assert sequence_ids(np.int64(9)) == [9]
    assert sequences_ids([[1], [2, 3]]) == ([[1], [2, 3]], True)
    assert sequences_ids(np.array([[1, 2], [3, 4]])) == ([[1, 2], [3, 4]], True)
    assert sequences_ids([]) == ([], True)  # an empty list is an empty batch, as in transformers
    assert sequences_ids(np.array([], dtype=np.int64)) == ([[]], False)


@pytest.mark.parametrize(("value", "path"), [
    ([1, 2.5], "ids[1]"), ([True], "ids[0]"), (np.array([1.0, 2.0]), "ids[0]"), ("text", "ids"),
])
def test_wrong_token_ids_are_named(value: Any, path: str) -> None:
    with pytest.raises(TokenInputError) as info:
        sequence_ids(value)
    assert info.value.code == "bad_token_ids" and info.value.path == path
    assert isinstance(info.value, TypeError)


def test_a_batch_where_one_sequence_is_expected_is_named() -> None:
    for value in ([[1, 2]], np.array([[1, 2]])):
        with pytest.raises(TokenInputError, match="found a batch"):
            sequence_ids(value)
    with pytest.raises(TokenInputError, match=r"ids\[0\]: expected one sequence"):
        sequences_ids(np.zeros((2, 2, 2), dtype=np.int64))


def test_ids_outside_the_vocabulary_are_named_with_their_position() -> None:
    tokenizer = tk.byte_level()
    size = len(tokenizer)
    check_ids(tokenizer, [0, size - 1])
    for bad, pos in (([1, size], 1), ([-1], 0), ([2, 3, 10**9], 2)):
        with pytest.raises(TokenIdError) as info:
            decode_ids(tokenizer, bad, "response")
        assert info.value.code == "token_id_out_of_range"
        assert info.value.offset == pos and info.value.path == f"response[{pos}]"
        assert info.value.details["token_id"] == bad[pos]
        assert f"(0 to {size - 1})" in str(info.value)


def test_an_id_no_token_has_is_outside_the_vocabulary() -> None:
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"a": 0, "b": 1, "d": 3}, "a")))
    check_ids(tokenizer, [0, 1, 3])
    with pytest.raises(TokenIdError, match="found 2 at position 1, an id no token has"):
        check_ids(tokenizer, [3, 2])


def test_streamed_ids_outside_the_vocabulary_count_positions_across_feeds() -> None:
    tokenizer = tk.byte_level()
    detokenizer = IncrementalDetokenizer(tokenizer)
    detokenizer.feed([1, 2, 3])
    with pytest.raises(TokenIdError) as info:
        detokenizer.feed([4, len(tokenizer)])
    assert info.value.offset == 4


def test_feeding_after_finish_is_a_usage_error() -> None:
    detokenizer = IncrementalDetokenizer(tk.byte_level())
    detokenizer.finish()
    assert detokenizer.finish() == ""
    with pytest.raises(UsageError) as info:
        detokenizer.feed([1])
    assert info.value.code == "detokenizer_finished"


def test_random_groupings_of_many_texts(tokenizer: Any) -> None:
    rng = random.Random(11)
    alphabet = "ab 한국어😀é.,'\n<|>"
    for _ in range(30):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        ids = tokenizer.encode(text, add_special_tokens=False)
        for groups in groupings(ids, seed=rng.randint(0, 1000)).values():
            assert "".join(stream(tokenizer, groups)) == tokenizer.decode(ids)
