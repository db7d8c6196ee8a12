"""Token-level streaming for tests. Serving engines (vLLM, SGLang, llama.cpp, transformers) send one or
several tokens per delta; this splits an output into pseudo-tokens the way a tokenizer would (a template's
special markers and tags whole, other text in short pieces), groups them into deltas several ways, and runs
every streaming path over the same deltas so a test can assert that they all agree with the one-shot parse.

A runner takes ``(template, prefix, deltas, options)`` and returns what it parsed; more paths join by adding
a runner to ``RUNNERS``. The vLLM plugin is one when vLLM is importable (tests/integrations/vllm_runner.py);
serving plugins parse with ``on_malformed="recover"`` whatever the case says (``RECOVER_RUNNERS``).
"""

from __future__ import annotations

import importlib.util
import json
import random
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import regex

import chatparse
from chatparse.integrations.transformers import SPECIAL_MARKER, special_markers
from chatparse.openai import ChatCompletionStream, to_chat_message
from chatparse.template.compile import CompiledTemplate, Delimiter
from tests.test_openai import accumulate  # what an OpenAI client builds from the deltas

T = TypeVar("T")
Runner = Callable[[Any, str, list[str], dict[str, Any]], dict[str, Any]]
# Tag-shaped delimiter pieces many tokenizers add as single tokens (<think>, </tool_call>, <seed:eos>).
TAG = regex.compile(r"</?[A-Za-z_][\w:.\-]*>")
MAX_GROUP = 8
RANDOM_GROUPINGS = 2


def _texts(delimiter: Delimiter | None) -> tuple[str, ...]:
    if delimiter is None:
        return ()
    return delimiter.literals if delimiter.literals is not None else (delimiter.info.anchors or ())


def template_markers(template: Any) -> tuple[list[str], list[str]]:
    """(special markers, tags) written in the template's delimiters: what a real tokenizer of the family has
    as special tokens (``<|im_end|>``) and as added tokens (``<think>``)."""
    compiled: CompiledTemplate = chatparse.load_template(template)
    delimiters = [compiled.start_anchor, compiled.end, compiled.drop,
                  *[d for f in compiled.fields.values() for d in (f.open, f.close)]]
    texts = [t for d in delimiters for t in _texts(d)] + list(compiled.ext.discard_after_end)
    special = sorted({m for t in texts for m in special_markers(t)})
    tags = sorted({m for t in texts for m in TAG.findall(SPECIAL_MARKER.sub(" ", t))} - set(special))
    return special, tags


def pseudo_tokens(text: str, markers: Sequence[str], rng: random.Random, longest: int = 4) -> list[str]:
    """``text`` as tokens: each marker whole, the text between in pieces of 1 to ``longest`` characters."""
    pattern = regex.compile("|".join(regex.escape(m) for m in sorted(markers, key=len, reverse=True))) if markers \
        else None
    tokens: list[str] = []
    last = 0
    for match in pattern.finditer(text) if pattern is not None else ():
        tokens.extend(_pieces(text[last : match.start()], rng, longest))
        tokens.append(match.group())
        last = match.end()
    tokens.extend(_pieces(text[last:], rng, longest))
    assert "".join(tokens) == text
    return tokens


def _pieces(text: str, rng: random.Random, longest: int) -> list[str]:
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, longest)
        out.append(text[i : i + n])
        i += n
    return out


def groupings(tokens: Sequence[T], seed: int) -> dict[str, list[list[T]]]:
    """The deltas a server could send: all in one, one token each, and random groups of 1 to 8 tokens."""
    out = {"one delta": [list(tokens)], "one token per delta": [[t] for t in tokens]}
    rng = random.Random(seed)
    for k in range(RANDOM_GROUPINGS):
        groups, i = [], 0
        while i < len(tokens):
            n = rng.randint(1, MAX_GROUP)
            groups.append(list(tokens[i : i + n]))
            i += n
        out[f"random 1-{MAX_GROUP} #{k}"] = groups
    return out


# --- runners ------------------------------------------------------------------------------------------


def run_response_parser(template: Any, prefix: str, deltas: list[str], options: dict[str, Any]) -> dict[str, Any]:
    parser = chatparse.ResponseParser(template, prefix, **options)
    for delta in deltas:
        parser.feed(delta)
    message, _ = parser.finalize()
    return message


def call_id(index: int) -> str:
    return f"call_{index}"


