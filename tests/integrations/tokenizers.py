"""Real transformers tokenizers, built locally with the ``tokenizers`` library (no hub, no network): the
three decoder families chat models use, each wrapped in ``transformers.PreTrainedTokenizerFast``.

- ``byte_level``: GPT-2 / Qwen / Llama 3 style byte-level BPE; a character outside the merges is split into
  byte tokens, so multi-byte text (Korean, emoji) spans several tokens.
- ``sentencepiece_like``: Llama 2 / Mistral style (``▁`` for spaces, byte fallback ``<0xE2>`` tokens, a
  leading space stripped by the decoder).
- ``wordpiece``: BERT style, with ``clean_up_tokenization_spaces`` on (decode joins tokens with spaces and
  removes the space before punctuation).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from chatparse.templates import get_template
from tests import tokens
from tests.templates.corpus_loader import corpus_cases, load_case

SAMPLE = ["the model thinks, then it answers: hello world!", "안녕하세요 세계 😀 🙂 東京 — ünïcödé",
          '{"name": "get_weather", "arguments": {"city": "Seoul", "days": 3}}', "  spaces\tand\nnewlines\r\n",
          "punctuation . ? ! , ' n't 'm 's 've 're: it's fine, isn't it? yes!"]


def _wrap(tokenizer: Tokenizer, special: Iterable[str], added: Iterable[str], **kwargs: Any) -> PreTrainedTokenizerFast:
    tokenizer.add_special_tokens([AddedToken(m, special=True, normalized=False) for m in special])
    tokenizer.add_tokens([AddedToken(m, special=False, normalized=False) for m in added])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, **kwargs)


def byte_level(texts: Iterable[str] = SAMPLE, *, special: Sequence[str] = (), added: Sequence[str] = (),
               vocab_size: int = 350, **kwargs: Any) -> PreTrainedTokenizerFast:
    """Byte-level BPE trained on ``texts`` with ``vocab_size`` tokens (256 of them the byte alphabet)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(list(texts), trainer)
    return _wrap(tokenizer, special, added, **kwargs)


def sentencepiece_like(*, special: Sequence[str] = (), **kwargs: Any) -> PreTrainedTokenizerFast:
    """Llama-2-style BPE: ASCII letters, digits, punctuation and a few merges; everything else falls back
    to byte tokens."""
    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": 1 + b for b in range(256)}}
    for ch in "▁" + "".join(chr(c) for c in range(33, 127)):
        vocab.setdefault(ch, len(vocab))
    merges = [("▁", "t"), ("h", "e"), ("▁t", "he"), ("▁", "a"), ("i", "n"), ("o", "r"), ("e", "r")]
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                           decoders.Strip(" ", 1, 0)])
    return _wrap(tokenizer, special, (), unk_token="<unk>", **kwargs)


def wordpiece(texts: Iterable[str] = SAMPLE, *, special: Sequence[str] = (), **kwargs: Any) -> PreTrainedTokenizerFast:
    """BERT-style WordPiece with ``clean_up_tokenization_spaces=True``."""
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=400, special_tokens=["[UNK]"], show_progress=False)
    tokenizer.train_from_iterator(list(texts), trainer)
    return _wrap(tokenizer, special, (), unk_token="[UNK]", clean_up_tokenization_spaces=True, **kwargs)


@cache
def family_tokenizer(family: str) -> PreTrainedTokenizerFast:
    """A byte-level tokenizer for a built-in family: trained on its corpus outputs, with the template's
    special markers as special tokens and its tags as added tokens, as the family's real tokenizer has."""
    special, tags = tokens.template_markers(get_template(family))
    texts = [load_case(path)["output"] for name, path in corpus_cases() if name == family] + SAMPLE
    return byte_level(texts, special=special, added=tags)


def encode(tokenizer: Any, text: str) -> list[int]:
    """``text`` as ids without added BOS/EOS; asserts that decoding gives ``text`` back (else a test that
    compares the id path with the text path would compare different texts)."""
    ids: list[int] = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text, "the test tokenizer does not round-trip this text"
    return ids
