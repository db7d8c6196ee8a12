"""A seeded generator of response templates and outputs, and a runner that feeds the same chunking to
chatparse and to transformers' reference parser and reports any divergence."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

import chatparse

LITERAL_POOL = [
    "<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>", "[A]", "[AB]", "<a>", "<ab>",
    "</a>", "END", "\n\n", "<|channel|>", "<|message|>", "<|end|>", "<x>", "</x>", "►", "◄", "<é>",
]
REGEX_POOL = [
    (r"\s*</think>", {}), (r"</think>\s*", {}), (r"<think>\n?", {}), (r"\n*<tool_call>\s*", {}),
    (r"<f=(?P<name>\w+)>", {"name"}), (r"</f>", {}), (r"<t\d>", {}), (r"(?<=\n)<x>", {}), (r"<y(?=>)", {}),
    (r"\[END\]|\[STOP\]", {}), (r"<\|channel\|>commentary to=functions\.(?P<name>\w+).*?<\|message\|>", {"name"}),
    (r"<\|channel\|>analysis<\|message\|>", {}), (r"<\|end\|>|<\|call\|>", {}), (r"\s*<answer>\s*", {}),
    (r"(?P<tag>[A-Z]{2,4}):", {"tag"}), (r"<(?P<kind>a|ab)>", {"kind"}), (r"\n\n+", {}), (r"\bEND\b", {}),
    (r"^<start>", {}), (r"</x>(?!y)", {}),
]
TEXT_BITS = [
    "hello", " world", "\n", "  ", "é", "日本語", "🙂", "x", "<", "</", "<t", "<|", "|>", "{", "}", "\"", "42",
    " 3.5 ", "true", "[", "]", ",", ":", "a=1", "<ab", "<a", "END", "ENDING", "\n\n\n", "AB:", "XYZ:",
]
JSON_BODIES = [
    '{"name": "f", "arguments": {"x": 1}}', '{"a": [1, 2, {"b": null}]}', '[{"tool_name": "t", "parameters": {}}]',
    '{name: "q", args: {k: 2}}', "{'bad': json}", '"str"', "17", '{"s": "</tool_call> inside"}', "",
]
XML_BODIES = ['<parameter=city>London</parameter><parameter=n>3</parameter>', "<parameter=k>{\"a\": 1}</parameter>",
              "<parameter=a>1</parameter><parameter=a>2</parameter>", "no tags"]
KV_BODIES = ["name: alice\nage: 30", "a:1\n\nb : two : three", "nothing here", "k=v"]
CALL_BODIES = ['[f(a=1, b="x")]', "[g()]", "[h(x=[1, {'k': None}], y=True)]", "[f(1)]", "[]", "[f(a=1,)]"]
SCALAR_BODIES = [" 42 ", "3.25", "true", "0", "x", " False ", "1e3"]


def _delimiter(rng: random.Random, used: set[str]) -> tuple[str, Any, set[str]]:
    roll = rng.random()
    if roll < 0.55:
        lit = rng.choice([x for x in LITERAL_POOL if x not in used] or LITERAL_POOL)
        used.add(lit)
        return "literal", lit, set()
    if roll < 0.7:
        k = rng.randint(2, 3)
        lits = rng.sample(LITERAL_POOL, k)
        used.update(lits)
        return "literal", lits, set()
    pattern, groups = rng.choice(REGEX_POOL)
    return "pattern", pattern, set(groups)


def _content(rng: random.Random) -> tuple[str, dict[str, Any]]:
    kind = rng.choice(["text", "text", "text", "json", "json", "int", "float", "bool", "xml-inline", "kv-lines",
                       "python-call-list"])
    args: dict[str, Any] = {}
    if kind == "json":
        if rng.random() < 0.3:
            args["allow_non_json"] = True
        if rng.random() < 0.2:
            args["unquoted_keys"] = True
        if rng.random() < 0.1:
            args["string_delims"] = [["<|\"|>", "<|\"|>"]]
    elif kind == "xml-inline":
        args["tag_pattern"] = r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>"
        if rng.random() < 0.5:
            args["value_parser"] = {"name": "json", "args": {"allow_non_json": True}}
        if rng.random() < 0.5:
            args["merge_duplicates"] = True
    elif kind == "kv-lines" and rng.random() < 0.3:
        args["value_parser"] = {"name": "json", "args": {"allow_non_json": True}}
    elif kind == "text" and rng.random() < 0.15:
        args["strip"] = False
    return kind, args


def random_template(rng: random.Random) -> dict[str, Any]:
    used: set[str] = set()
    fields: dict[str, Any] = {}
    names = ["thinking", "tool_calls", "extra", "meta"]
    for name in names[: rng.randint(1, 3)]:
        spec: dict[str, Any] = {}
        groups: set[str] = set()
        kind, value, g = _delimiter(rng, used)
        spec["open" if kind == "literal" else "open_pattern"] = value
        groups |= g
        if rng.random() < 0.9:
            kind, value, g = _delimiter(rng, used)
            spec["close" if kind == "literal" else "close_pattern"] = value
            groups |= g
        content, args = _content(rng)
        spec["content"] = content
        if args:
            spec["content_args"] = args
        if rng.random() < 0.4:
            spec["repeats"] = True
            if content in ("text",) and rng.random() < 0.4:
                spec["join"] = rng.choice(["", "\n"])
        if groups or (content == "json" and rng.random() < 0.3):
            transform: dict[str, Any] = {"type": "function", "function": {"arguments": "{content}"}}
            for gname in sorted(groups):
                transform["function"][gname] = "{" + gname + "}"
            spec["transform"] = transform
        if rng.random() < 0.05:
            spec["optional"] = False
        fields[name] = spec
    if rng.random() < 0.8:
        implicit: dict[str, Any] = {"content": "text"}
        if rng.random() < 0.6:
            implicit["close"] = rng.choice(["<|im_end|>", "<|return|>", ["<|im_end|>", "<|endoftext|>"]])
        if rng.random() < 0.3:
            implicit["repeats"] = True
            implicit["join"] = ""
        fields["content"] = implicit
    template: dict[str, Any] = {"fields": fields}
    if rng.random() < 0.7:
        template["defaults"] = {"role": "assistant"}
    if rng.random() < 0.8:
        template["start_anchor"] = rng.choice(["<|im_start|>assistant\n", ["<|im_start|>assistant\n", "<|assistant|>"]])
    else:
        template["start_anchor_pattern"] = r"<\|start\|>assistant(?:<\|channel\|>\w+)?"
    return template


# A second generator: delimiters from a tiny alphabet that overlap heavily (a literal that is both one
# field's open and another's, a literal list whose members nest, growable patterns such as `<x>\d+`, a
# close that is also an open) over short outputs of the same alphabet, split at every position.
OVERLAP_LITERALS = ["<x>", "<x>1", "<x>12", "</x>", "x", "xx", "<y>", "</y>", "1", "<", "x>", "<x><y>"]
OVERLAP_PATTERNS = [r"<x>\d+", r"<x>\d*", r"x+", r"\d+", r"</x>\s*", r"<y>|<y>1", r"<(?P<t>[xy])>", r"1+x",
                    r"<x>(?=1)", r"x(?!1)", r"(?<=1)<x>", r"<x>\d+</x>"]
OVERLAP_TEXT = ["<", "x", ">", "1", "2", "/", "a", " ", "y", "<x>", "</x>", "<y>", "11", "<x>1"]


def _overlap_delimiter(rng: random.Random) -> tuple[str, Any]:
    roll = rng.random()
    if roll < 0.45:
        return "literal", rng.choice(OVERLAP_LITERALS)
    if roll < 0.6:
        return "literal", rng.sample(OVERLAP_LITERALS, 2)
    return "pattern", rng.choice(OVERLAP_PATTERNS)


def overlap_template(rng: random.Random) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    opens: list[tuple[str, Any]] = []
    for name in ["a", "b", "c"][: rng.randint(1, 3)]:
        kind, value = _overlap_delimiter(rng)
        spec: dict[str, Any] = {"open" if kind == "literal" else "open_pattern": value}
        opens.append((kind, value))
        if rng.random() < 0.85:
            kind, value = rng.choice(opens) if rng.random() < 0.3 else _overlap_delimiter(rng)
            spec["close" if kind == "literal" else "close_pattern"] = value
        spec["content"] = rng.choice(["text", "text", "int", "json"])
        if rng.random() < 0.3:
            spec["repeats"] = True
        if any("(?P<t>" in spec.get(key, "") for key in ("open_pattern", "close_pattern")):
            spec["transform"] = {"v": "{content}", "t": "{t}"}
        fields[name] = spec
    if rng.random() < 0.7:
        implicit: dict[str, Any] = {"content": "text"}
        if rng.random() < 0.6:
            kind, value = _overlap_delimiter(rng) if rng.random() < 0.5 else rng.choice(opens)
            if kind == "pattern" and "(?P<" in value:
                kind, value = "literal", "</x>"
            implicit["close" if kind == "literal" else "close_pattern"] = value
        fields["content"] = implicit
    return {"start_anchor": "<|a|>", "fields": fields}


def overlap_case(rng: random.Random) -> tuple[dict[str, Any], str, list[list[str]]]:
    """A template, a prefix and the chunkings of one short output: the usual four and every two-way split."""
    template = overlap_template(rng)
    output = "".join(rng.choice(OVERLAP_TEXT) for _ in range(rng.randint(1, 25)))
    prefix = rng.choice(["", "<|a|>", "<|a|><x>", "<|a|>x"])
    splits = [[output[:i], output[i:]] for i in range(1, len(output))]
    return template, prefix, chunkings(rng, output) + splits


def _delims_of(template: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for spec in template["fields"].values():
        for key in ("open", "close"):
            v = spec.get(key)
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, list):
                out.extend(v)
    out += ["<f=get>", "<f=w_x>", "</f>", "<t1>", "\n<x>", "<y>", "[END]", "AB:", "<ab>", "<a>",
            "<|channel|>commentary to=functions.get_w <|constrain|>json<|message|>", "<|channel|>analysis<|message|>",
            "<|end|>", "<|call|>", "\n<answer>\n", "<start>", "</x>y", "</x>z", " END "]
    return out


def random_output(rng: random.Random, template: dict[str, Any], size: int) -> str:
    delims = _delims_of(template)
    bodies = TEXT_BITS + JSON_BODIES + XML_BODIES + KV_BODIES + CALL_BODIES + SCALAR_BODIES
    parts: list[str] = []
    total = 0
    while total < size:
        roll = rng.random()
        if roll < 0.35:
            piece = rng.choice(delims)
            if rng.random() < 0.1:
                piece = piece[: rng.randint(1, max(1, len(piece) - 1))]  # a truncated delimiter
        else:
            piece = rng.choice(bodies)
        parts.append(piece)
        total += len(piece)
    return "".join(parts)


def random_prefix(rng: random.Random, template: dict[str, Any]) -> str:
    roll = rng.random()
    if roll < 0.25:
        return ""
    turn = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nold answer<|im_end|>\n"
    anchor = "<|im_start|>assistant\n" if "start_anchor" in template else "<|start|>assistant"
    tail = rng.choice(["", "<think>", "<think>\n", "[A]", "<a>", "<f=get>", "partial <", "<|channel|>analysis<|message|>"])
    return turn * rng.randint(0, 2) + anchor + tail


def chunkings(rng: random.Random, text: str) -> list[list[str]]:
    out = [[text], list(text)]
    for _ in range(2):
        cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 12)))) if len(text) > 1 else []
        pieces, last = [], 0
        for c in [*cuts, len(text)]:
            pieces.append(text[last:c])
            last = c
        out.append(pieces)
    return out


@dataclass
class Outcome:
    initial: Any
    per_feed: list[Any]
    final: Any
    error: BaseException | None


def run(parser_cls: Any, template: Any, prefix: str, chunks: list[str], tools: Any = None) -> Outcome:
    initial: Any = None
    per_feed: list[Any] = []
    try:
        parser = parser_cls(template, prefix=prefix, tools=tools)
        initial = json.loads(json.dumps(parser.initial_events, default=repr))
        for chunk in chunks:
            per_feed.append(json.loads(json.dumps(parser.feed(chunk), default=repr)))
        message, events = parser.finalize()
        final = json.loads(json.dumps([message, events], default=repr))
        return Outcome(initial, per_feed, final, None)
    except Exception as exc:  # the comparison is about which exceptions escape
        return Outcome(initial, per_feed, None, exc)


def compare(ours: Outcome, ref: Outcome) -> str | None:
    """None when chatparse behaved as the reference did, else a description of the difference."""
    if ref.error is not None or ours.error is not None:
        if ref.error is None or ours.error is None:
            return f"raise mismatch: ours={ours.error!r} ref={ref.error!r}"
        if not isinstance(ours.error, chatparse.ChatparseError):
            return f"ours raised a non-chatparse error {ours.error!r}"
        ref_base = next(c for c in (KeyError, ValueError, RuntimeError, TypeError, Exception)
                        if isinstance(ref.error, c))
        if not isinstance(ours.error, ref_base):
            return f"exception class mismatch: ours={type(ours.error).__mro__} ref={type(ref.error)}"
        if ours.per_feed != ref.per_feed or ours.initial != ref.initial:
            return "events before the error differ"
        return message_difference(ours.error, ref.error)
    if ours.initial != ref.initial:
        return f"initial_events differ:\n ours={ours.initial}\n ref ={ref.initial}"
    if ours.per_feed != ref.per_feed:
        for i, (a, b) in enumerate(zip(ours.per_feed, ref.per_feed, strict=False)):
            if a != b:
                return f"feed #{i} events differ:\n ours={a}\n ref ={b}"
    if ours.final != ref.final:
        return f"final differs:\n ours={ours.final}\n ref ={ref.final}"
    return None


# A quoted text longer than this in a reference message is model output that chatparse shows as an
# excerpt (chatparse.errors.excerpt); everything else in the message must appear verbatim.
QUOTE_LIMIT = 80
_QUOTED = re.compile(r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*\"""")


def message_text(error: BaseException) -> str:
    """What an exception says (a plain KeyError's str() would add quotes around its message)."""
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    return str(error)


def message_difference(ours: BaseException, ref: BaseException) -> str | None:
    """None when chatparse's message contains the reference's message text, in order, with any quoted
    text over QUOTE_LIMIT characters (a whole region) free to be shortened; else what is missing."""
    text, at = message_text(ours), 0
    for piece in _message_pieces(message_text(ref)):
        found = text.find(piece, at)
        if found < 0:
            return f"message lacks the reference's {piece!r}:\n ours={text[:300]!r}\n ref ={message_text(ref)[:300]!r}"
        at = found + len(piece)
    return None


def _message_pieces(message: str) -> list[str]:
    pieces, last = [], 0
    for quoted in _QUOTED.finditer(message):
        if len(quoted.group()) - 2 > QUOTE_LIMIT:
            pieces.append(message[last : quoted.start()])
            last = quoted.end()
    pieces.append(message[last:])
    return [piece for piece in pieces if piece]
