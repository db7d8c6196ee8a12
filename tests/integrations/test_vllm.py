"""The vLLM plugin against vLLM's own classes (skipped without vLLM; ``scripts/test-vllm.sh`` builds a venv
with it and runs this module).

Each corpus case of the served families goes the way vLLM serves it: the output as token ids of a tokenizer
built locally with the family's special tokens (saved and loaded with ``vllm.tokenizers.get_tokenizer``),
grouped into engine steps several ways, turned into delta text by vLLM's engine detokenizer, parsed by the
parser class ``ParserManager.get_parser`` composes for ``--tool-call-parser chatparse --reasoning-parser
chatparse`` through ``ChatStreamProcessor`` (streaming) and ``Parser.parse`` + ``assemble_chat_message_fields``
(non-streaming). The accumulated deltas must equal the non-streaming message, and both chatparse's
``parse_response`` (``on_malformed="recover"``), ids and finish reasons included.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shlex
import types
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # vLLM's argument parser needs a device; none here
pytest.importorskip("vllm", reason="vLLM is not installed; scripts/test-vllm.sh builds a venv with vLLM 0.33 "
                                   "and runs this module")

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.exceptions import VLLMValidationError
from vllm.parser import ParserManager
from vllm.reasoning import ReasoningParserManager
from vllm.sampling_params import SamplingParams
from vllm.tokenizers import get_tokenizer
from vllm.tool_parsers import ToolParserManager
from vllm.v1.engine.detokenizer import IncrementalDetokenizer as EngineDetokenizer

import chatparse
from chatparse.integrations.serving import CALLS_ENV, TEMPLATE_ENV
from chatparse.integrations.vllm import NAME, PLUGIN_MODULE
from chatparse.integrations.vllm.parsers import ChatparseParser, register
from tests import tokens
from tests.grammar.token_walk import GuidanceMatcher, XGrammarMatcher, walk_tokens
from tests.integrations.serving_cases import (
    CASE_IDS,
    CASES,
    CHUNKINGS,
    FAMILIES,
    ServedCase,
    add_call,
    complete_calls,
    served_case,
    without_ids,
)
from tests.integrations.tokenizers import family_tokenizer
from tests.templates.corpus_loader import case_id, load_case

try:  # vLLM 0.33's serving steps; 0.32 runs them inline in OpenAIServingChat (scripts/test-vllm-serve.sh
    # drives that code through a real server)
    from vllm.entrypoints.openai.chat_completion.message_assembly import assemble_chat_message_fields
    from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
    from vllm.entrypoints.serve.utils.tool_calls_utils import resolve_finish_reason
except ImportError:
    SERVING_STEPS = False
else:
    SERVING_STEPS = True
needs_serving_steps = pytest.mark.skipif(
    not SERVING_STEPS, reason="vLLM < 0.33 has no ChatStreamProcessor / assemble_chat_message_fields to drive; "
                              "scripts/test-vllm-serve.sh checks that vLLM's serving path through a real server")


@pytest.fixture(autouse=True, scope="module")
def _registered() -> None:
    register()


@cache
def vllm_tokenizer(family: str, directory: str) -> Any:
    """The family's test tokenizer saved to disk and loaded by vLLM, as ``vllm serve`` loads a model's."""
    path = Path(directory) / family
    family_tokenizer(family).save_pretrained(path)
    return get_tokenizer(str(path))


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("tokenizers"))


def encode(tokenizer: Any, text: str) -> list[int]:
    ids: list[int] = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids, skip_special_tokens=False) == text, "the test tokenizer does not round-trip"
    return ids


def make_request(case: dict[str, Any], *, stream: bool) -> ChatCompletionRequest:
    tools = case.get("tools")
    # Chat completions take function tools only ({"type": "code_interpreter"} enables a format's built-in
    # tool in its chat template; the parser reads those calls whatever the tools).
    tools = [t for t in tools if t.get("type", "function") == "function"] or None if tools else None
    return ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], stream=stream,
                                 tools=tools, tool_choice="auto" if tools else None)


def parser_class(tokenizer: Any) -> Any:
    return ParserManager.get_parser(tool_parser_name=NAME, reasoning_parser_name=NAME, enable_auto_tools=True,
                                    model_name="m", tokenizer=tokenizer)


def make_parser(parser_cls: Any, tokenizer: Any, request: ChatCompletionRequest) -> Any:
    """As ``OpenAIServingChat._make_parser`` does; the request adjusted first, as the renderer does."""
    parser = parser_cls(tokenizer, request.tools, chat_template_kwargs={}, model_config=None)
    parser.adjust_request(request)
    return parser


def engine_detokenizer(tokenizer: Any, request: ChatCompletionRequest, prompt_ids: list[int]) -> Any:
    """vLLM's engine-side incremental detokenizer for this request's sampling parameters."""
    params = SamplingParams(skip_special_tokens=request.skip_special_tokens,
                            spaces_between_special_tokens=request.spaces_between_special_tokens)
    core_request = types.SimpleNamespace(request_id="r", sampling_params=params, prompt_token_ids=prompt_ids)
    return EngineDetokenizer.from_new_request(tokenizer, core_request)  # type: ignore[arg-type]


def non_streaming(tokenizer: Any, case: dict[str, Any], reason: str) -> dict[str, Any]:
    request = make_request(case, stream=False)
    parser_cls = parser_class(tokenizer)
    parser = make_parser(parser_cls, tokenizer, request)
    prompt_ids = encode(tokenizer, case["prefix"])
    ids = encode(tokenizer, case["output"])
    detok = engine_detokenizer(tokenizer, request, prompt_ids)
    detok.update(ids, False)
    text = detok.get_next_output_text(True, False)
    parser.set_prompt_token_ids(prompt_ids)
    reasoning, content, calls = parser.parse(text, request, enable_auto_tools=True, model_output_token_ids=ids)
    fields = assemble_chat_message_fields(request, reasoning, content, calls, enable_auto_tools=True,
                                          parser_cls=parser_cls)
    return {"reasoning": fields.reasoning or "", "content": fields.content or "",
            "calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                      for c in fields.tool_calls],
            "finish_reason": resolve_finish_reason(reason, request, bool(fields.tool_calls))}


def streaming(tokenizer: Any, case: dict[str, Any], reason: str, grouping: str, seed: int) -> dict[str, Any]:
    request = make_request(case, stream=True)
    parser_cls = parser_class(tokenizer)
    processor = ChatStreamProcessor(request, make_parser(parser_cls, tokenizer, request), enable_auto_tools=True,
                                    parser_cls=parser_cls)
    prompt_ids = encode(tokenizer, case["prefix"])
    detok = engine_detokenizer(tokenizer, request, prompt_ids)
    groups = tokens.groupings(encode(tokenizer, case["output"]), seed)[grouping]
    out: dict[str, Any] = {"reasoning": "", "content": "", "calls": {}, "finish_reason": None}
    for position, group in enumerate(groups):
        last = position == len(groups) - 1
        detok.update(group, False)
        delta_text = detok.get_next_output_text(last, True)
        step = processor.step(delta_text, group, reason if last else None, prompt_ids)
        if step.finish_reason is not None:
            out["finish_reason"] = step.finish_reason
        accumulate(out, step.delta)
    out["calls"] = [out["calls"][i] for i in sorted(out["calls"])]
    return out


def accumulate(out: dict[str, Any], delta: Any) -> None:
    """What an OpenAI client builds from vLLM's deltas."""
    if delta is None:
        return
    out["reasoning"] += delta.reasoning or ""
    out["content"] += delta.content or ""
    for call in delta.tool_calls:
        assert (call.id is None) == (call.type is None)
        function = call.function
        add_call(out["calls"], call.index, call.id, function.name if function else None,
                 function.arguments if function else None)


