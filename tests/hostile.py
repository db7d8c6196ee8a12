"""Seeded generators of hostile input for the OpenAI layer, the content parsers, the answers module and the
tools module, and the checks of their properties: only ChatparseError subclasses escape (never an
``EngineFault`` nor an ``internal_error`` result: both mean a bug), one-shot equals streaming for any
chunking, the wire agrees with the final message.

Every generator takes a ``random.Random``: the hypothesis tests pass ``st.randoms()`` (shrinkable), the offline
run (``benchmarks/fuzz_hostile.py``) seeded ones. Every check returns a short outcome label for the counts
and raises ``AssertionError`` (or lets the escaping exception through) on a violation.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import chatparse
from chatparse.errors import ChatparseError, EngineFault, RegexBudgetError
from chatparse.tools.jsonvalue import short_repr
from tests.streamcheck import check_event_stream, random_split

# --- shared pieces --------------------------------------------------------------------------------

NOISE = [
    "<", ">", "</", "/>", "{", "}", "[", "]", "(", ")", '"', "'", ":", ",", ";", "=", "\\", "\\u", "\\ud83d",
    "\\n", "\n", "\n\n", " ", "   ", "\t", "\r\n", "\x00", "\ud800", "é", "🙂", "日本語", "null", "true", "None",
    "1e999", "-0", "NaN", "Infinity", "9" * 400, "0x1F", "a", "x", "name", "arguments", "```", "```json",
]


def split_any(rng: random.Random, text: str) -> list[str]:
    """Whole, one character at a time (short texts), fixed sizes, or a random split (incl. empty pieces)."""
    roll = rng.random()
    if roll < 0.2:
        return [text]
    if roll < 0.35 and len(text) <= 400:
        return list(text) or [""]
    if roll < 0.6:
        size = rng.choice([1, 2, 3, 5, 7, 13, 31])
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]
    pieces = random_split(text, rng)
    if rng.random() < 0.2:
        pieces.insert(rng.randrange(len(pieces) + 1), "")
    return pieces


def mutate(rng: random.Random, text: str, pool: list[str], others: Sequence[str] = ()) -> str:
    """One to three edits: cut, splice with another text, repeat a slice, insert pieces, delete a slice."""
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        at = rng.randrange(len(text) + 1)
        if roll < 0.2:
            text = text[:at]
        elif roll < 0.35 and others:
            other = rng.choice(others)
            text = text[:at] + other[rng.randrange(len(other) + 1) :]
        elif roll < 0.5 and text:
            a, b = sorted(rng.randrange(len(text) + 1) for _ in range(2))
            text = text[:b] + text[a:b] * rng.randint(1, 3) + text[b:]
        elif roll < 0.85:
            text = text[:at] + "".join(rng.choice(pool) for _ in range(rng.randint(1, 4))) + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 20) :]
    return text


def same(a: Any, b: Any) -> bool:
    """Equal, NaN included (a float region may hold NaN, which never equals another NaN)."""
    return bool(a == b) or safe_dumps(a) == safe_dumps(b)


def named(exc: ChatparseError) -> str:
    """The outcome label of a named error; an EngineFault is a bug."""
    assert not isinstance(exc, EngineFault), f"EngineFault: {exc!r} from {exc.__cause__!r}"
    assert isinstance(exc.code, str) and exc.code, exc
    return f"error:{type(exc).__name__}:{exc.code}"


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


class Opaque:
    """A value that is no JSON value (a caller's own object)."""

    def __repr__(self) -> str:
        return "Opaque()"


def hostile_value(rng: random.Random) -> Any:
    """Values only a Python caller can hand over, or that break naive formatting."""
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    return rng.choice([
        10**5000, -(10**400), 2**64, math.nan, math.inf, -0.0, 1e308, _nested(rng.choice([70, 300, 1200])),
        {None: 1}, {1: "a"}, {("t",): 1}, (1, 2), {1, 2}, b"bytes", bytearray(b"x"), Opaque(), cyclic,
        "x" * 70_000, "\ud800", "\x00", "", [None] * 50, {"": {"": {}}},
    ])


def json_value(rng: random.Random, depth: int = 0) -> Any:
    """An ordinary JSON value (strings with markers, escapes and odd characters)."""
    roll = rng.random()
    if depth < 3 and roll < 0.2:
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 3 and roll < 0.35:
        return {rng.choice(KEYS): json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return rng.choice([
        None, True, False, 0, -7, 42, 3.5, -1e-3, 1e20, "", "x", "hello world", "007", "3.0", "true", "null",
        "[1, 2]", "{'a': 1}", '{"a": 1}', "é 日本語 🙂", "line\nbreak", 'quote " inside', "back\\slash",
        "</tool_call>", "<|im_end|>", "</parameter>", "<|call|>", "}", "]",
    ])


KEYS = ["a", "b", "name", "arguments", "city", "n", "mode", "x y", "é", "", "parameters", "content"]


def safe_dumps(value: Any) -> str:
    """JSON text of ``value``, or a bounded repr where JSON cannot hold it (a model writes either)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return short_repr(value, 10**6)


# --- 1. the OpenAI layer --------------------------------------------------------------------------


@dataclass
class StreamCase:
    template: str
    prefix: str
    text: str
    chunks: list[str]
    tools: Any
    on_malformed: str
    buffer_calls: bool
    reasoning_key: str
    finish_reason: str


_CORPUS: dict[str, list[dict[str, Any]]] = {}


def corpus() -> dict[str, list[dict[str, Any]]]:
    """Corpus cases by built-in template name (families with a corpus and a template)."""
    if not _CORPUS:
        from tests.templates.corpus_loader import corpus_cases, load_case

        names = chatparse.list_templates()
        by_key = {name.replace(".", "_"): name for name in names}
        for family, path in corpus_cases():
            if family in by_key:
                _CORPUS.setdefault(by_key[family], []).append(load_case(path))
    return _CORPUS


def _template_pool(template: str) -> list[str]:
    """The template's literal markers (delimiters, end and next-turn markers) and corpus pieces."""
    source = chatparse.load_template(template).source
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str) and 0 < len(value) <= 40:
            found.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if key not in ("transform", "content_args", "defaults", "description"):
                    walk(item)

    walk(source)
    return found + NOISE


_POOLS: dict[str, list[str]] = {}


def stream_case(rng: random.Random) -> StreamCase:
    cases = corpus()
    template = rng.choice(sorted(cases))
    case = rng.choice(cases[template])
    pool = _POOLS.get(template) or _POOLS.setdefault(template, _template_pool(template))
    outputs = [c["output"] for c in cases[template]]
    text = case["output"] if rng.random() < 0.15 else mutate(rng, case["output"], pool, outputs)
    tools = case.get("tools")
    if rng.random() < 0.1:
        tools = [random_tool(rng) for _ in range(rng.randint(1, 2))]
    return StreamCase(
        template=template, prefix=case["prefix"], text=text, chunks=split_any(rng, text), tools=tools,
        on_malformed=rng.choice(["raise", "keep", "recover"]), buffer_calls=rng.random() < 0.25,
        reasoning_key=rng.choice(["reasoning_content", "reasoning"]),
        finish_reason=rng.choice(["stop", "stop", "length", "tool_calls", "content_filter"]),
    )


def _call_id(index: int) -> str:
    return f"call_{index}"


def _one_shot(case: StreamCase) -> tuple[Any, ...]:
    try:
        return ("message", chatparse.parse_response(case.text, case.template, prefix=case.prefix, tools=case.tools,
                                                    on_malformed=case.on_malformed,  # type: ignore[arg-type]
                                                    finish_reason=case.finish_reason))
    except ChatparseError as exc:
        return ("error", named(exc))


def check_stream(case: StreamCase) -> str:
    """The stream's final message is the one-shot message (or both raise the same named error), nothing is
    flagged in ``mismatches``, every chunk is a valid ``chat.completion.chunk`` and the deltas add up to
    ``to_chat_message`` of the final message."""
    from chatparse.openai import ChatCompletionStream, to_chat_message

    expected = _one_shot(case)
    chunks: list[dict[str, Any]] = []
    try:
        stream = ChatCompletionStream(case.template, case.prefix, tools=case.tools, model="m", created=1,
                                      reasoning_key=case.reasoning_key, id_factory=_call_id,
                                      on_malformed=case.on_malformed,  # type: ignore[arg-type]
                                      buffer_calls=case.buffer_calls, completion_id="chatcmpl-x")
        for piece in case.chunks:
            chunks.extend(stream.feed(piece))
        chunks.extend(stream.finish(case.finish_reason))
    except ChatparseError as exc:
        outcome = named(exc)
        if not isinstance(exc, RegexBudgetError):  # a budget may trip under load on either path
            assert ("error", outcome) == expected, (outcome, expected)
        return outcome
    if expected[0] == "error" and "RegexBudgetError" in expected[1]:
        return expected[1]
    assert expected[0] == "message", f"one-shot raised {expected[1]}, the stream did not"
    assert same(stream.message, expected[1])
    if stream.mismatches:  # only the documented limit (docs/openai.md): a key written again after it went out
        assert _repeats_a_key(case.text, stream.message, stream.mismatches), stream.mismatches
        return "ok:repeated_key"
    check_wire(chunks, stream.message, case.reasoning_key, case.finish_reason, exact=case.buffer_calls)
    to_chat_message(stream.message, reasoning_key=case.reasoning_key)
    return "ok"


def _repeats_a_key(text: str, message: dict[str, Any], mismatches: list[str]) -> bool:
    """Whether the mismatches are tool-call fields and some key (an argument or "name") is written in the
    text more often than the final calls hold it: evidence of a repeated key (JSON keeps the last value,
    as do the built-in XML parsers)."""
    calls = message.get("tool_calls")
    functions = [c.get("function") or {} for c in (calls if isinstance(calls, list) else [])]
    held: Counter[str] = Counter({"name": len(functions)})
    for fn in functions:
        if isinstance(fn.get("arguments"), dict):
            held.update(list(fn["arguments"]))

    def written(key: str) -> int:
        k = re.escape(key)
        return len(re.findall(rf'"{k}"\s*:|<parameter={k}>|name="{k}"', text))

    return all(m.startswith("tool_calls") for m in mismatches) and any(written(k) > n for k, n in held.items())


def check_wire(chunks: list[dict[str, Any]], message: dict[str, Any], reasoning_key: str, reason: str,
               *, exact: bool) -> None:
    from openai.types.chat import ChatCompletionChunk

    from chatparse.openai import finish_reason, to_chat_message

    text = {"content": "", reasoning_key: ""}
    calls: dict[int, list[str]] = {}
    for position, chunk in enumerate(chunks):
        json.dumps(chunk)  # NaN/Infinity a model wrote go out as Python writes them (docs/openai.md)
        ChatCompletionChunk.model_validate(chunk)
        choice = chunk["choices"][0]
        assert (choice["finish_reason"] is not None) == (position == len(chunks) - 1), chunk
        delta = choice["delta"]
        for key in text:
            text[key] += delta.get(key) or ""
        for call in delta.get("tool_calls") or []:
            entry = calls.setdefault(call["index"], ["", ""])
            if "id" in call:
                assert entry == ["", ""], f"a second header for tool call {call['index']}"
                entry[0] = call["function"]["name"]
            entry[1] += call["function"].get("arguments") or ""
    wire = to_chat_message(message, reasoning_key=reasoning_key, id_factory=_call_id)
    for key in text:
        final = message.get("content") if key == "content" else wire.get(reasoning_key)
        if final is None or isinstance(final, str):
            assert text[key] == (final or ""), (key, text[key], final)
    final_calls = [(c["function"]["name"], c["function"]["arguments"]) for c in wire.get("tool_calls", [])]
    sent = [tuple(calls[index]) for index in sorted(calls)]
    if exact:
        assert sent == final_calls, (sent, final_calls)
    else:  # a call cut or malformed after its header went out stays on the wire, unfinished
        remaining = iter(sent)
        assert all(call in remaining for call in final_calls), (sent, final_calls)
    assert chunks[-1]["choices"][0]["finish_reason"] == finish_reason(message, reason) or not final_calls


MESSAGE_KEYS = ["content", "thinking", "reasoning_content", "reasoning", "tool_calls", "role", "malformed"]


def message_dict(rng: random.Random) -> dict[str, Any]:
    """A message-like dict: the keys a parse writes, with values of any type, calls of any shape."""
    def value() -> Any:
        roll = rng.random()
        if roll < 0.3:
            return json_value(rng)
        if roll < 0.45:
            return hostile_value(rng)
        if roll < 0.8:
            return [call() for _ in range(rng.randint(0, 3))] if rng.random() < 0.7 else call()
        return rng.choice([None, "", "text", 5, [], {}])

    def call() -> Any:
        if rng.random() < 0.15:
            return hostile_value(rng)
        fn: dict[Any, Any] = {}
        for key in ("name", "arguments"):
            if rng.random() < 0.8:
                fn[key] = rng.choice([json_value(rng), hostile_value(rng), "f", {"a": 1}, '{"a": 1}'])
        return {"type": "function", "function": fn if rng.random() < 0.9 else hostile_value(rng)}

    return {rng.choice(MESSAGE_KEYS): value() for _ in range(rng.randint(0, 5))}


def check_message(message: dict[str, Any]) -> str:
    """``to_chat_message`` and ``to_chat_completion`` give a valid, JSON-serializable wire object or a
    named error."""
    from openai.types.chat import ChatCompletion

    from chatparse.openai import to_chat_completion, to_chat_message

    try:
        wire = to_chat_message(message, id_factory=_call_id)
        completion = to_chat_completion(message, model="m", created=1, id="chatcmpl-x", id_factory=_call_id)
    except ChatparseError as exc:
        return named(exc)
    json.dumps(wire)
    json.dumps(completion)
    ChatCompletion.model_validate(completion)
    assert completion["choices"][0]["message"] == wire
    return "ok"


# --- 2. content parsers, through a template -------------------------------------------------------

# A few well-formed bodies per parser (mutated before use) and the fragments its syntax is made of.
SAMPLES: dict[str, list[str]] = {
    "text": ["plain words", "  padded\n"], "int": ["42", " -7 "], "float": ["3.25", "1e3"], "bool": ["true", "False"],
    "json": ['{"a": [1, 2, {"b": null}], "s": "x"}', '[{"name": "f", "arguments": {"x": 1}}]', '{k: "v"}', "17"],
    "xml-inline": ["<parameter=city>London</parameter><parameter=n>3</parameter>", "<p=a>x</p>y<p=b>[1]</p>"],
    "xml-inline-typed": ['<arg key="a" type="int">1</arg><arg key="b" type="json">{"c": 2}</arg>'],
    "kv-lines": ["name: alice\nage: 30", "a=1;b=2"],
    "json-calls": ['[{"name": "f", "arguments": {"a": 1}}]', '{"name": "g", "parameters": {}}',
                   '{"name": "f", "arguments": {}}; {"name": "g", "arguments": {"b": "x"}}', '{"f": {"a": 1}}'],
    "json-sequence": ['{"a": 1} {"b": [2]}', '{"name": "f", "parameters": {}};{"name": "g"}'],
    "python-calls": ["[f(a=1, b='x'), g()]", "f(x=[1, {'k': None}], y=True)\ng(z=\"s\")", "h(a=1,)"],
    "python-call-list": ['[f(a=1, b="x")]', "[g()]", "[h(x=[1, {'k': None}], y=True)]"],
    "xml-params": ["<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=b>\nx y\n</parameter>\n</function>",
                   '<invoke name="f"><parameter name="a">1</parameter></invoke>'],
    "bare-key-object": ['{a: 1, b: "x", c: [1, {d: null}]}', '{s: <|"|>q<|"|>}'],
}
FRAGMENTS = [
    "{", "}", "[", "]", '"k"', ":", ",", "1", "-0.5e3", "true", "null", '"s"', "'s'", "NaN", "\\u00e9", "f(", ")",
    "a=1", "b='x'", "None", "True", "\n", "<parameter=a>", "</parameter>", '<parameter name="a">', "<function=f>",
    "</function>", "<p=a>", "</p>", '<arg key="a" type="int">', "</arg>", "a: 1", "b=2", ";", "k: ", '<|"|>',
    '"name"', '"arguments"', '"parameters"',
]
PATTERNS = [r"<parameter=(?P<key>\w+)>\s*(?P<value>.*?)\s*</parameter>", r"<p=(?P<key>[^>]+)>(?P<value>.*?)</p>",
            r"<(?P<key>[a-z]+)>(?P<value>[^<]*)</(?P=key)>"]
VALUE_PARSERS = [{"name": "json"}, {"name": "json", "args": {"allow_non_json": True}}, {"name": "int"},
                 {"name": "text", "args": {"strip": False}}, {"name": "python-call-list"}]
ARG_POOLS: dict[str, dict[str, list[Any]]] = {
    "text": {"strip": [True, False]}, "int": {"strip": [True, False]}, "float": {"strip": [True, False]},
    "bool": {"strip": [True, False]},
    "json": {"allow_non_json": [True, False], "unquoted_keys": [True, False],
             "string_delims": [[['<|"|>', '<|"|>']], [["«", "»"]]]},
    "xml-inline": {"tag_pattern": PATTERNS, "value_parser": VALUE_PARSERS, "merge_duplicates": [True, False]},
    "xml-inline-typed": {"tag_pattern": [r'<arg key="(?P<key>[^"]+)" type="(?P<kind>\w+)">(?P<value>.*?)</arg>'],
                         "value_parsers": [{"int": {"name": "int"}, "json": {"name": "json"}}],
                         "default_parser": VALUE_PARSERS},
    "kv-lines": {"line_sep": ["\n", ";"], "kv_sep": [":", "="], "value_parser": VALUE_PARSERS},
    "json-calls": {"accept": [["array"], ["object"], ["sequence"], ["array", "object", "sequence"]],
                   "name_keys": [["name"], ["name", "function"]], "arguments_keys": [["arguments", "parameters"]],
                   "name_as_key": [True, False], "decode_string_arguments": [True, False],
                   "allow_missing_arguments": [True, False], "python_literals": [True, False]},
    "json-sequence": {"separator": [r"\s*;?\s*", r"\s*", r",\s*"], "key_aliases": [{"parameters": "arguments"}]},
    "python-calls": {"brackets": ["required", "optional", "forbidden"], "separator": ["comma", "newline",
                     "comma_or_newline"], "json_literals": [True, False], "accept_json": [True, False],
                     "repairs": [True, False]},
    "xml-params": {"param_open": ["<parameter=(?P<key>[^>\\n]+)>", '<parameter name="(?P<key>[^"]+)">'],
                   "value_close": ["</parameter>"], "value_ends": ["next_param", "close"],
                   "strip_newlines": [True, False], "trailer": ["", "</function>"], "json_body": [True, False],
                   "value_parsers": [{}], "default_parser": VALUE_PARSERS},
    "bare-key-object": {"string_delims": [[['<|"|>', '<|"|>']]], "json_strings": [True, False]},
}
REQUIRED_ARGS = {"xml-inline": ["tag_pattern"], "xml-inline-typed": ["tag_pattern"],
                 "xml-params": ["param_open", "value_close"], "bare-key-object": ["string_delims"]}


@dataclass
class ContentCase:
    parser: str
    template: dict[str, Any]
    text: str
    chunks: list[str]
    on_malformed: str


def content_args(rng: random.Random, parser: str) -> dict[str, Any]:
    pool = ARG_POOLS.get(parser, {})
    keys = [k for k in pool if k in REQUIRED_ARGS.get(parser, []) or rng.random() < 0.4]
    return {key: rng.choice(pool[key]) for key in keys}


def content_template(parser: str, args: dict[str, Any], repeats: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"open": "<x>", "close": "</x>", "content": parser, "content_args": args}
    if repeats:
        spec["repeats"] = True
    return {"start_anchor": "<s>", "fields": {"x": spec, "content": {}}}


def content_body(rng: random.Random, parser: str, samples: Sequence[str] = ()) -> str:
    samples = [*samples, *SAMPLES.get(parser, [])] or ["x"]
    if rng.random() < 0.25:
        return "".join(rng.choice(FRAGMENTS + NOISE) for _ in range(rng.randint(0, 25)))
    return mutate(rng, rng.choice(samples), FRAGMENTS + NOISE, samples) if rng.random() < 0.8 else rng.choice(samples)


_BUILTIN_REGIONS: dict[str, list[tuple[dict[str, Any], str]]] = {}


def builtin_regions() -> dict[str, list[tuple[dict[str, Any], str]]]:
    """Per content parser, (content_args, body) as the built-in templates configure it and the first cases
    of their corpora write it: every parser a built-in uses gets valid arguments and realistic bodies."""
    if not _BUILTIN_REGIONS:
        for template, cases in sorted(corpus().items()):
            fields = chatparse.load_template(template).fields
            for case in cases[:4]:
                try:
                    parser = chatparse.ResponseParser(template, case["prefix"], on_malformed="keep")
                    events = parser.feed(case["output"]) + parser.finalize()[1]
                except ChatparseError:
                    continue
                bodies: dict[str, str] = {}
                for event in events:
                    name, kind = event["field"], event["type"]
                    if kind == "region_open":
                        bodies[name] = ""
                    elif kind == "region_chunk" and name in bodies:
                        bodies[name] += event["text"]
                    elif name in bodies:
                        spec = fields[name]
                        _BUILTIN_REGIONS.setdefault(spec.content, []).append((dict(spec.content_args), bodies.pop(name)))
    return _BUILTIN_REGIONS


def content_case(rng: random.Random, parser: str | None = None) -> ContentCase:
    from chatparse.content.registry import known_content_parsers

    parser = parser or rng.choice(known_content_parsers())
    repeats = rng.random() < 0.3
    builtin = builtin_regions().get(parser, [])
    if builtin and (parser not in ARG_POOLS or rng.random() < 0.5):  # as a built-in configures it and writes it
        args, _ = rng.choice(builtin)
        samples = [body for _, body in builtin if "</x>" not in body]
    else:
        args, samples = content_args(rng, parser), []
    template = content_template(parser, args, repeats)
    try:
        chatparse.load_template(template)
    except chatparse.TemplateError:
        template = content_template(parser, {k: ARG_POOLS[parser][k][0] for k in REQUIRED_ARGS.get(parser, [])},
                                    repeats)
    text = "".join(rng.choice(["pre ", "", "\n"]) + "<x>" + content_body(rng, parser, samples) + "</x>"
                   for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.2:
        text = text[: rng.randrange(len(text) + 1)]  # cut anywhere, also inside a region
    return ContentCase(parser, template, text, split_any(rng, text), rng.choice(["raise", "keep", "recover"]))


def _parse_outcome(template: Any, chunks: list[str], on_malformed: str) -> Any:
    try:
        parser = chatparse.ResponseParser(template, "", on_malformed=on_malformed)  # type: ignore[arg-type]
        events = list(parser.initial_events)
        for piece in chunks:
            events.extend(parser.feed(piece))
        message, final = parser.finalize()
    except ChatparseError as exc:
        return named(exc)
    check_event_stream(events + final, message, template)
    return message


def check_content(case: ContentCase) -> str:
    """Only named errors; one feed and the case's chunking give the same message or the same error."""
    try:
        chatparse.load_template(case.template)
    except ChatparseError as exc:
        return named(exc)
    whole = _parse_outcome(case.template, [case.text], case.on_malformed)
    streamed = _parse_outcome(case.template, case.chunks, case.on_malformed)
    if (isinstance(whole, str) and "RegexBudgetError" in whole) or (isinstance(streamed, str) and "RegexBudget" in streamed):
        return "error:budget"
    assert same(streamed, whole), (streamed, whole)
    return whole if isinstance(whole, str) else "ok"


# --- 3. grounded answers --------------------------------------------------------------------------


@dataclass
class AnswerCase:
    raw: Any
    evidence: Any
    chunks: list[str] = field(default_factory=list)


ANSWERS = ["yes", "긴 답변 " * 3, 'a "quoted" \\ answer\n']
BLOCKS = ["교육비 한도는 분기당 30만 원이다.", "Leave must be requested 30 days ahead.", "é 🙂 \" quoted \\ text",
          "line one\nline two", ""]


def answer_case(rng: random.Random) -> AnswerCase:
    evidence: Any = {f"doc#{i}": rng.choice(BLOCKS) for i in range(rng.randint(0, 3))}
    if rng.random() < 0.05:
        evidence = rng.choice([None, [("doc#0", "x")], {"doc#0": 5}, {1: "x"}, {"doc#0": None}])
    status = rng.choice(["answered", "needs_clarification", "insufficient_evidence"] * 6 + ["maybe", 5])
    ids = list(evidence) if isinstance(evidence, dict) and evidence else ["doc#0"]

    def citation() -> dict[str, Any]:
        source = rng.choice([*ids, "unknown"])
        block = evidence.get(source, "") if isinstance(evidence, dict) else ""
        start = rng.randrange(len(block) + 1) if isinstance(block, str) else 0
        quote = block[start : start + rng.randint(1, 12)] if isinstance(block, str) else ""
        return {"source_id": source, "quote": quote if rng.random() < 0.8 else rng.choice(["not there", " "])}

    answered = status == "answered"
    body: dict[str, Any] = {
        "status": status,
        "answer": (rng.choice(ANSWERS) if answered else None) if rng.random() < 0.85 else rng.choice([None, "", 5]),
        "citations": [citation() for _ in range(rng.randint(1 if answered else 0, 3 if answered else 1))],
        "clarification": (None if status != "needs_clarification" else "which one?") if rng.random() < 0.85
        else rng.choice([None, "", "which one?"]),
    }
    if rng.random() < 0.1:
        del body[rng.choice(list(body))]
    raw = json.dumps(body, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 0, 2]))
    if rng.random() < 0.5:
        raw = mutate(rng, raw, [*NOISE, '"status"', '"answered"', '"answer"', "```json\n", "\n```", " {}"])
    if rng.random() < 0.05:
        raw = rng.choice([None, 5, b"{}", bytearray(b"{}"), "x" * 70_000])
    chunks = split_any(rng, raw) if isinstance(raw, str) else []
    return AnswerCase(raw, evidence, chunks)


