"""chatparse's vLLM plugin against vLLM's own tool parsers, streaming (run in a venv with vLLM:
scripts/test-vllm.sh or scripts/test-vllm-serve.sh builds one).

For each family where vLLM has a native tool parser and chatparse a template: one generation with several
calls whose arguments are a few KB each, tokenized by the family's test tokenizer (built locally with its
special tokens, tests/integrations/tokenizers.py), fed one token at a time through the native parser's
``extract_tool_calls_streaming`` (as vLLM's serving loop calls it, ``finish_streaming`` at the end where it
has one) and through the parser vLLM composes for ``--tool-call-parser chatparse --reasoning-parser
chatparse`` (``ChatparseParser.parse_delta``, which also separates reasoning and content). Only the parsers'
calls are timed (process CPU time of the calls, as the machine is shared; best of N, but a run over
``--once-over`` seconds is not repeated); the streamed calls of both are compared.

    python benchmarks/bench_vllm.py [--tokens 4000,50000] [--rounds 3] [--families qwen3,...] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests' tokenizer helpers

from tests.integrations.tokenizers import family_tokenizer
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.parser import ParserManager
from vllm.parser.engine.adapters import ParserEngineToolAdapter
from vllm.tool_parsers import ToolParserManager

from chatparse.integrations.serving import TEMPLATE_ENV
from chatparse.integrations.vllm import NAME
from chatparse.integrations.vllm.parsers import register

TOOLS = [{"type": "function", "function": {
    "name": "write_file", "description": "Write a text file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                   "required": ["path", "content"]}}}]
Calls = list[tuple[str, dict[str, Any]]]


def note(chars: int, seed: int) -> str:
    """ASCII prose with line breaks and quotes (a file the model writes), ``chars`` long."""
    words = ["the", "model", "writes", "a", "file,", "line", "by", "line;", "'quoted'", "values", "and", "numbers",
             str(seed), "end.\n"]
    out, i = [], seed
    while sum(map(len, out)) + len(out) < chars:
        out.append(words[i % len(words)])
        i = i * 7 + 3
    return " ".join(out)[:chars].strip()


def calls_for(chars: int, count: int = 4) -> Calls:
    return [("write_file", {"path": f"notes/part{i}.txt", "content": note(chars // count, i)}) for i in range(count)]


def hermes_text(calls: Calls) -> str:
    return "I will write the files.\n\n" + "\n".join(
        f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls)


def qwen3_xml_text(calls: Calls) -> str:
    return "I will write the files.\n\n" + "\n".join(
        f"<tool_call>\n<function={n}>\n" + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in a.items())
        + "</function>\n</tool_call>" for n, a in calls)


def kimi_k2_text(calls: Calls) -> str:
    return "I will write the files." + "<|tool_calls_section_begin|>" + "".join(
        f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{json.dumps(a)}<|tool_call_end|>"
        for i, (n, a) in enumerate(calls)) + "<|tool_calls_section_end|>"


def deepseek_v3_1_text(calls: Calls) -> str:
    return "I will write the files." + "<｜tool▁calls▁begin｜>" + "".join(
        f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{json.dumps(a)}<｜tool▁call▁end｜>" for n, a in calls) \
        + "<｜tool▁calls▁end｜>"


def glm47_text(calls: Calls) -> str:
    return "I will write the files." + "".join(
        f"<tool_call>{n}" + "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in a.items())
        + "</tool_call>" for n, a in calls)


def minimax_m2_text(calls: Calls) -> str:
    return "I will write the files.\n<minimax:tool_call>\n" + "".join(
        f'<invoke name="{n}">\n' + "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in a.items())
        + "</invoke>\n" for n, a in calls) + "</minimax:tool_call>"


def seed_oss_text(calls: Calls) -> str:
    return "I will write the files.\n" + "".join(
        f"<seed:tool_call>\n<function={n}>\n" + "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in a.items())
        + "</function>\n</seed:tool_call>" for n, a in calls)


# chatparse template: (vLLM's tool parser, the generation's text)
FAMILIES: dict[str, tuple[str, Callable[[Calls], str]]] = {
    "qwen3": ("hermes", hermes_text),
    "hermes": ("hermes", hermes_text),
    "qwen3_coder": ("qwen3_coder", qwen3_xml_text),
    "qwen3_5": ("qwen3_coder", qwen3_xml_text),
    "kimi_k2": ("kimi_k2", kimi_k2_text),
    "deepseek_v3_1": ("deepseek_v31", deepseek_v3_1_text),
    "glm47": ("glm47", glm47_text),
    "minimax_m2": ("minimax_m2", minimax_m2_text),
    "seed_oss": ("seed_oss", seed_oss_text),
}


def tokens_of(tokenizer: Any, text: str) -> tuple[list[int], list[str]]:
    """``text`` as ids and each id's text (special tokens kept); their concatenation is ``text``."""
    ids: list[int] = tokenizer.encode(text, add_special_tokens=False)
    pieces = [tokenizer.decode([i], skip_special_tokens=False) for i in ids]
    assert "".join(pieces) == text, "the tokenizer does not split this text into whole-character tokens"
    return ids, pieces


