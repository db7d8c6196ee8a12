"""Random walks through a grammar with a model's own tokenizer (special tokens as tokens), through the matcher
of the backend that runs it: llguidance over the Lark form (vLLM's guidance backend) or xgrammar over the
structural tag (vLLM's default backend). What a walk writes is text the backend lets the model write."""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from typing import Any, Protocol


class Matcher(Protocol):
    vocab_size: int
    stops: Collection[int]

    def done(self) -> bool: ...
    def can_end(self) -> bool: ...
    def forced(self) -> list[int]: ...
    def allowed(self) -> list[int]: ...
    def consume(self, ids: list[int]) -> bool: ...


class GuidanceMatcher:
    """llguidance's matcher over a Lark grammar with the model's tokenizer (what vLLM's guidance backend runs)."""

    def __init__(self, tokenizer: Any, lark: str) -> None:
        import llguidance
        import llguidance.hf

        self.tokenizer = llguidance.hf.from_tokenizer(getattr(tokenizer, "tokenizer", tokenizer))
        self.matcher = llguidance.LLMatcher(self.tokenizer, lark)
        assert not self.matcher.is_error(), self.matcher.get_error()
        self.vocab_size: int = self.tokenizer.vocab_size
        self.stops: Collection[int] = {self.tokenizer.eos_token}

    def done(self) -> bool:
        return bool(self.matcher.is_stopped())

    def can_end(self) -> bool:
        return bool(self.matcher.is_accepting())

    def forced(self) -> list[int]:
        return list(self.matcher.compute_ff_tokens())

    def allowed(self) -> list[int]:
        mask = self.matcher.compute_bitmask()
        return [i for i in range(self.vocab_size) if mask[i >> 3] >> (i & 7) & 1]

    def consume(self, ids: list[int]) -> bool:
        taken = self.matcher.try_consume_tokens(ids)
        if taken == len(ids):
            return True
        if taken:
            self.matcher.rollback(taken)
        return False


class XGrammarMatcher:
    """xgrammar's matcher over a structural tag, compiled as vLLM's xgrammar backend compiles one (the
    tokenizer's whole vocabulary; ``compiler``: one to share, as vLLM shares its caching compiler) with
    ``stops`` as the request's stop tokens."""

    def __init__(self, tokenizer: Any, tag: str, stops: Sequence[str], compiler: Any = None) -> None:
        import xgrammar as xgr

        hf = getattr(tokenizer, "tokenizer", tokenizer)
        self.vocab_size = len(hf)
        self.stops = sorted({hf.convert_tokens_to_ids(stop) for stop in stops})
        if compiler is None:
            info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=self.vocab_size, stop_token_ids=self.stops)
            compiler = xgr.GrammarCompiler(info)
        self.matcher = xgr.GrammarMatcher(compiler.compile_structural_tag(tag), override_stop_tokens=self.stops)
        self.bitmask = xgr.allocate_token_bitmask(1, self.vocab_size)

    def done(self) -> bool:
        return bool(self.matcher.is_terminated())

    def can_end(self) -> bool:
        return bool(self.matcher.is_completed())

    def forced(self) -> list[int]:
        return []

    def allowed(self) -> list[int]:
        self.matcher.fill_next_token_bitmask(self.bitmask)
        words = self.bitmask[0].tolist()
        return [i for i in range(self.vocab_size) if words[i >> 5] >> (i & 31) & 1]

    def consume(self, ids: list[int]) -> bool:
        for taken, token in enumerate(ids):
            if not self.matcher.accept_token(token):
                if taken:
                    self.matcher.rollback(taken)
                return False
        return True


def walk_tokens(tokenizer: Any, matcher: Matcher, seed: int, markers: Sequence[str]) -> list[int] | None:
    """Token ids a random walk through the grammar writes (a stop token ends it and is left out of the text, as
    vLLM leaves it), or None if it did not finish; now and then it writes one of ``markers`` whole where the
    grammar takes it, and after a while it prefers tokens that close things."""
    closing = {i for i in range(matcher.vocab_size)
               if tokenizer.decode([i], skip_special_tokens=False) in ('"', "}", "]", ">", "<", "/", "\n", "a", "1")}
    rng = random.Random(seed)
    ids: list[int] = []
    for step in range(4000):
        if matcher.done() or (matcher.can_end() and rng.random() < 0.3):
            return ids
        forced = matcher.forced()
        if forced and rng.random() < 0.8:
            assert matcher.consume(forced)
            ids.extend(forced)
            continue
        allowed = [i for i in matcher.allowed() if i not in matcher.stops]
        if not allowed:
            return ids if matcher.can_end() else None
        if markers and step > 20 and rng.random() < 0.3:
            marker = tokenizer.encode(rng.choice(markers), add_special_tokens=False)
            if matcher.consume(marker):
                ids.extend(marker)
                continue
        preferred = [i for i in allowed if i in closing] if step > 40 else []
        token = rng.choice(preferred if preferred and rng.random() < 0.9 else allowed)
        assert matcher.consume([token])
        ids.append(token)
    return None


def assert_token_walks_parse_back(family: str, tokenizer: Any, matcher_of: Callable[[Any], Matcher],
                                  special: Any) -> None:
    """Random walks with ``matcher_of(grammar)``'s matcher and the family's tokenizer parse back, with the
    family's rendered prompt as prefix, into the calls ``required``, a named tool and ``auto`` demand, with
    schema-valid arguments (``special``: the special tokens the grammar is built with)."""
    import jsonschema

    import chatparse
    from chatparse.grammar import tool_grammar
    from tests.grammar.test_builtins import STRESS_TOOLS, _check_message, _prefix

    prefix = _prefix(family)
    finished = 0
    choices = ("required", "plan_trip", "auto")
    for choice in choices:
        grammar = tool_grammar(family, STRESS_TOOLS, tool_choice=choice, prefix=prefix, special_tokens=special)
        markers = sorted(grammar.grammar.literals())
        for seed in range(3):
            ids = walk_tokens(tokenizer, matcher_of(grammar), seed, markers)
            if ids is None:
                continue
            finished += 1
            text = tokenizer.decode(ids, skip_special_tokens=False)
            message = chatparse.parse_response(text, family, prefix=prefix, tools=STRESS_TOOLS)
            try:
                _check_message(message, choice, True)
            except (AssertionError, jsonschema.ValidationError) as exc:
                raise AssertionError(f"{family} {choice}: {text!r}\n-> {message}\n{exc}") from exc
    assert finished >= 2 * len(choices) - 1, f"only {finished} of {3 * len(choices)} walks finished"