def check_answers(case: AnswerCase) -> str:
    """check_answer gives a verdict or names a caller mistake; AnswerStream over any chunking ends in the
    same verdict, and its last view shows the checked status and answer."""
    from chatparse.answers import AnswerStream, check_answer

    try:
        verdict = check_answer(case.raw, case.evidence)
    except ChatparseError as exc:
        return named(exc)
    if isinstance(case.raw, str):
        try:
            encoded = case.raw.encode("utf-8")
        except UnicodeEncodeError:
            encoded = None
        if encoded is not None:
            as_bytes = check_answer(encoded, case.evidence)
            assert (as_bytes.ok, as_bytes.codes, as_bytes.stage) == (verdict.ok, verdict.codes, verdict.stage)
        stream = AnswerStream(case.evidence)
        for piece in case.chunks:
            stream.feed(piece)
        assert stream.finish() == verdict
        if verdict.ok and verdict.answer is not None:
            assert stream.view.status == verdict.answer.status
            assert stream.view.answer_text == (verdict.answer.answer or "")
    return "ok" if verdict.ok else f"verdict:{verdict.codes[0]}"


# --- 4. tools -------------------------------------------------------------------------------------


BAD_KEYWORDS: list[tuple[str, Any]] = [("type", 5), ("type", ["integer", 5]), ("enum", 5), ("enum", "ab"),
                                       ("anyOf", 5), ("anyOf", [5]), ("items", 5), ("properties", [1]),
                                       ("required", "a"), ("nullable", "yes"), ("$ref", 5), ("$ref", "#/nope"),
                                       ("prefixItems", {"a": 1}), ("additionalProperties", 5), ("const", Opaque())]