def _stream_runner(buffer_calls: bool) -> Runner:
    def run(template: Any, prefix: str, deltas: list[str], options: dict[str, Any]) -> dict[str, Any]:
        """The stream's final message, what a client accumulated from its deltas, and the stream's own
        reconciliation failures, for ``wire_disagreement``."""
        stream = ChatCompletionStream(template, prefix, id_factory=call_id, created=1, buffer_calls=buffer_calls,
                                      **options)
        chunks = [chunk for delta in deltas for chunk in stream.feed(delta)]
        chunks += stream.finish(None)  # no finish reason, as the one-shot parse it is compared with
        assert stream.message is not None
        return {"message": stream.message, "wire": accumulate(chunks), "mismatches": stream.mismatches,
                "buffered": buffer_calls}

    return run


def parses_json(arguments: str) -> bool:
    try:
        json.loads(arguments)
    except ValueError:
        return False
    return True


def wire_disagreement(streamed: dict[str, Any], message: dict[str, Any]) -> str | None:
    """None when the accumulated deltas equal ``to_chat_message`` of the one-shot message, else why not.
    Early streaming (docs/openai.md) may have sent part of a call that then broke or was cut: when the message
    lists malformed entries, such calls (arguments that never became JSON) are not compared, nor the ids,
    whose indices they shifted. With ``buffer_calls`` everything must be equal."""
    if streamed["mismatches"]:
        return f"the stream reported mismatches {streamed['mismatches']}"
    if streamed["message"] != message:
        return f"the stream's message differs: {streamed['message']} != {message}"
    wire = to_chat_message(message, id_factory=call_id)
    if not streamed.get("keeps_calls", True):
        wire.pop("tool_calls", None)  # a server returns calls only to a request that offered tools
    got = streamed["wire"]
    if got["content"] != (wire["content"] or ""):
        return f"content {got['content']!r} != {wire['content']!r}"
    if got["reasoning"] != wire.get("reasoning_content", ""):
        return f"reasoning {got['reasoning']!r} != {wire.get('reasoning_content', '')!r}"
    expected = [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                for c in wire.get("tool_calls", [])]
    calls = got["calls"]
    if message.get("malformed") and not streamed["buffered"]:
        calls = [{**c, "id": None} for c in calls if parses_json(c["arguments"])]
        expected = [{**c, "id": None} for c in expected]
    if calls != expected:
        return f"calls {calls} != {expected}"
    return None


RUNNERS: dict[str, Runner] = {
    "ResponseParser": run_response_parser,
    "ChatCompletionStream": _stream_runner(buffer_calls=False),
    "ChatCompletionStream buffer_calls": _stream_runner(buffer_calls=True),
}
CALL_RUNNERS = {"ChatCompletionStream buffer_calls"}  # differ from the others only when there are calls
ONE_SHOT_RUNNERS = {"ResponseParser"}  # fed one delta, the same code as parse_response
RECOVER_RUNNERS: set[str] = set()
# The runner drives vLLM 0.33's ChatStreamProcessor (0.32 has that loop inline in its chat serving code).
if importlib.util.find_spec("vllm") is not None and importlib.util.find_spec(
        "vllm.entrypoints.openai.chat_completion.stream_processor") is not None:
    from tests.integrations.vllm_runner import run_vllm_plugin

    RUNNERS["vLLM plugin"] = run_vllm_plugin
    RECOVER_RUNNERS.add("vLLM plugin")


def disagreements(template: Any, prefix: str, text: str, options: dict[str, Any], *, seed: int) -> list[str]:
    """Every way a streaming path fed ``text`` as token deltas differs from the one-shot parse (empty when
    all agree). ``options``: ``tools`` and ``on_malformed``."""
    template = chatparse.load_template(template)
    expected = chatparse.parse_response(text, template, prefix=prefix, **options)
    recover = {**options, "on_malformed": "recover"}
    recovered = chatparse.parse_response(text, template, prefix=prefix, **recover) if RECOVER_RUNNERS else expected
    special, tags = template_markers(template)
    tokens = pseudo_tokens(text, special + tags, random.Random(seed))
    problems = []
    for grouping, groups in groupings(tokens, seed).items():
        deltas = ["".join(group) for group in groups]
        for name, runner in RUNNERS.items():
            if name in CALL_RUNNERS and not (expected.get("tool_calls") or expected.get("malformed")):
                continue
            if name in ONE_SHOT_RUNNERS and len(deltas) == 1:
                continue  # one delta is the one-shot parse itself
            want = recovered if name in RECOVER_RUNNERS else expected
            got = runner(template, prefix, deltas, recover if name in RECOVER_RUNNERS else options)
            problem = wire_disagreement(got, want) if "wire" in got else (
                None if got == want else f"{got} != {want}")
            if problem:
                problems.append(f"{name}, {grouping}: {problem}")
    return problems