def collect(calls: dict[int, dict[str, str]], delta: Any) -> None:
    for call in (delta.tool_calls or []) if delta is not None else []:
        entry = calls.setdefault(call.index, {"name": "", "arguments": ""})
        if call.function is not None:
            entry["name"] += call.function.name or ""
            entry["arguments"] += call.function.arguments or ""


def found(calls: dict[int, dict[str, str]]) -> Calls | str:
    try:
        return [(calls[i]["name"], json.loads(calls[i]["arguments"])) for i in sorted(calls)]
    except json.JSONDecodeError as error:
        return f"arguments that do not parse ({error})"


def request() -> ChatCompletionRequest:
    return ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=TOOLS,
                                 tool_choice="auto", stream=True)


def run_native(parser_name: str, tokenizer: Any, ids: list[int], pieces: list[str]) -> tuple[float, Calls | str]:
    cls = ToolParserManager.get_tool_parser(parser_name)
    req = request()
    if issubclass(cls, ParserEngineToolAdapter):
        parser = cls(tokenizer, req.tools, model_config=None, chat_template_kwargs={})
    else:
        parser = cls(tokenizer, req.tools)
    req = parser.adjust_request(req)
    engine = parser.engine_based_streaming  # fed deltas only (vLLM's StreamState), else the text so far
    calls: dict[int, dict[str, str]] = {}
    previous_text, previous_ids, spent = "", [], 0.0
    for token, piece in zip(ids, pieces, strict=True):
        if engine:
            args = ("", piece, piece, [], [token], [token])
        else:
            current_text, current_ids = previous_text + piece, [*previous_ids, token]
            args = (previous_text, current_text, piece, previous_ids, current_ids, [token])
            previous_text, previous_ids = current_text, current_ids
        start = time.process_time()
        delta = parser.extract_tool_calls_streaming(*args, req)
        spent += time.process_time() - start
        collect(calls, delta)
    if hasattr(parser, "finish_streaming"):
        start = time.process_time()
        delta = parser.finish_streaming()
        spent += time.process_time() - start
        collect(calls, delta)
    return spent, found(calls)


def run_chatparse(tokenizer: Any, ids: list[int], pieces: list[str]) -> tuple[float, Calls | str]:
    cls = ParserManager.get_parser(tool_parser_name=NAME, reasoning_parser_name=NAME, enable_auto_tools=True,
                                   model_name="m", tokenizer=tokenizer)
    req = request()
    parser = cls(tokenizer, req.tools, chat_template_kwargs={}, model_config=None)
    req = parser.adjust_request(req)
    calls: dict[int, dict[str, str]] = {}
    spent, last = 0.0, len(ids) - 1
    for position, (token, piece) in enumerate(zip(ids, pieces, strict=True)):
        start = time.process_time()
        delta = parser.parse_delta(piece, [token], req, [], finished=position == last)
        spent += time.process_time() - start
        collect(calls, delta)
    return spent, found(calls)