def schema(rng: random.Random, depth: int = 0, hostile: float = 0.05) -> dict[str, Any]:
    """A JSON Schema for one argument: scalars, enums, arrays, objects, unions, refs; rarely a keyword of the
    wrong shape."""
    roll = rng.random()
    if depth >= 3 or roll < 0.4:
        out: dict[str, Any] = rng.choice([
            {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"},
            {"type": ["integer", "null"]}, {"type": "integer", "nullable": True}, {"enum": ["write", "append"]},
            {"enum": [1, 2, "3", None, True]}, {"const": "x"}, {"type": "string", "enum": ["a", "b"]}, {},
            {"type": ["string", "array"], "items": {"type": "string"}},
        ])
    elif roll < 0.6:
        out = {"type": "array", "items": schema(rng, depth + 1, hostile)}
        if rng.random() < 0.2:
            out = {"type": "array", "prefixItems": [schema(rng, depth + 1, hostile) for _ in range(2)]}
    elif roll < 0.8:
        props = {rng.choice(KEYS): schema(rng, depth + 1, hostile) for _ in range(rng.randint(0, 3))}
        out = {"type": "object", "properties": props}
        if props and rng.random() < 0.5:
            out["required"] = rng.sample(list(props), rng.randint(1, len(props)))
        if rng.random() < 0.3:
            out["additionalProperties"] = rng.choice([True, False, schema(rng, depth + 1, hostile)])
    elif roll < 0.92:
        out = {rng.choice(["anyOf", "oneOf"]): [schema(rng, depth + 1, hostile) for _ in range(rng.randint(1, 3))]}
    else:
        out = {"$ref": "#/$defs/Node"}
    out = dict(out)
    if rng.random() < hostile:
        keyword, bad = rng.choice(BAD_KEYWORDS)
        out[keyword] = bad
    return out


def parameters(rng: random.Random, hostile: float = 0.05) -> dict[str, Any]:
    props = {key: schema(rng, 1, hostile) for key in rng.sample(KEYS, rng.randint(0, 4))}
    root: dict[str, Any] = {"type": "object", "properties": props,
                            "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"},
                                                                                "v": {"type": "integer"}}}}}
    if props and rng.random() < 0.5:
        root["required"] = rng.sample(list(props), rng.randint(1, len(props)))
    if rng.random() < 0.2:
        root["additionalProperties"] = rng.choice([True, False])
    return root


