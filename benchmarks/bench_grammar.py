"""What building a request's grammar costs: ``chatparse.tool_grammar`` for 20 tools, first build (nothing
cached) and repeated requests (cached by template, tools and choice), per template and tool choice.

Peer, measured in the same run: llguidance compiling the same Lark text into a matcher with its byte
tokenizer (the work an engine does next with the grammar), so the ratio says how much of a constrained
request's set-up is chatparse's. Target: a first build under 5 ms for 20 tools. Process CPU time, best of
several runs. Prints a table, then one JSON document. The GBNF columns: ``.gbnf`` of a fresh grammar with
no automaton cached (cold), with the template's automata cached (warm: new tools, a template seen before),
again on the same grammar (cached), and its size in lines.

    python benchmarks/bench_grammar.py [--tools 20] [--repeat 5] [--templates qwen3,qwen3_coder | all] [--distinct]

``first ms`` covers the whole uncached build: template lookup, the cache key, the grammar and its Lark text.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from typing import Any

from chatparse.grammar import GrammarError, regular, tool_grammar
from chatparse.grammar import api as grammar_api
from chatparse.templates import get_template, list_templates

TARGET_MS = 5.0
TEMPLATES = ("qwen3", "qwen3_coder", "gpt_oss")
CHOICES = ("auto", "required", "tool_0")


def make_tools(count: int, *, distinct: bool = False) -> list[dict[str, Any]]:
    """``count`` tools with typical schemas: strings, an enum, an integer, an optional nested object.
    ``distinct``: each tool its own property names and enum values (equal schemas share their grammar)."""
    def name(key: str, i: int) -> str:
        return f"{key}_{i}" if distinct else key

    return [{"type": "function", "function": {"name": f"tool_{i}", "description": f"Tool number {i}.", "parameters": {
        "type": "object", "properties": {
            name("query", i): {"type": "string", "description": "What to look for"},
            name("mode", i): {"type": "string", "enum": [name(m, i) for m in ("fast", "exact", "fuzzy")]},
            name("limit", i): {"type": "integer"},
            name("filters", i): {"type": "object", "properties": {name("lang", i): {"type": "string"},
                                                                  name("year", i): {"type": "integer"}}},
            name("tags", i): {"type": "array", "items": {"type": "string"}},
        }, "required": [name("query", i)]}}} for i in range(count)]


def templates(spec: str) -> list[str]:
    """The templates named by ``spec`` (comma-separated, or ``all``: every built-in with a grammar)."""
    if spec != "all":
        return spec.split(",")
    names = []
    for name in list_templates():
        if "tool_calls" in get_template(name)["fields"]:
            try:
                tool_grammar(name, make_tools(1))
            except GrammarError:
                continue
            names.append(name)
    return names


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tools", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--templates", default=",".join(TEMPLATES), help="comma-separated names, or 'all'")
    ap.add_argument("--distinct", action="store_true", help="no two tools' schemas alike")
    args = ap.parse_args()
    import llguidance

    tokenizer = llguidance.LLTokenizer("byte")
    tools = make_tools(args.tools, distinct=args.distinct)
    rows = []
    for template in templates(args.templates):
        for choice in CHOICES:
            def build(template: str = template, choice: str = choice) -> Any:
                grammar_api._CACHE.clear()
                grammar = tool_grammar(template, tools, tool_choice=choice)
                _ = grammar.lark  # (written on first use)
                return grammar

            lark = build().lark
            first = best(build, args.repeat)
            cached = best(lambda t=template, c=choice: tool_grammar(t, tools, tool_choice=c), args.repeat)
            peer = best(lambda g=lark: llguidance.LLMatcher(tokenizer, g), args.repeat)

            def gbnf(cold: bool, template: str = template, choice: str = choice) -> str:
                if cold:
                    regular._CACHE.clear()
                return build().gbnf

            gbnf_text = gbnf(True)
            gbnf_cold = best(lambda: gbnf(True), args.repeat) - first
            gbnf_warm = best(lambda: gbnf(False), args.repeat) - first
            grammar = tool_grammar(template, tools, tool_choice=choice)
            gbnf_cached = best(lambda g=grammar: g.gbnf, args.repeat)
            rows.append({"template": template, "tool_choice": choice, "tools": args.tools,
                         "first_ms": round(first * 1e3, 3), "cached_ms": round(cached * 1e3, 4),
                         "llguidance_compile_ms": round(peer * 1e3, 3), "ratio": round(first / peer, 2) if peer else None,
                         "lark_chars": len(lark), "under_target": first * 1e3 < TARGET_MS,
                         "gbnf_cold_ms": round(gbnf_cold * 1e3, 3), "gbnf_warm_ms": round(gbnf_warm * 1e3, 3),
                         "gbnf_cached_ms": round(gbnf_cached * 1e3, 4), "gbnf_lines": len(gbnf_text.splitlines())})
    print(f"first ms: uncached tool_grammar(template, {args.tools} {'distinct ' if args.distinct else ''}tools, "
          f"tool_choice=...) incl. the Lark text; best of {args.repeat}, process CPU time")
    print(f"{'template':<20} {'choice':<9} {'first ms':>9} {'cached ms':>10} {'llguidance ms':>14} {'ratio':>6} "
          f"{'gbnf cold/warm/cached ms':>25} {'gbnf lines':>10}")
    for row in rows:
        gbnf = f"{row['gbnf_cold_ms']}/{row['gbnf_warm_ms']}/{row['gbnf_cached_ms']}"
        print(f"{row['template']:<20} {row['tool_choice']:<9} {row['first_ms']:>9} {row['cached_ms']:>10} "
              f"{row['llguidance_compile_ms']:>14} {row['ratio']:>6} {gbnf:>25} {row['gbnf_lines']:>10}")
    print(json.dumps({"machine": platform.machine(), "python": platform.python_version(), "target_ms": TARGET_MS,
                      "rows": rows}))


if __name__ == "__main__":
    main()