def generation(family: str, tokenizer: Any, tokens: int) -> tuple[Calls, list[int], list[str]]:
    """The family's generation with about ``tokens`` tokens (its calls' arguments sized to fit)."""
    _, write = FAMILIES[family]
    chars = tokens * 2
    for _ in range(6):  # the tokenizer's characters per token, learned from the last try
        calls = calls_for(chars)
        ids, pieces = tokens_of(tokenizer, write(calls))
        chars = int(chars * tokens / len(ids))
    return calls, ids, pieces


def best_of(rounds: int, once_over: float, run: Callable[[], tuple[float, Calls | str]]
            ) -> tuple[float, Calls | str, int]:
    """Best time of ``rounds`` runs, the first run's calls, and the runs made: a run that took longer than
    ``once_over`` seconds is not repeated (a quadratic parser at 50K tokens takes minutes a run)."""
    first, calls = run()
    times = [first]
    while len(times) < rounds and first <= once_over:
        times.append(run()[0])
    return min(times), calls, len(times)


def bench(family: str, tokens: int, rounds: int, once_over: float) -> dict[str, Any]:
    os.environ[TEMPLATE_ENV] = family
    tokenizer = family_tokenizer(family)
    calls, ids, pieces = generation(family, tokenizer, tokens)
    parser_name, _ = FAMILIES[family]
    native_s, native_calls, native_runs = best_of(
        rounds, once_over, lambda: run_native(parser_name, tokenizer, ids, pieces))
    chatparse_s, chatparse_calls, chatparse_runs = best_of(
        rounds, once_over, lambda: run_chatparse(tokenizer, ids, pieces))
    row: dict[str, Any] = {"family": family, "vllm_parser": parser_name, "tokens": len(ids),
                           "chars": sum(map(len, pieces)), "calls": len(calls), "native_s": native_s,
                           "chatparse_s": chatparse_s, "speedup": native_s / chatparse_s,
                           "same_calls": native_calls == chatparse_calls == calls,
                           "native_runs": native_runs, "chatparse_runs": chatparse_runs}
    if not row["same_calls"]:
        row["difference"] = {"written": summary(calls), "native": summary(native_calls),
                             "chatparse": summary(chatparse_calls)}
    return row


def summary(calls: Calls | str) -> Any:
    if isinstance(calls, str):
        return calls
    return [(name, {k: (v if len(str(v)) < 40 else f"{str(v)[:20]}…({len(str(v))} chars)") for k, v in a.items()})
            for name, a in calls]


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--tokens", default="4000,50000", help="generation sizes in tokens (default 4000,50000)")
    cli.add_argument("--rounds", type=int, default=3, help="best of this many runs (default 3)")
    cli.add_argument("--once-over", type=float, default=60.0,
                     help="a parser whose run takes longer than this (seconds) runs once (default 60)")
    cli.add_argument("--families", default=",".join(FAMILIES))
    cli.add_argument("--json", action="store_true", help="print one JSON object per family and size")
    args = cli.parse_args()
    register()
    for family in args.families.split(","):
        if family not in FAMILIES:
            cli.error(f"unknown family {family!r}; known: {sorted(FAMILIES)}")
        for tokens in (int(t) for t in args.tokens.split(",")):
            row = bench(family, tokens, args.rounds, args.once_over)
            if args.json:
                print(json.dumps(row), flush=True)
            else:
                print(f"{family:14} {row['vllm_parser']:12} {row['tokens']:>6} tokens {row['calls']} calls  "
                      f"native {row['native_s']:8.3f} s  chatparse {row['chatparse_s']:7.3f} s  "
                      f"{row['speedup']:6.1f}x  same calls: {row['same_calls']}  "
                      f"(runs: {row['native_runs']}/{row['chatparse_runs']})", flush=True)
                if "difference" in row:
                    print("    " + json.dumps(row["difference"], ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