def random_tool(rng: random.Random) -> dict[str, Any]:
    return {"type": "function", "function": {"name": rng.choice(["f", "get_weather", "g"]),
                                             "parameters": parameters(rng)}}


def value_for(rng: random.Random, node: Any, depth: int = 0, root: Any = None) -> Any:
    """A value that roughly follows ``node`` (``$ref``s into ``root``), written the ways models write it
    (numbers as strings, arrays as JSON text, Python literals), with wrong choices and types mixed in."""
    root = node if root is None else root
    if isinstance(node, dict) and isinstance(node.get("$ref"), str) and isinstance(root, dict):
        node = root.get("$defs", {}).get(node["$ref"].rsplit("/", 1)[-1], {})
    if rng.random() < 0.02:
        return hostile_value(rng)
    if not isinstance(node, dict) or rng.random() < 0.05 or depth > 4:
        return json_value(rng)
    kinds = node.get("type")
    kind = rng.choice(kinds) if isinstance(kinds, list) and kinds else kinds
    if isinstance(node.get("enum"), list) and node["enum"]:
        choice = rng.choice(node["enum"])
        return choice if rng.random() < 0.6 else rng.choice([str(choice), f" {choice}", str(choice).capitalize()])
    for union in ("anyOf", "oneOf"):
        if isinstance(node.get(union), list) and node[union]:
            return value_for(rng, rng.choice(node[union]), depth + 1, root)
    if isinstance(kind, str) and kind in SCALARS:
        valid, variants = SCALARS[kind]
        return rng.choice(valid if rng.random() < 0.7 else variants)
    if kind == "array":
        items = [value_for(rng, node.get("items"), depth + 1, root) for _ in range(rng.randint(0, 3))]
        return safe_dumps(items) if rng.random() < 0.1 else items
    if kind == "object" or "properties" in node:
        props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        obj = {key: value_for(rng, sub, depth + 1, root) for key, sub in props.items() if rng.random() < 0.9}
        if rng.random() < 0.1:
            obj[rng.choice(KEYS)] = json_value(rng)
        return short_repr(obj, 10**6) if rng.random() < 0.1 else obj
    return json_value(rng)