def serve(family: str, path: Path, tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch, calls: str) -> tuple[
        ServedCase, Any]:
    monkeypatch.setenv(TEMPLATE_ENV, FAMILIES[family])
    monkeypatch.setenv(CALLS_ENV, calls)
    return served_case(family, path), vllm_tokenizer(family, tokenizer_dir)


@needs_serving_steps
@pytest.mark.parametrize(("family", "path"), CASES, ids=CASE_IDS)
def test_corpus_through_vllm_serving(family: str, path: Path, tokenizer_dir: str,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    served, tokenizer = serve(family, path, tokenizer_dir, monkeypatch, "buffered")
    assert without_ids(non_streaming(tokenizer, served.case, served.reason)) == served.want
    for grouping in CHUNKINGS:
        streamed = streaming(tokenizer, served.case, served.reason, grouping, served.seed)
        assert without_ids(streamed) == served.want, grouping


TOOL_CASES = [(family, path) for family, path in CASES if load_case(path).get("tools")]


@needs_serving_steps
@pytest.mark.parametrize(("family", "path"), TOOL_CASES, ids=[case_id(f, p) for f, p in TOOL_CASES])
def test_early_calls_never_deliver_a_cut_call(family: str, path: Path, tokenizer_dir: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``CHATPARSE_CALLS=early``: the calls whose arguments parse are the message's calls; a call whose
    arguments do not parse is one that was cut or broken (never a finished-looking cut call)."""
    served, tokenizer = serve(family, path, tokenizer_dir, monkeypatch, "early")
    want = served.want
    for grouping in CHUNKINGS:
        streamed = streaming(tokenizer, served.case, served.reason, grouping, served.seed)
        assert complete_calls(streamed["calls"]) == want["calls"], grouping
        assert (streamed["reasoning"], streamed["content"]) == (want["reasoning"], want["content"]), grouping
        if not served.message.get("malformed"):
            assert len(streamed["calls"]) == len(want["calls"]), grouping
        if served.reason == "length":
            assert streamed["finish_reason"] == "length"


# --- registration, selection, requests -----------------------------------------------------------------


def test_the_plugin_module_registers_both_parsers_by_name() -> None:
    from vllm.utils.import_utils import import_plugin

    import_plugin(PLUGIN_MODULE)
    assert NAME in ToolParserManager.list_registered()
    assert NAME in ReasoningParserManager.list_registered()


def test_parser_manager_composes_the_unified_parser(tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tokenizer = vllm_tokenizer("qwen3", tokenizer_dir)
    both = parser_class(tokenizer)
    assert issubclass(both, ChatparseParser)
    assert both.reasoning_parser_cls is not None and both.tool_parser_cls is not None
    tools_only = ParserManager.get_parser(tool_parser_name=NAME, enable_auto_tools=True, tokenizer=tokenizer)
    assert issubclass(tools_only, ChatparseParser) and tools_only.reasoning_parser_cls is None
    # Without --enable-auto-tool-choice vLLM selects no tool parser: the calls are not returned.
    no_auto = ParserManager.get_parser(tool_parser_name=NAME, reasoning_parser_name=NAME, tokenizer=tokenizer)
    assert issubclass(no_auto, ChatparseParser) and no_auto.tool_parser_cls is None
    with pytest.raises(TypeError, match="cannot be combined"):
        ParserManager.get_parser(tool_parser_name="hermes", reasoning_parser_name=NAME, enable_auto_tools=True,
                                 tokenizer=tokenizer)
    # Other parsers are composed by vLLM as before.
    assert not issubclass(ParserManager.get_parser(tool_parser_name="hermes", enable_auto_tools=True),
                          ChatparseParser)


def test_template_from_the_tokenizer_config(tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No CHATPARSE_TEMPLATE: the model's tokenizer_config.json ``response_template`` is used."""
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    path = Path(tokenizer_dir) / "with_template"
    tok = family_tokenizer("qwen3")
    tok.save_pretrained(path)
    from chatparse.integrations.tokenizer_config import install_response_template

    install_response_template(path, "qwen3")
    tokenizer = get_tokenizer(str(path))
    parser = parser_class(tokenizer)(tokenizer, None)
    assert parser.template.source == chatparse.load_template("qwen3").source


def test_no_template_is_a_startup_error_naming_the_fix(tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    path = Path(tokenizer_dir) / "anonymous"
    family_tokenizer("qwen3").save_pretrained(path)
    tokenizer = get_tokenizer(str(path))
    with pytest.raises(TypeError, match=TEMPLATE_ENV):
        parser_class(tokenizer)


def test_reasoning_end_from_prompt_and_steps(tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the structured-output manager asks the reasoning parser, and what the serving layer asks."""
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tokenizer = vllm_tokenizer("qwen3", tokenizer_dir)
    reasoner = ReasoningParserManager.get_reasoning_parser(NAME)(tokenizer, chat_template_kwargs={})
    header = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert not reasoner.is_reasoning_end(encode(tokenizer, header))
    assert reasoner.is_reasoning_end(encode(tokenizer, header + "<think>\n\n</think>\n\n"))
    assert not reasoner.is_reasoning_end(encode(tokenizer, header + "<think>\n"))
    disabled = ReasoningParserManager.get_reasoning_parser(NAME)(
        tokenizer, chat_template_kwargs={"enable_thinking": False})
    assert disabled.is_reasoning_end(encode(tokenizer, header))
    ids = encode(tokenizer, header)
    seen = []
    for token in encode(tokenizer, "<think>Let me see.</think>Sunny."):
        ids = [*ids, token]
        seen.append(reasoner.is_reasoning_end_streaming(ids, [token]))
    first = seen.index(True)
    assert not any(seen[:first]) and all(seen[first:])
    assert tokenizer.decode(ids[: len(encode(tokenizer, header)) + first + 1]).endswith("</think>")
    parser = parser_class(tokenizer)(tokenizer, None)
    assert parser.is_reasoning_end(encode(tokenizer, header + "<think>\n\n</think>\n\n"))
    output = encode(tokenizer, "<think>Let me see.</think>Sunny.")
    parser.set_prompt_token_ids(encode(tokenizer, header))
    count = parser.count_reasoning_tokens(output)
    assert 0 < count < len(output) and count == len(encode(tokenizer, "<think>Let me see.</think>"))


WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}]


_MARKERS = ("\n</parameter>\n", "</function>\n</tool_call>", "<parameter=", "city>\n", "days>\n", "Seoul", "2",
            '"', "}", "\n</tool_call>")


_MARKERS = ("\n</parameter>\n", "</function>\n</tool_call>", "<parameter=", "city>\n", "days>\n", "Seoul", "2",
            '"', "}", "\n</tool_call>")


@pytest.mark.parametrize("form", ["structural_tag", "lark"])
@pytest.mark.parametrize("family", ["qwen3", "qwen3_coder"])
@pytest.mark.parametrize(("tool_choice", "strict"), [
    ("required", False), ({"type": "function", "function": {"name": "get_weather"}}, False), ("auto", True)])
def test_guarantees_are_enforced_by_the_templates_own_grammar(family: str, tool_choice: Any, strict: bool, form: str,
                                                             tokenizer_dir: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``required``, a named choice and ``strict`` tools get chatparse's grammar for the model's own format,
    after reasoning: xgrammar's structural tag (vLLM's default backend) or, on the guidance backend, Lark in
    ``structured_outputs.grammar``; whatever the backend's matcher lets the model write with the model's
    tokenizer (special tokens as tokens) parses back to the calls the choice demands."""
    monkeypatch.setenv(TEMPLATE_ENV, family)
    monkeypatch.setattr("sys.argv", ["vllm", "serve", "m", *(
        ["--structured-outputs-config", '{"backend": "guidance"}'] if form == "lark" else [])])
    tokenizer = vllm_tokenizer(family, tokenizer_dir)
    tools = [{**t, "function": {**t["function"], "strict": strict}} for t in WEATHER]
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools,
                                    tool_choice=tool_choice)
    parser = make_parser(parser_class(tokenizer), tokenizer, request)
    structured = request.structured_outputs
    if form == "lark":
        assert structured.structural_tag is None and structured.grammar.startswith("%llguidance")
        assert "<tool_call>" in structured.grammar and '"<tool_call>' not in structured.grammar  # a token
        new_matcher: Any = lambda: GuidanceMatcher(tokenizer, structured.grammar)  # noqa: E731
    else:
        pytest.importorskip("xgrammar")
        from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar

        assert structured.grammar is None
        literals = {f["value"] for f in _formats(json.loads(structured.structural_tag)["format"])
                    if f["type"] == "const_string"}
        assert "<tool_call>" in literals  # an added token, a literal of its own (xgrammar matches it as text)
        validate_xgrammar_grammar(SamplingParams(structured_outputs=structured))  # vLLM's check: no tokenizer
        new_matcher = lambda: XGrammarMatcher(tokenizer, structured.structural_tag, ["<|im_end|>"])  # noqa: E731
    finished = 0
    for seed in range(8):
        ids = walk_tokens(tokenizer, new_matcher(), seed, _MARKERS)
        if ids is None:
            continue
        finished += 1
        text = tokenizer.decode(ids, skip_special_tokens=False)
        _, _, calls = parser.parse(text, request)
        names = [c.name for c in calls or []]
        if tool_choice == "required":
            assert names, text
        elif isinstance(tool_choice, dict):
            assert names == ["get_weather"], text
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in WEATHER}
        for call in calls or []:
            jsonschema.validate(json.loads(call.arguments), schemas[call.name])
    assert finished >= 3


def _formats(fmt: dict[str, Any]) -> Any:
    yield fmt
    for child in [*fmt.get("elements", ()), *([fmt["content"]] if "content" in fmt else [])]:
        yield from _formats(child)


@pytest.mark.parametrize(("argv", "env", "form"), [
    ([], "", "structural_tag"),  # vLLM's default backend, auto: xgrammar takes structural tags
    (["--structured-outputs-config", '{"backend": "guidance", "enable_in_reasoning": true}'], "", "lark"),
    (['--structured-outputs-config={"backend": "guidance"}'], "", "lark"),
    (["--structured-outputs-config.backend", "guidance"], "", "lark"),
    (["--structured_outputs_config.backend=xgrammar"], "", "structural_tag"),
    (["--structured-outputs-config", '{"backend": "guidance"}'], "structural_tag", "structural_tag"),
    ([], "lark", "lark"),
    ([], "regex", "structural_tag"),  # not a form: ignored (with a warning)
])
def test_the_grammar_form_follows_the_servers_backend(argv: list[str], env: str, form: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from chatparse.integrations.vllm.parsers import GRAMMAR_FORM_ENV, grammar_form

    monkeypatch.setenv(GRAMMAR_FORM_ENV, env)
    assert grammar_form(["vllm", "serve", "model", "--port", "8000", *argv]) == form


def test_auto_without_strict_tools_stays_free(tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    monkeypatch.setattr("sys.argv", ["vllm", "serve", "m"])
    tokenizer = vllm_tokenizer("qwen3", tokenizer_dir)
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=WEATHER,
                                    tool_choice="auto")
    make_parser(parser_class(tokenizer), tokenizer, request)
    assert request.structured_outputs is None
    monkeypatch.setenv("CHATPARSE_GRAMMAR", "auto")
    make_parser(parser_class(tokenizer), tokenizer, request)
    assert json.loads(request.structured_outputs.structural_tag)["type"] == "structural_tag"


def test_a_template_without_a_grammar_is_a_400_naming_why(tokenizer_dir: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    spec = chatparse.get_template("qwen3")
    spec["fields"]["tool_calls"].pop("open")
    spec["fields"]["tool_calls"]["open_pattern"] = "<tool_call>(?=\\s*\\{)"
    del spec["fields"]["tool_calls"]["chatparse"]["write"]
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(spec))
    monkeypatch.setenv(TEMPLATE_ENV, str(path))
    tokenizer = vllm_tokenizer("qwen3", tokenizer_dir)
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=WEATHER,
                                    tool_choice="required")
    with pytest.raises(VLLMValidationError, match=r"chatparse\.write"):
        make_parser(parser_class(tokenizer), tokenizer, request)


def test_adjust_request_keeps_special_tokens(tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tokenizer = vllm_tokenizer("qwen3", tokenizer_dir)
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    make_parser(parser_class(tokenizer), tokenizer, request)
    assert request.skip_special_tokens is False and request.spaces_between_special_tokens is False


def test_a_cut_call_is_left_out_with_a_line_in_vllms_log(tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tokenizer = vllm_tokenizer("qwen3", tokenizer_dir)
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    parser = make_parser(parser_class(tokenizer), tokenizer, request)
    parser.set_prompt_token_ids(encode(tokenizer, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"))
    output = '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {"x": '
    with caplog.at_level(logging.WARNING, logger="vllm.chatparse"):
        _, _, calls = parser.parse(output, request, enable_auto_tools=True)
    assert [(c.name, c.arguments) for c in calls] == [("a", "{}")]
    assert any(r.name == "vllm.chatparse" and "(truncated)" in r.getMessage() for r in caplog.records)


def test_kimi_style_ids_count_history_calls(tokenizer_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With vLLM's ``kimi_k2`` tool-call id type, ids are ``functions.NAME:INDEX`` counted after the calls of
    earlier turns, the same in streaming and non-streaming."""
    monkeypatch.setenv(TEMPLATE_ENV, "kimi_k2")
    path = next(p for f, p in TOOL_CASES if f == "kimi_k2" and len(served_case(f, p).want["calls"]) >= 2)
    case = load_case(path)
    tokenizer = vllm_tokenizer("kimi_k2", tokenizer_dir)
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "functions.f:0", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "functions.f:0", "content": "ok"}]
    request = ChatCompletionRequest(model="m", messages=history, tools=case.get("tools"), tool_choice="auto")
    parser = make_parser(parser_class(tokenizer), tokenizer, request)
    parser._stream_state.tool_call_id_type = "kimi_k2"
    parser.set_prompt_token_ids(encode(tokenizer, case["prefix"]))
    _, _, calls = parser.parse(case["output"], request, enable_auto_tools=True)
    assert [c.id for c in calls] == [f"functions.{c.name}:{i + 1}" for i, c in enumerate(calls)]
    streaming_parser = make_parser(parser_class(tokenizer), tokenizer, request)
    streaming_parser._stream_state.tool_call_id_type = "kimi_k2"
    delta = streaming_parser.parse_delta(case["output"], [], request, encode(tokenizer, case["prefix"]),
                                         finished=True)
    assert [c.id for c in delta.tool_calls if c.id is not None] == [c.id for c in calls]


@needs_serving_steps
def test_text_runner_is_registered() -> None:
    """tests/tokens.py runs the plugin as one of its RUNNERS when vLLM is importable (tests/test_tokens.py
    sends every corpus case of every family through it); a runner that loses a delta is caught."""
    assert "vLLM plugin" in tokens.RUNNERS and "vLLM plugin" in tokens.RECOVER_RUNNERS
    prefix = "<|im_start|>assistant\n"
    text = "<think>Hm.</think>Hello there.<|im_end|>"
    assert tokens.disagreements("qwen3", prefix, text, {}, seed=random.Random(0).randint(0, 99)) == []


DOC = Path(__file__).parents[2] / "docs" / "vllm.md"


def documented_command() -> list[str]:
    """The ``vllm serve`` command line of docs/vllm.md, as argv after ``vllm``, and its environment."""
    block = DOC.read_text(encoding="utf-8").split("```bash\n", 1)[1].split("```", 1)[0]
    line = block.replace("\\\n", " ")
    command = next(part for part in line.splitlines() if " vllm serve " in f" {part} ")
    return shlex.split(command)


def startup_checks() -> tuple[Any, Any, Any]:
    """vLLM's ``vllm serve`` startup steps: import the parser plugins, validate the parsed arguments, validate
    the API server's (0.33 names; 0.32 has the two checks elsewhere and imports plugins inline)."""
    try:
        from vllm.entrypoints.common.cli_args import (
            init_parser_plugin,
            validate_api_server_args,
            validate_parsed_serve_args,
        )
    except ImportError:
        from vllm.entrypoints.launchers.cli_args import validate_parsed_serve_args
        from vllm.entrypoints.launchers.launcher import validate_api_server_args

        def init_parser_plugin(args: Any) -> None:  # as 0.32's setup_server does
            ToolParserManager.import_tool_parser(args.tool_parser_plugin)
            ReasoningParserManager.import_reasoning_parser(args.reasoning_parser_plugin)
    return init_parser_plugin, validate_api_server_args, validate_parsed_serve_args


def test_the_documented_command_passes_vllms_startup_checks(tokenizer_dir: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    init_parser_plugin, validate_api_server_args, validate_parsed_serve_args = startup_checks()

    argv = documented_command()
    env = dict(item.split("=", 1) for item in argv[: argv.index("vllm")])
    assert env == {TEMPLATE_ENV: "qwen3"}
    parser = FlexibleArgumentParser()
    ServeSubcommand().subparser_init(parser.add_subparsers(dest="subcommand"))
    args = parser.parse_args(argv[argv.index("vllm") + 1:])
    assert (args.tool_call_parser, args.reasoning_parser) == (NAME, NAME) and args.enable_auto_tool_choice
    assert args.tool_parser_plugin == args.reasoning_parser_plugin == PLUGIN_MODULE
    validate_parsed_serve_args(args)
    init_parser_plugin(args)
    validate_api_server_args(args)
    monkeypatch.setenv(TEMPLATE_ENV, env[TEMPLATE_ENV])
    tokenizer = vllm_tokenizer("qwen3", tokenizer_dir)
    composed = ParserManager.get_parser(tool_parser_name=args.tool_call_parser,
                                        reasoning_parser_name=args.reasoning_parser,
                                        enable_auto_tools=args.enable_auto_tool_choice, tokenizer=tokenizer)
    assert issubclass(composed, ChatparseParser)
