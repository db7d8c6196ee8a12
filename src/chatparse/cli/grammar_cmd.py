"""``chatparse grammar --template NAME --tools tools.json``: the grammar that makes a model write only what
the template's parser reads (llguidance's Lark, llama.cpp's GBNF or xgrammar's structural tag), for vLLM's
``structured_outputs``, llguidance, llama.cpp, xgrammar or a file."""

from __future__ import annotations

import argparse
import json
from typing import Any

from chatparse.cli.io import EXIT_OK, CliError, report, resolve_template, text_arg
from chatparse.errors import ChatparseError

_EXAMPLES = """examples:
  chatparse grammar --template qwen3_coder --tools tools.json --tool-choice required > calls.lark
  chatparse grammar --template qwen3 --tools tools.json --tool-choice get_weather --no-parallel
  chatparse grammar --template qwen3 --tools tools.json --prefix @prompt.txt --json
  chatparse grammar --template qwen3 --tools tools.json --format gbnf > calls.gbnf   # llama.cpp
  chatparse grammar --template qwen3 --tools tools.json --special-token '<tool_call>' --format structural-tag"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "grammar", help="print the grammar that constrains a model to the template's own call format",
        description="Prints the grammar of what the model may write after the prompt, up to the end of its turn "
                    "(llguidance's Lark dialect): reasoning, text and calls in the template's own format, each call "
                    "following its tool's JSON Schema. What it admits parses back to exactly the calls it spelled "
                    "(docs/grammar.md).", epilog=_EXAMPLES)
    p.add_argument("--template", "-t", required=True, help="built-in name, template file or model directory")
    p.add_argument("--tools", required=True, metavar="FILE", help="JSON list of tools (OpenAI's tools= shape)")
    p.add_argument("--tool-choice", default="auto", metavar="CHOICE",
                   help="auto (default), required, none, or the name of the one tool to call")
    p.add_argument("--no-parallel", action="store_true", help="at most one call (exactly one under required)")
    p.add_argument("--prefix", default="", metavar="TEXT|@FILE",
                   help="the rendered prompt (decides whether reasoning is already open); @FILE reads a file")
    p.add_argument("--after-reasoning", action="store_true",
                   help="start after the reasoning block (where vLLM and SGLang apply grammars)")
    p.add_argument("--special-token", action="append", default=[], metavar="TOKEN",
                   help="a marker that is one added token of the model's tokenizer (repeatable)")
    p.add_argument("--lenient", action="store_true",
                   help="leave schema keywords a grammar cannot enforce (pattern, minimum, ...) free instead of "
                        "failing (listed on stderr)")
    p.add_argument("--format", choices=("lark", "gbnf", "structural-tag"), default="lark",
                   help="output form (lark: llguidance; gbnf: llama.cpp; structural-tag: xgrammar's, as JSON)")
    p.add_argument("--json", action="store_true", help="print one JSON object (grammar, choice, reasoning, ...)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from chatparse.cli.parse_cmd import tools_file
    from chatparse.grammar import tool_grammar

    try:
        _, template = resolve_template(args.template)
        tools = tools_file(args.tools)
        grammar = tool_grammar(template, tools, tool_choice=args.tool_choice,
                               parallel_tool_calls=not args.no_parallel, prefix=text_arg(args.prefix, "--prefix"),
                               special_tokens=args.special_token, lenient=args.lenient,
                               reasoning=not args.after_reasoning)
        written: Any = grammar.structural_tag if args.format == "structural-tag" else \
            grammar.gbnf if args.format == "gbnf" else grammar.lark
    except (ChatparseError, CliError) as exc:
        return report("grammar", exc)
    if grammar.unenforced:
        from chatparse.cli.io import eprint

        eprint("chatparse grammar: left free (--lenient): " + ", ".join(grammar.unenforced))
    if args.json:
        print(json.dumps({"format": args.format, "grammar": written, "tool_choice": grammar.tool_choice,
                          "parallel_tool_calls": grammar.parallel_tool_calls, "reasoning": grammar.reasoning,
                          "tools": list(grammar.tools), "unenforced": list(grammar.unenforced)},
                         ensure_ascii=False))
    elif isinstance(written, dict):
        print(json.dumps(written, ensure_ascii=False))
    else:
        print(written, end="")
    return EXIT_OK