SCALARS: dict[str, tuple[list[Any], list[Any]]] = {
    "integer": ([3, -7, 0, 10**20], ["42", " 5 ", "3.0", 3.0, 2.5, "007", "1e3", "1" * 5000, True]),
    "number": ([2.5, -1e-3, 7], ["2.5", "-1e-3", "1e400", "NaN", 10**30, "Infinity"]),
    "boolean": ([True, False], ["true", "False", "1", "yes", 1]),
    "null": ([None], ["null", "None", ""]),
    "string": (["x", "", "é 🙂", "</parameter>"], [5, None, ["x"]]),
}


@dataclass
class CoerceCase:
    arguments: Any
    schema: Any


def coerce_case(rng: random.Random) -> CoerceCase:
    root = parameters(rng)
    arguments: Any = value_for(rng, root)
    if rng.random() < 0.15 and isinstance(arguments, dict):
        arguments = safe_dumps(arguments) if rng.random() < 0.5 else short_repr(arguments, 10**6)
    if rng.random() < 0.03:
        arguments = rng.choice([None, 5, [1], hostile_value(rng)])
    if rng.random() < 0.03:
        root = rng.choice([{"type": "object", "properties": 5}, {"anyOf": 5}, [], {"$ref": "#"}, {"type": 5}])
    return CoerceCase(arguments, root)


