"""The vLLM plugin as a runner of tests/tokens.py: text deltas through the parser class vLLM composes for
``--tool-call-parser chatparse --reasoning-parser chatparse``, driven by vLLM's ``ChatStreamProcessor``.
Imported only when vLLM is installed."""

from __future__ import annotations

from typing import Any

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
from vllm.parser import ParserManager

import chatparse
from chatparse.integrations.vllm import NAME
from chatparse.integrations.vllm.parsers import register
from tests.integrations.serving_cases import add_call

_TOKENIZERS: dict[int, Any] = {}


def _tokenizer(template: Any) -> Any:
    """A byte-level tokenizer with the template's markers as tokens and the template as its
    ``response_template`` (how the plugin finds the template when CHATPARSE_TEMPLATE is unset)."""
    from tests import tokens
    from tests.integrations.tokenizers import byte_level

    compiled = chatparse.load_template(template)
    tok = _TOKENIZERS.get(id(compiled))
    if tok is None:
        special, tags = tokens.template_markers(compiled)
        tok = byte_level(special=special, added=tags)
        tok.response_template = dict(compiled.source)
        _TOKENIZERS[id(compiled)] = tok
    return tok


def run_vllm_plugin(template: Any, prefix: str, deltas: list[str], options: dict[str, Any]) -> dict[str, Any]:
    register()
    tokenizer = _tokenizer(template)
    tools = options.get("tools")
    # Chat completions take function tools only ({"type": "code_interpreter"} enables a format's built-in
    # tool in its chat template; the parser reads those calls whatever the tools).
    tools = [t for t in tools if t.get("type", "function") == "function"] or None if tools else None
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
                                    tools=tools, tool_choice="auto" if tools else None)
    parser_cls = ParserManager.get_parser(tool_parser_name=NAME, reasoning_parser_name=NAME, enable_auto_tools=True)
    parser = parser_cls(tokenizer, request.tools, chat_template_kwargs={})
    parser.adjust_request(request)
    processor = ChatStreamProcessor(request, parser, enable_auto_tools=True, parser_cls=parser_cls)
    prompt_ids = tokenizer.encode(prefix, add_special_tokens=False)
    assert tokenizer.decode(prompt_ids) == prefix, "the runner's tokenizer does not round-trip the prefix"
    wire: dict[str, Any] = {"content": "", "reasoning": "", "calls": {}}
    for position, text in enumerate(deltas):
        # No token ids in this runner: one stand-in id per delta (the parser reads the text).
        step = processor.step(text, [0], "stop" if position == len(deltas) - 1 else None, prompt_ids)
        delta = step.delta
        if delta is None:
            continue
        wire["content"] += delta.content or ""
        wire["reasoning"] += delta.reasoning or ""
        for call in delta.tool_calls:
            function = call.function
            # vLLM's ids are random; the checker numbers the calls by index
            add_call(wire["calls"], call.index, None if call.id is None else f"call_{call.index}",
                     function.name if function else None, function.arguments if function else None)
    stream = parser._stream
    assert stream is not None and stream.message is not None
    wire["calls"] = [wire["calls"][i] for i in sorted(wire["calls"])]
    if not tools:
        wire["calls"] = []  # vLLM returns calls only to a request with tools (the message still has them)
    return {"message": stream.message, "wire": wire, "mismatches": stream.mismatches,
            "buffered": stream.buffered, "keeps_calls": bool(tools)}
