"""The synthetic outputs ``chatparse bench`` times: three bench templates (transformers-readable, one per
tool-call format), outputs of any size in each with a tool call every so often, the built-ins that read
each format, and outputs cut by the token limit (in reasoning, in content, inside a tool call)."""

from __future__ import annotations

import random

QWEN3 = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>"},
        "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close": "<|im_end|>", "repeats": True, "join": ""},
    },
}
HARMONY = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|start|>assistant",
    "fields": {
        "thinking": {"open": "<|channel|>analysis<|message|>", "close": "<|end|>"},
        "tool_calls": {"open_pattern": r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>",
                       "close": "<|call|>", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
        "content": {"open": "<|channel|>final<|message|>", "close": ["<|return|>", "<|end|>"], "repeats": True,
                    "join": ""},
    },
}
# transformers' shipped fallback for Qwen 3.5 (XML tool calls, \s*-led delimiters).
QWEN35 = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>\s*<function=(?P<name>[^>\n]+)>",
            "close_pattern": r"</function>\s*</tool_call>",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"<parameter=(?P<key>[^>\n]+)>\s*(?P<value>.*?)\s*</parameter>"},
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)", "content": "text"},
    },
}
TEMPLATES = {"qwen3-literal": QWEN3, "gpt-oss-regex": HARMONY, "qwen3.5-xml": QWEN35}
WORDS = "the model considers every option carefully before it answers and then it writes a reply".split()


def _words(rng: random.Random, n: int) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        word = rng.choice(WORDS) + ("\n" if rng.random() < 0.05 else " ")
        out.append(word)
        size += len(word)
    return "".join(out)


def _call(kind: str, i: int) -> str:
    if kind == "qwen3-literal":
        return f'<tool_call>{{"name": "search", "arguments": {{"query": "item {i}", "limit": {i}}}}}</tool_call>'
    if kind == "gpt-oss-regex":
        return (f"<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
                f'{{"query": "item {i}", "limit": {i}}}<|call|>')
    return (f"\n<tool_call>\n<function=search>\n<parameter=query>\nitem {i}\n</parameter>\n"
            f"<parameter=limit>\n{i}\n</parameter>\n</function>\n</tool_call>")


def _markers(kind: str) -> tuple[str, str, str]:
    """The reasoning open, the reasoning close that starts the content, and the end of the turn."""
    if kind == "gpt-oss-regex":
        return "<|channel|>analysis<|message|>", "<|end|><|channel|>final<|message|>", "<|return|>"
    return "<think>", "</think>\n\n", "<|im_end|>"


def make_output(kind: str, size: int, *, seed: int = 0, every: int = 4000, reasoning: int | None = None) -> str:
    """Half reasoning (or ``reasoning`` characters), then content with a tool call about every ``every``
    characters, and the end marker."""
    rng = random.Random(seed)
    reasoning = size // 2 if reasoning is None else reasoning
    head, mid, tail = _markers(kind)
    parts = [head, _words(rng, reasoning), mid]
    written, i = reasoning, 0
    while written < size:
        chunk = _words(rng, every)
        if kind == "gpt-oss-regex":  # the final message ends, the call follows, a new final message starts
            parts += [chunk, "<|end|>", _call(kind, i), "<|channel|>final<|message|>"]
        else:
            parts += [chunk, _call(kind, i)]
        written += len(chunk) + 80
        i += 1
    parts.append(tail)
    return "".join(parts)


def make_truncated(size: int, *, seed: int = 0) -> str:
    """Reasoning and content with no tool call and no end marker (cut by the token limit)."""
    rng = random.Random(seed)
    return "<think>" + _words(rng, size // 2) + "</think>\n\n" + _words(rng, size // 2)


# Built-in templates (what users load by name), each on output in its own format. The built-ins use
# chatparse's real-output extensions, which transformers does not read: the reference runs the bench
# template of the same format, and the row checks that both found the same tool calls.
BUILTINS = {"qwen3": "qwen3-literal", "qwen3.5": "qwen3.5-xml", "gpt_oss": "gpt-oss-regex"}
# A cut output: the text before the cut point (reasoning open, content start, or inside a tool call's
# string argument), then words up to the size, no end marker (the token limit stopped generation).
CUTS = ("reasoning", "content", "call")


def bench_cuts(kind: str) -> dict[str, tuple[str, str]]:
    """``{cut: (prefix, text before the cut)}`` for the bench output of ``kind``."""
    head, mid, _ = _markers(kind)
    text = make_output(kind, 6_000, every=2_000, reasoning=1_000)
    content = text.index(mid) + len(mid)
    return {"reasoning": ("", head), "content": ("", text[:content]), "call": ("", text[: text.index("item 0")])}