def check_coerce(case: CoerceCase) -> str:
    """Only ToolArgumentError/ToolDefinitionError (or ChatparseError) escapes; a success is a fixed point."""
    from chatparse.tools import coerce_arguments

    try:
        once = coerce_arguments(case.arguments, case.schema)
    except ChatparseError as exc:
        return named(exc)
    twice = coerce_arguments(once, case.schema)
    assert safe_dumps(once) == safe_dumps(twice), (once, twice)
    return "ok"


def tool_models() -> list[type[Any]]:
    """ToolInputBase models covering the field types the coercion reads from their JSON Schemas."""
    from enum import Enum
    from typing import Literal

    from pydantic import Field

    from chatparse.tools import ToolInputBase

    class Mode(Enum):
        WRITE = "write"
        APPEND = "append"

    class Inner(ToolInputBase):
        v: int
        tags: list[str] = Field(default_factory=list)

    class Write(ToolInputBase):
        path: str
        mode: Mode = Mode.WRITE
        lines: list[int] = Field(default_factory=list)
        inner: Inner | None = None

    class Pick(ToolInputBase):
        kind: Literal["a", "b", 3]
        weight: float = 1.0
        flag: bool = False
        table: dict[str, int] = Field(default_factory=dict)
        pair: tuple[int, str] | None = None

    class Node(ToolInputBase):
        value: int
        children: list[Node] = Field(default_factory=list)

    return [Write, Pick, Node, Inner]


_MODELS: list[type[Any]] = []


@dataclass
class ModelCase:
    model: type[Any]
    arguments: Any


def model_case(rng: random.Random) -> ModelCase:
    if not _MODELS:
        _MODELS.extend(tool_models())
    model = rng.choice(_MODELS)
    schema_root = model.model_json_schema()
    arguments = value_for(rng, schema_root)
    if isinstance(arguments, dict) and rng.random() < 0.2:
        arguments = safe_dumps(arguments)
    return ModelCase(model, arguments)


def check_model(case: ModelCase) -> str:
    """``from_arguments`` raises only ToolArgumentError (a ChatparseError), never pydantic's errors or others."""
    try:
        case.model.from_arguments(case.arguments)
    except ChatparseError as exc:
        return named(exc)
    return "ok"


@dataclass
class StreamArgsCase:
    text: str
    chunks: list[str]
    nested: bool
    failing_callback: bool
    finish_reason: str | None


def stream_args_case(rng: random.Random) -> StreamArgsCase:
    value = {rng.choice(KEYS): json_value(rng) for _ in range(rng.randint(0, 4))}
    if rng.random() < 0.3:
        value = {"name": "f", "arguments": value}
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 0, 2]))
    if rng.random() < 0.6:
        text = mutate(rng, text, NOISE)
    return StreamArgsCase(text, split_any(rng, text), rng.random() < 0.5, rng.random() < 0.05,
                          rng.choice(["stop", "length", "tool_calls", None, "weird"]))


def _run_args_stream(case: StreamArgsCase, chunks: list[str]) -> tuple[Any, ...]:
    from chatparse.tools import ArgumentStream

    seen: list[tuple[str, str]] = []

    def on_key(key: str, value: Any) -> None:
        seen.append(("key", key))
        if case.failing_callback:
            raise RuntimeError("consumer broke")

    stream = ArgumentStream(on_key_completed=on_key, on_string_progress=lambda k, t: seen.append(("text", t)),
                            stream_key="content", nested_key="arguments" if case.nested else None,
                            on_nested_key_completed=(lambda k, v: seen.append(("nested", k))) if case.nested else None)
    for piece in chunks:
        stream.feed(piece)
    result = stream.finish(case.finish_reason)
    assert result.error is None or result.error.code != "internal_error", result.error
    progress = "".join(t for kind, t in seen if kind == "text")
    keys = [(kind, t) for kind, t in seen if kind != "text"]
    return (result.status, safe_dumps(result.arguments), result.completed_keys, result.partial_key,
            result.error.code if result.error else None, keys, progress if result.ok else None)


def check_stream_args(case: StreamArgsCase) -> str:
    """Never raises; any chunking gives the result of one feed; a strict JSON object is read as json.loads."""
    whole = _run_args_stream(case, [case.text])
    assert _run_args_stream(case, case.chunks) == whole
    strict = _strict_object(case.text)
    if strict is not None and case.finish_reason in ("stop", "tool_calls", None) and not case.failing_callback:
        assert whole[0] == "complete" and json.loads(whole[1]) == strict, (whole, strict)
    return str(whole[0])


def _strict_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object when it is one without duplicate keys, non-finite numbers or >64 levels."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in items}) != len(items):
            raise ValueError("duplicate")
        return dict(items)

    def reject(_: str) -> Any:
        raise ValueError("constant")

    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_constant=reject)
    except (ValueError, RecursionError):
        return None
    deep = json.dumps(value, ensure_ascii=False)
    try:
        deep.encode("utf-8")  # a lone surrogate escape is invalid_unicode for the stream (documented)
    except UnicodeEncodeError:
        return None
    return value if isinstance(value, dict) and deep.count("[") + deep.count("{") <= 60 else None


@dataclass
class XMLCase:
    text: str
    chunks: list[str]
    schema: Any
    finish_reason: str | None


XML_PIECES = ["<tool_call>", "</tool_call>", "<function=f>", "</function>", "<parameter=a>", "<parameter=n>",
              "<parameter=city>", "</parameter>", "\n", "London", "42", '{"k": [1]}', "[1, 2]", "true", "x < y",
              "<", ">", "=", "<parameter=", "<function=", "</param", "é🙂"]


def xml_case(rng: random.Random) -> XMLCase:
    parts = ["<tool_call>\n<function=f>\n"]
    for key in rng.sample(["a", "n", "city"], rng.randint(0, 3)):
        parts.append(f"<parameter={key}>\n{rng.choice(XML_PIECES[9:16])}\n</parameter>\n")
    parts.append("</function>\n</tool_call>")
    text = "".join(parts)
    if rng.random() < 0.5:
        text = mutate(rng, text, XML_PIECES + NOISE)
    chosen: Any = None
    if rng.random() < 0.6:
        chosen = {"type": "object", "properties": {"a": schema(rng, 1), "n": {"type": "integer"},
                                                    "city": {"type": "string"}}}
        if rng.random() < 0.3:
            chosen["required"] = ["city"]
    return XMLCase(text, split_any(rng, text), chosen, rng.choice(["stop", "length", None]))


def _run_xml(case: XMLCase, chunks: list[str]) -> tuple[Any, ...]:
    from chatparse.tools import XMLArgumentStream

    keys: list[str] = []
    stream = XMLArgumentStream(lambda k, v: keys.append(k), parameters_schema=case.schema)
    for piece in chunks:
        stream.feed(piece)
    result = stream.finish(case.finish_reason)
    assert result.error is None or result.error.code != "internal_error", result.error
    return (result.status, safe_dumps(result.arguments), result.completed_keys,
            result.error.code if result.error else None, keys, stream.function_name)


def check_xml(case: XMLCase) -> str:
    whole = _run_xml(case, [case.text])
    assert _run_xml(case, case.chunks) == whole
    return str(whole[0])


# --- the areas, for the test files and the offline run ----------------------------------------------

AREAS: dict[str, tuple[Callable[[random.Random], Any], Callable[[Any], str]]] = {
    "openai.stream": (stream_case, check_stream),
    "openai.message": (message_dict, check_message),
    "content": (content_case, check_content),
    "answers": (answer_case, check_answers),
    "tools.coerce": (coerce_case, check_coerce),
    "tools.model": (model_case, check_model),
    "tools.argument_stream": (stream_args_case, check_stream_args),
    "tools.xml_stream": (xml_case, check_xml),
}


# --- long inputs: each workload's time must grow linearly with its size ------------------------------


def _feed_stream(template: str, text: str, size: int, **options: Any) -> Callable[[], None]:
    from chatparse.openai import ChatCompletionStream

    def run() -> None:
        stream = ChatCompletionStream(template, "", created=1, **options)
        for i in range(0, len(text), size):
            stream.feed(text[i : i + size])
        stream.finish()

    return run


def _long_call_value(n: int) -> Callable[[], None]:
    return _feed_stream("qwen3", '<tool_call>{"name": "f", "arguments": {"a": "' + "x\\n" * (n // 3) + '"}}</tool_call>', 7)


def _many_calls(n: int) -> Callable[[], None]:
    call = '<tool_call>\n{"name": "f", "arguments": {"a": 1, "b": [true]}}\n</tool_call>\n'
    return _feed_stream("qwen3", call * (n // len(call)), 16, on_malformed="recover")


def _unclosed_opens(n: int) -> Callable[[], None]:
    return _feed_stream("qwen3", '<tool_call>{"name": ' * (n // 20), 16, on_malformed="recover")


def _content_body(parser: str) -> Callable[[int], Callable[[], None]]:
    """A region of ``parser`` whose body repeats a sample (one of ours, else a built-in corpus body) to the
    size, fed whole and in 64-character pieces."""
    def make(n: int) -> Callable[[], None]:
        if parser in SAMPLES:
            args, sample = {k: ARG_POOLS[parser][k][0] for k in REQUIRED_ARGS.get(parser, [])}, SAMPLES[parser][0]
        else:
            args, sample = max(builtin_regions().get(parser, [({}, "x")]), key=lambda region: len(region[1]))
        template = content_template(parser, args, False)
        text = "<x>" + (sample + "\n") * max(1, n // (len(sample) + 1)) + "</x>"

        def run() -> None:
            for chunks in ([text], [text[i : i + 64] for i in range(0, len(text), 64)]):
                parser_ = chatparse.ResponseParser(template, "", on_malformed="keep")
                for piece in chunks:
                    parser_.feed(piece)
                parser_.finalize()

        return run

    return make


def _answer_stream(n: int) -> Callable[[], None]:
    from chatparse.answers import AnswerStream

    text = '{"status": "answered", "answer": "' + "\\u00e9 word " * (n // 12) + '", "citations": [], "clarification": null}'

    def run() -> None:
        stream = AnswerStream({"doc#0": "x"})
        for i in range(0, len(text), 7):
            stream.feed(text[i : i + 7])
        stream.finish()

    return run


def _argument_stream(n: int) -> Callable[[], None]:
    from chatparse.tools import ArgumentStream

    text = '{"a": "' + "\\\"x\\u00e9" * (n // 9) + '", "b": [' + "1, " * (n // 6) + "2]}"

    def run() -> None:
        stream = ArgumentStream(stream_key="a", on_string_progress=lambda k, t: None)
        for ch in text:
            stream.feed(ch)
        stream.finish()

    return run


def _xml_stream(n: int) -> Callable[[], None]:
    from chatparse.tools import XMLArgumentStream

    text = "<function=f>\n<parameter=a>\n" + "x</param\n" * (n // 10) + "\n</parameter>\n</function>"

    def run() -> None:
        stream = XMLArgumentStream(parameters_schema={"type": "object", "properties": {"a": {"type": "string"}}})
        for i in range(0, len(text), 3):
            stream.feed(text[i : i + 3])
        stream.finish()

    return run


def _coerce_list(n: int) -> Callable[[], None]:
    from chatparse.tools import coerce_arguments

    items = [rng_item for rng_item in ("1", 2, "x", None, "3.0") * (n // 25)]
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {
        "anyOf": [{"type": "integer"}, {"type": "null"}, {"type": "string"}]}}}}

    def run() -> None:
        coerce_arguments({"a": items}, schema)

    return run


# name -> (the workload for a size, the size the test suite runs: about 0.2 s when linear, far past any
# bound for a Python-level quadratic). benchmarks/fuzz_hostile.py --growth measures each from half to 8x it.
LONG_INPUTS: dict[str, tuple[Callable[[int], Callable[[], None]], int]] = {
    "openai.long_call_value": (_long_call_value, 25_000),
    "openai.many_calls": (_many_calls, 8_000),
    "openai.unclosed_opens": (_unclosed_opens, 40_000),
    "answers.stream": (_answer_stream, 200_000),
    "tools.argument_stream": (_argument_stream, 20_000),
    "tools.xml_stream": (_xml_stream, 60_000),
    "tools.coerce_list": (_coerce_list, 10_000),
}


def long_inputs() -> dict[str, tuple[Callable[[int], Callable[[], None]], int]]:
    """``LONG_INPUTS`` and a 50 K body for every registered content parser."""
    from chatparse.content.registry import known_content_parsers

    return {**LONG_INPUTS, **{f"content.{name}": (_content_body(name), 50_000) for name in known_content_parsers()}}


def run_long_inputs(prefix: str, scale: float = 1.0) -> dict[str, int]:
    """Run every long-input workload whose name starts with ``prefix`` at ``scale`` times its suite size;
    the sizes run (the caller bounds the wall-clock time)."""
    sizes = {}
    for name, (make, size) in long_inputs().items():
        if name.startswith(prefix):
            sizes[name] = int(size * scale)
            make(sizes[name])()
    return sizes
