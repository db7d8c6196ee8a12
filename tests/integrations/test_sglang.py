"""The SGLang plugin against SGLang's own classes (skipped without SGLang; ``scripts/test-sglang.sh`` builds a
venv with it and runs this module).

Each corpus case of the served families goes the way ``python -m sglang.launch_server --tool-call-parser
chatparse --reasoning-parser chatparse`` serves it: the output as token ids of a tokenizer built locally with
the family's special tokens, grouped into engine steps several ways, turned into text by SGLang's
``DetokenizerManager`` decode step, and answered by SGLang's ``OpenAIServingChat`` itself (built over a stand-in
tokenizer manager that yields those steps): ``_generate_chat_stream`` for streaming, ``_build_chat_response``
for non-streaming, with the prompt handed over by its ``_set_response_parser_context``. The client-side sum of
the streamed chunks must equal the non-streaming message, and both chatparse's ``parse_response``
(``on_malformed="recover"``), finish reasons included.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import shlex
import types
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sglang", reason="SGLang is not installed; scripts/test-sglang.sh builds a venv with "
                                     "SGLang 0.5.23 and runs this module")

from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.managers.detokenizer_manager import DetokenizerManager
from sglang.srt.parser.reasoning_parser import ReasoningParser
from sglang.srt.parser.response_template import configure_response_template_request, tool_close_token_ids
from sglang.srt.runtime_context import publish, reset_context
from sglang.srt.server_args import ServerArgs
from xgrammar import StructuralTag

import chatparse
from chatparse.grammar import tool_grammar
from chatparse.integrations.serving import CALLS_ENV, TEMPLATE_ENV, reasoning_field, template_special_tokens
from chatparse.integrations.sglang import ENTRY_POINT, ENTRY_POINT_GROUP, NAME, register
from chatparse.integrations.sglang_detectors import ChatparseReasoningDetector, ChatparseToolDetector
from chatparse.templates import get_template
from tests import tokens
from tests.grammar.test_builtins import NO_FREE_FORM_OBJECTS, NO_GRAMMAR, _free_form_objects_declared
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
from tests.integrations.tokenizers import SAMPLE, byte_level, encode, family_tokenizer
from tests.templates.corpus_loader import case_id, corpus_cases, load_case

QWEN_HEADER = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def _publish(**parsers: str | None) -> None:
    """The server configuration SGLang's processes read (``get_serving()``), as launch_server publishes it."""
    reset_context()
    publish(ServerArgs(model_path="dummy", **parsers), role="test")


@pytest.fixture(autouse=True, scope="module")
def _server() -> Iterator[None]:
    register()
    _publish(tool_call_parser=NAME, reasoning_parser=NAME)
    yield
    reset_context()


# --- SGLang's serving layer over a stand-in tokenizer manager ---------------------------------------------------


class TokenizerManager:
    """What ``OpenAIServingChat`` reads from SGLang's tokenizer manager; ``generate_request`` yields the steps
    of one generation as the real one does (cumulative text, the finish reason on the last)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.server_args = types.SimpleNamespace(tool_call_parser=NAME, reasoning_parser=NAME)
        self.model_config = types.SimpleNamespace(
            get_default_sampling_params=dict, hf_config=types.SimpleNamespace(model_type="chatparse_test", architectures=[]),
            is_multimodal=False)
        self.served_model_name = "m"
        self.steps: list[dict[str, Any]] = []

    def config_value(self, name: str) -> Any:
        return getattr(self.server_args, name, None)

    async def generate_request(self, adapted_request: Any, raw_request: Any) -> AsyncIterator[dict[str, Any]]:
        for step in self.steps:
            yield step


def serving_chat(tokenizer: Any) -> OpenAIServingChat:
    manager = TokenizerManager(tokenizer)
    template_manager = types.SimpleNamespace(force_reasoning=False, reasoning_config=None, chat_template_name=None,
                                             python_chat_template=None)
    return OpenAIServingChat(manager, template_manager)  # type: ignore[arg-type]


def make_request(serving: OpenAIServingChat, case: dict[str, Any], *, stream: bool) -> ChatCompletionRequest:
    """A chat request prepared as ``_convert_to_internal_request`` prepares it: the detectors' tool
    constraint asked for, special tokens kept, the rendered prompt handed to the response parsers."""
    tools = case.get("tools")
    # Chat completions take function tools only ({"type": "code_interpreter"} enables a format's built-in
    # tool in its chat template; the parser reads those calls whatever the tools).
    tools = [t for t in tools if t.get("type", "function") == "function"] or None if tools else None
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], stream=stream,
                                    tools=tools, tool_choice="auto" if tools else None)
    constraint = None
    if tools:
        parser = FunctionCallParser(request.tools, NAME, tokenizer=serving.tokenizer_manager.tokenizer)
        constraint = parser.get_structure_constraint(request.tool_choice, request.parallel_tool_calls)
        assert constraint is None, "plain auto stays free text"
    assert serving._requires_response_template_detokenization(request)
    configure_response_template_request(request)
    adapted = types.SimpleNamespace(text=case["prefix"], input_ids=None, sampling_params={})
    active = serving._tool_call_parsing_active(request)
    serving._set_response_parser_context(request, adapted, tool_call_constraint=constraint,
                                         tools=serving._effective_tools(request) if active else [])
    assert request._response_parser_prefix == case["prefix"]
    return request


def detokenizer(tokenizer: Any) -> DetokenizerManager:
    """SGLang's detokenizer for one request, without its process (the decode step is the real one)."""
    detok = DetokenizerManager.__new__(DetokenizerManager)
    detok.tokenizer = tokenizer
    detok.vocab_size = len(tokenizer)
    detok.decode_status = {}
    detok.disable_tokenizer_batch_decode = False
    detok.is_tool_call_parser_gpt_oss = False
    detok.tool_close_token_ids = tool_close_token_ids(NAME, tokenizer)
    return detok


def engine_steps(tokenizer: Any, request: ChatCompletionRequest, groups: list[list[int]], reason: str,
                 matched: Any = None) -> list[dict[str, Any]]:
    """The tokenizer manager's outputs for ``groups`` of generated ids: text from SGLang's detokenizer
    (special tokens kept as the request asks), accumulated, the finish reason on the last step."""
    detok = detokenizer(tokenizer)
    steps, text, count = [], "", 0
    for position, group in enumerate(groups):
        last = position == len(groups) - 1
        finish = {"type": reason, "matched": matched} if last else None
        batch = types.SimpleNamespace(
            rids=["r"], decoded_texts=[""], decode_ids=[list(group)], read_offsets=[0], finished_reasons=[finish],
            no_stop_trim=[False], skip_special_tokens=[request.skip_special_tokens],
            spaces_between_special_tokens=[False])
        text += detok._decode_batch_token_id_output(batch)[0]
        count += len(group)
        steps.append({"text": text, "index": 0, "meta_info": {
            "id": "r", "finish_reason": finish, "prompt_tokens": 1, "completion_tokens": count,
            "cached_tokens": 0, "weight_version": "default"}, "output_ids": [i for g in groups[: position + 1] for i in g]})
    return steps


def non_streaming(tokenizer: Any, case: dict[str, Any], reason: str) -> dict[str, Any]:
    serving = serving_chat(tokenizer)
    request = make_request(serving, case, stream=False)
    ids = encode(tokenizer, case["output"])
    final = engine_steps(tokenizer, request, [ids], reason)[-1]
    response = serving._build_chat_response(request, [final], created=0)
    choice = response.choices[0]
    message = choice.message
    return {"reasoning": message.reasoning_content or "", "content": message.content or "",
            "calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                      for c in message.tool_calls or ()],
            "finish_reason": choice.finish_reason}


def streaming(tokenizer: Any, case: dict[str, Any], reason: str, grouping: str, seed: int) -> dict[str, Any]:
    serving = serving_chat(tokenizer)
    request = make_request(serving, case, stream=True)
    groups = tokens.groupings(encode(tokenizer, case["output"]), seed)[grouping]
    serving.tokenizer_manager.steps = engine_steps(tokenizer, request, groups, reason)  # type: ignore[attr-defined]
    return accumulate(asyncio.run(sse_chunks(serving, request)))


async def sse_chunks(serving: OpenAIServingChat, request: ChatCompletionRequest) -> list[dict[str, Any]]:
    chunks = []
    async for event in serving._generate_chat_stream(types.SimpleNamespace(), request, None):
        assert event.startswith("data: "), event
        body = event.removeprefix("data: ").strip()
        if body != "[DONE]":
            chunks.append(json.loads(body))
    return chunks


def accumulate(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What an OpenAI client builds from SGLang's chunks."""
    out: dict[str, Any] = {"reasoning": "", "content": "", "calls": {}, "finish_reason": None}
    for chunk in chunks:
        assert "error" not in chunk, chunk
        for choice in chunk["choices"]:
            delta = choice["delta"]
            out["reasoning"] += delta.get("reasoning_content") or ""
            out["content"] += delta.get("content") or ""
            for call in delta.get("tool_calls") or ():
                function = call.get("function") or {}
                add_call(out["calls"], call["index"], call.get("id"), function.get("name"), function.get("arguments"))
            out["finish_reason"] = choice.get("finish_reason") or out["finish_reason"]
    out["calls"] = [out["calls"][i] for i in sorted(out["calls"])]
    return out


def serve(family: str, path: Path, monkeypatch: pytest.MonkeyPatch, calls: str) -> tuple[ServedCase, Any]:
    monkeypatch.setenv(TEMPLATE_ENV, FAMILIES[family])
    monkeypatch.setenv(CALLS_ENV, calls)
    return served_case(family, path), family_tokenizer(FAMILIES[family])


@pytest.mark.parametrize(("family", "path"), CASES, ids=CASE_IDS)
def test_corpus_through_sglang_serving(family: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served, tokenizer = serve(family, path, monkeypatch, "buffered")
    assert without_ids(non_streaming(tokenizer, served.case, served.reason)) == served.want
    for grouping in CHUNKINGS:
        streamed = streaming(tokenizer, served.case, served.reason, grouping, served.seed)
        assert without_ids(streamed) == served.want, grouping


TOOL_CASES = [(family, path) for family, path in CASES if load_case(path).get("tools")]


@pytest.mark.parametrize(("family", "path"), TOOL_CASES, ids=[case_id(f, p) for f, p in TOOL_CASES])
def test_early_calls_never_deliver_a_cut_call(family: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``CHATPARSE_CALLS=early``: the calls whose arguments parse are the message's calls; a call whose
    arguments do not parse is one that was cut or broken, and the finish reason is then not ``tool_calls``."""
    served, tokenizer = serve(family, path, monkeypatch, "early")
    want = served.want
    for grouping in CHUNKINGS:
        streamed = streaming(tokenizer, served.case, served.reason, grouping, served.seed)
        assert complete_calls(streamed["calls"]) == want["calls"], grouping
        assert (streamed["reasoning"], streamed["content"]) == (want["reasoning"], want["content"]), grouping
        if len(complete_calls(streamed["calls"])) < len(streamed["calls"]):
            assert streamed["finish_reason"] != "tool_calls", grouping
        else:
            assert streamed["finish_reason"] == want["finish_reason"], grouping


# --- registration, selection, requests ------------------------------------------------------------------------


def test_register_adds_both_detectors_to_sglangs_maps_and_choices() -> None:
    from sglang.srt.server_args import _reasoning_parser_choices, _tool_call_parser_choices

    register()
    assert FunctionCallParser.ToolCallParserEnum[NAME] is ChatparseToolDetector
    assert ReasoningParser.DetectorMap[NAME] is ChatparseReasoningDetector
    assert NAME in _tool_call_parser_choices() and NAME in _reasoning_parser_choices()
    assert (ENTRY_POINT_GROUP, ENTRY_POINT.split(":")[1]) == ("sglang.srt.plugins", "register")


def test_the_entry_point_is_installed_when_the_package_declares_it() -> None:
    """``load_plugins`` runs the ``sglang.srt.plugins`` entry points; once pyproject.toml declares ours (see
    docs/sglang.md), an installed chatparse registers itself in every SGLang process."""
    from importlib.metadata import entry_points

    ours = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.value == ENTRY_POINT]
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    if ENTRY_POINT not in pyproject:
        pytest.skip("pyproject.toml does not declare the sglang.srt.plugins entry point yet")
    assert ours, "declared in pyproject.toml but not installed: reinstall chatparse (pip install -e .)"
    ours[0].load()()
    assert FunctionCallParser.ToolCallParserEnum[NAME] is ChatparseToolDetector


DOC = Path(__file__).parents[2] / "docs" / "sglang.md"


def documented_command() -> list[str]:
    """The ``python -m sglang.launch_server`` command line of docs/sglang.md, with its environment."""
    block = DOC.read_text(encoding="utf-8").split("```bash\n", 1)[1].split("```", 1)[0]
    line = block.replace("\\\n", " ")
    return shlex.split(next(part for part in line.splitlines() if "sglang.launch_server" in part))


def test_the_documented_command_parses_with_sglangs_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    from sglang.srt.server_args import prepare_server_args

    argv = documented_command()
    env = dict(item.split("=", 1) for item in argv[: argv.index("python")])
    assert env == {TEMPLATE_ENV: "qwen3"}
    assert argv[argv.index("python"):][:3] == ["python", "-m", "sglang.launch_server"]
    register()
    args = prepare_server_args(argv[argv.index("python") + 3:])
    assert (args.tool_call_parser, args.reasoning_parser) == (NAME, NAME)
    monkeypatch.setenv(TEMPLATE_ENV, env[TEMPLATE_ENV])
    detector = ReasoningParser(args.reasoning_parser, tokenizer=family_tokenizer("qwen3")).detector
    assert isinstance(detector, ChatparseReasoningDetector)
    assert detector.think_end_token == "</think>"


def test_another_parser_beside_chatparse_is_a_startup_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    try:
        _publish(tool_call_parser="hermes", reasoning_parser=NAME)
        with pytest.raises(ValueError, match="--tool-call-parser chatparse --reasoning-parser chatparse"):
            ReasoningParser(NAME, tokenizer=family_tokenizer("qwen3"))
        _publish(tool_call_parser=NAME, reasoning_parser="qwen3")
        with pytest.raises(ValueError, match="expected --reasoning-parser chatparse"):
            FunctionCallParser([], NAME, tokenizer=family_tokenizer("qwen3"))
        _publish(tool_call_parser=NAME, reasoning_parser=None)  # tool calls alone are fine
        FunctionCallParser([], NAME, tokenizer=family_tokenizer("qwen3"))
    finally:
        _publish(tool_call_parser=NAME, reasoning_parser=NAME)


def test_no_template_is_an_error_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TEMPLATE_ENV, raising=False)
    anonymous = family_tokenizer("qwen3").__class__(tokenizer_object=family_tokenizer("qwen3").backend_tokenizer)
    with pytest.raises(ValueError, match=TEMPLATE_ENV):
        ReasoningParser(NAME, tokenizer=anonymous)


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
NAMED = {"type": "function", "function": {"name": "get_weather"}}


def _constraint(family: str, tools: list[dict[str, Any]], tool_choice: Any, parallel: bool = True) -> Any:
    """What SGLang's chat serving asks the tool-call parser for (``_process_messages``): the request's tools
    through ``FunctionCallParser.get_structure_constraint``, with thinking_mode as it passes it (False when a
    reasoning parser runs)."""
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools,
                                    tool_choice=tool_choice, parallel_tool_calls=parallel)
    parser = FunctionCallParser(request.tools, NAME, tokenizer=model_tokenizer(family))
    return parser.get_structure_constraint(request.tool_choice, parallel_tool_calls=parallel, thinking_mode=False)


@pytest.mark.parametrize(("tool_choice", "strict", "parallel"), [
    ("required", False, True), ("required", False, False), (NAMED, False, True), ("auto", True, True),
    ("auto", False, False)], ids=["required", "required, one call", "named", "strict auto", "auto, one call"])
def test_guarantees_are_the_templates_grammar_as_a_structural_tag(tool_choice: Any, strict: bool, parallel: bool,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tool = {"type": "function", "function": {**WEATHER["function"], "strict": strict}}
    kind, tag = _constraint("qwen3", [tool], tool_choice, parallel)
    assert kind == "structural_tag" and isinstance(tag, StructuralTag)
    # the grammar after reasoning (the reasoning parser runs; SGLang defers the grammar to its end), with the
    # tokenizer's added tokens that the template uses as its special tokens
    want = tool_grammar("qwen3", [tool], tool_choice=tool_choice, parallel_tool_calls=parallel, reasoning=False,
                        special_tokens=template_special_tokens(family_tokenizer("qwen3"), template_for_name("qwen3")))
    assert want.special_tokens and "<tool_call>" in want.special_tokens
    assert_within(want.structural_tag, tag.model_dump(by_alias=True))  # xgrammar's model only adds defaults


def assert_within(part: Any, whole: Any, where: str = "") -> None:
    """Every key and value of ``part`` is in ``whole`` (which may hold more keys)."""
    if isinstance(part, dict):
        assert isinstance(whole, dict), where
        for key, value in part.items():
            assert key in whole, f"{where}/{key}"
            assert_within(value, whole[key], f"{where}/{key}")
    elif isinstance(part, list):
        assert isinstance(whole, list) and len(part) == len(whole), where
        for index, (a, b) in enumerate(zip(part, whole, strict=True)):
            assert_within(a, b, f"{where}[{index}]")
    else:
        assert part == whole, where


def test_without_a_reasoning_parser_the_grammar_covers_the_reasoning(monkeypatch: pytest.MonkeyPatch) -> None:
    """SGLang starts a grammar at the first token when no reasoning parser runs (or its think_end_token is
    empty): the tag then holds the reasoning block; with ``--reasoning-parser chatparse`` it starts after it."""
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3.5")
    special = template_special_tokens(family_tokenizer("qwen3.5"), template_for_name("qwen3.5"))
    assert ReasoningParser(NAME, tokenizer=family_tokenizer("qwen3.5")).detector.think_end_token == "</think>"
    for reasoning_parser, covers_reasoning in ((NAME, False), (None, True)):
        try:
            _publish(tool_call_parser=NAME, reasoning_parser=reasoning_parser)
            _, tag = _constraint("qwen3.5", [WEATHER], "required")
        finally:
            _publish(tool_call_parser=NAME, reasoning_parser=NAME)
        want = tool_grammar("qwen3.5", [WEATHER], tool_choice="required", reasoning=covers_reasoning,
                            special_tokens=special)
        assert_within(want.structural_tag, tag.model_dump(by_alias=True))
        assert ('"<think>"' in json.dumps(want.structural_tag)) == covers_reasoning


def test_plain_auto_and_none_stay_unconstrained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    assert _constraint("qwen3", [WEATHER], "auto") is None
    assert _constraint("qwen3", [WEATHER], "none") is None


def test_sglang_tool_strict_level_constrains_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    monkeypatch.setenv("SGLANG_TOOL_STRICT_LEVEL", "1")  # ToolStrictLevel.FUNCTION
    constraint = _constraint("qwen3", [WEATHER], "auto")
    assert constraint is not None and constraint[0] == "structural_tag"


def test_the_detector_claims_the_tool_format_only_with_a_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    """``supports_structural_tag`` is what makes SGLang read required and named calls with this detector
    rather than as a JSON array (``FunctionCallParser.owns_tool_format``)."""
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    assert FunctionCallParser([], NAME, tokenizer=family_tokenizer("qwen3")).owns_tool_format()
    monkeypatch.setenv(TEMPLATE_ENV, NO_GRAMMAR_FAMILY)
    assert not FunctionCallParser([], NAME, tokenizer=family_tokenizer(NO_GRAMMAR_FAMILY)).owns_tool_format()


NO_GRAMMAR_FAMILY = sorted(NO_GRAMMAR)[0]  # a built-in with no grammar


@pytest.mark.parametrize(("tool_choice", "strict", "parallel"), [
    ("required", False, True), (NAMED, False, True), ("auto", True, True), ("auto", False, False)])
def test_a_template_without_a_grammar_refuses_guarantees(tool_choice: Any, strict: bool, parallel: bool,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, NO_GRAMMAR_FAMILY)
    tool = {"type": "function", "function": {**WEATHER["function"], "strict": strict}}
    with pytest.raises(ValueError, match=rf"cannot guarantee .*\({NO_GRAMMAR[NO_GRAMMAR_FAMILY]}\).*tool_choice='auto' "
                                         "with non-strict"):
        _constraint(NO_GRAMMAR_FAMILY, [tool], tool_choice, parallel)


def test_a_schema_the_grammar_cannot_hold_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tool = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}}}}
    with pytest.raises(ValueError, match=r"cannot guarantee tool_choice='required'.*minimum"):
        _constraint("qwen3", [tool], "required")


def test_another_grammar_backend_is_refused_naming_xgrammar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    try:
        _publish(tool_call_parser=NAME, reasoning_parser=NAME, grammar_backend="llguidance")
        with pytest.raises(ValueError, match=r"--grammar-backend llguidance.*--grammar-backend xgrammar"):
            _constraint("qwen3", [WEATHER], "required")
    finally:
        _publish(tool_call_parser=NAME, reasoning_parser=NAME)


RENDERED = Path(__file__).parents[1] / "templates" / "rendered"
# The stop tokens of a family's real model (its generation_config's eos_token_id), which SGLang hands
# xgrammar: the grammar must let each of them end the turn. Other families: the template's end-of-turn
# markers that are single tokens.
STOP_TOKENS = {"qwen3": ["<|im_end|>", "<|endoftext|>"], "qwen3_coder": ["<|im_end|>", "<|endoftext|>"],
               "gpt_oss": ["<|return|>", "<|call|>", "<|endoftext|>"]}


def template_for_name(name: str) -> Any:
    return chatparse.load_template(get_template(name))


def _stop_names(family: str) -> list[str]:
    return STOP_TOKENS.get(family) or get_template(family).get("chatparse", {}).get("end", [])


@functools.cache
def model_tokenizer(family: str) -> Any:
    """The family's test tokenizer, with its end-of-turn markers as special tokens where the test tokenizer
    spells them in pieces (a real model's stop token is one token)."""
    tokenizer = family_tokenizer(family)
    missing = [name for name in _stop_names(family) if len(tokenizer.encode(name, add_special_tokens=False)) != 1]
    if not missing:
        return tokenizer
    special, tags = tokens.template_markers(get_template(family))
    texts = [load_case(path)["output"] for name, path in corpus_cases() if name == family] + SAMPLE
    return byte_level(texts, special=[*special, *missing], added=tags)


def stop_tokens(family: str) -> list[int]:
    tokenizer = model_tokenizer(family)
    ids = [tokenizer.encode(name, add_special_tokens=False) for name in _stop_names(family)]
    return [one[0] for one in ids if len(one) == 1]


def rendered_turns(family: str, *, calls_only: bool) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The tools and each assistant turn the family's real chat template renders (tests/templates/rendered),
    cut at the template's end of turn, with its prompt; ``calls_only``: the turns with calls and no content."""
    data = json.loads((RENDERED / f"{family}.json").read_text(encoding="utf-8"))
    template = template_for_name(family)
    ends = get_template(family).get("chatparse", {}).get("end", [])
    turns = []
    for name, rendering in data["renderings"].items():
        if not name.startswith("assistant_") or not rendering.get("prompt_is_prefix"):
            continue
        text = rendering["assistant_text"]
        found = [(text.find(e) + len(e), e) for e in ends if e in text]
        text = text[: min(found)[0]] if found else text
        prompt = data["renderings"][rendering["prompt_rendering"]]["text"]
        message = chatparse.parse_response(text, template, prefix=prompt, tools=data["tools_schema"])
        if closes_reasoning_otherwise(template, text):
            continue
        if not calls_only or (message.get("tool_calls") and not message.get("content")):
            turns.append((prompt, text))
    tools = data["tools_schema"]
    # (a family that writes objects as elements gets the free-form objects' properties, as in test_builtins)
    return (_free_form_objects_declared(family, tools) if family in NO_FREE_FORM_OBJECTS else tools), turns


def closes_reasoning_otherwise(template: Any, text: str) -> bool:
    """Whether ``text`` closes its reasoning with another of the template's spellings than the one SGLang's
    reasoner gate waits for (K2 Horizon's lower reasoning efforts: ``</ifm|think_fast>``). SGLang keeps one
    reasoning end per server, so the grammar of such a turn never starts: a known gap (docs/sglang.md)."""
    field = reasoning_field(template)
    spellings = (template.fields[field].ext.write or {}).get("also") or [] if field else []
    return any(close in text for _, close in spellings)


def assert_admits(family: str, constraint: Any, text: str) -> None:
    """SGLang's grammar for ``constraint`` takes ``text`` token by token (from the reasoning's end when the
    text reasons), and a stop token may end the turn there."""
    tokenizer = model_tokenizer(family)
    think_end = ReasoningParser(NAME, tokenizer=tokenizer).detector.think_end_token
    grammar = sglang_grammar(family, constraint, reasoning=bool(think_end) and think_end in text)
    for token in encode(tokenizer, text):
        grammar.accept_token(token)  # raises ValueError naming the token the grammar refused
    if not grammar.is_terminated():  # the text ends before the stop token that ends the turn
        grammar.accept_token(stop_tokens(family)[0])
    assert grammar.is_terminated(), text


@functools.cache
def sglang_backend(family: str) -> tuple[Any, Any]:
    """SGLang's xgrammar backend for the family's model and, when the reasoning detector has a think end,
    its reasoner wrapper: one per family, as a server has one, so every tag of the module goes through one
    caching compiler (xgrammar's cache has mixed up tags before)."""
    from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend
    from sglang.srt.constrained.xgrammar_backend import XGrammarGrammarBackend

    tokenizer = model_tokenizer(family)
    backend = XGrammarGrammarBackend(tokenizer, vocab_size=len(tokenizer), model_eos_token_ids=stop_tokens(family))
    parser = ReasoningParser(NAME, tokenizer=tokenizer)
    if not parser.detector.get_think_end_token_ids(tokenizer):  # SGLang then runs no reasoner wrapper
        return backend, None
    return backend, ReasonerGrammarBackend(backend, parser, tokenizer)


def sglang_grammar(family: str, constraint: Any, *, reasoning: bool) -> Any:
    """The grammar object SGLang's scheduler makes for a request's constraint: the sampling parameter as the
    protocol writes it, compiled by SGLang's xgrammar backend behind its reasoner wrapper (``--reasoning-parser
    chatparse``: the grammar starts where the reasoning ends when the request reasons)."""
    from sglang.utils import convert_json_schema_to_str

    kind, tag = constraint
    key = convert_json_schema_to_str(tag.model_dump(by_alias=True))
    backend, reasoner = sglang_backend(family)
    if reasoner is None:
        grammar = backend.dispatch_structural_tag(key)
        assert type(grammar).__name__ == "XGrammarGrammar", getattr(grammar, "error_message", grammar)
        return grammar
    grammar = reasoner._init_value_dispatch((kind, key), reasoning)
    assert type(grammar).__name__ == "ReasonerGrammarObject", getattr(grammar, "error_message", grammar)
    return grammar


RENDERED_FAMILIES = sorted(path.stem for path in RENDERED.glob("*.json")
                           if path.stem not in NO_GRAMMAR and rendered_turns(path.stem, calls_only=True)[1])
# (SGLang pins xgrammar 0.2.7, whose compiler fails on a negated class holding a non-ASCII character such as
# U+1680, the Unicode whitespace of hermes' free text: to_ebnf writes xgrammar's classes without one.)


@pytest.mark.parametrize("family", RENDERED_FAMILIES)
def test_the_tag_compiles_in_sglangs_xgrammar_backend_and_admits_real_renders(
        family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call turn the family's real chat template renders goes token by token through the grammar
    SGLang builds for ``required`` (and for the turn's one tool, named): its xgrammar backend behind the
    reasoner wrapper, which starts the grammar where the reasoning ends when the output reasons."""
    monkeypatch.setenv(TEMPLATE_ENV, family)
    tools, turns = rendered_turns(family, calls_only=True)
    for prompt, text in turns:
        calls = chatparse.parse_response(text, template_for_name(family), prefix=prompt,
                                         tools=tools).get("tool_calls") or []
        names = {call["function"]["name"] for call in calls}
        assert_admits(family, _constraint(family, tools, "required"), text)
        if len(names) == 1 and len(calls) == 1:
            assert_admits(family, _constraint(family, tools, {"type": "function", "function": {"name": names.pop()}}),
                          text)


@pytest.mark.parametrize("family", RENDERED_FAMILIES)
def test_the_strict_auto_tag_admits_every_real_render(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` with strict tools: every assistant turn the real chat template renders, answers and calls."""
    monkeypatch.setenv(TEMPLATE_ENV, family)
    tools, turns = rendered_turns(family, calls_only=False)
    strict = [{**tool, "function": {**tool["function"], "strict": True}} for tool in tools]
    for _, text in turns:
        assert_admits(family, _constraint(family, strict, "auto"), text)


def test_the_grammar_refuses_a_call_the_choice_excludes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A named choice admits that tool's call only, and ``required`` no plain answer, through SGLang's
    compiled grammar (tags compiled one after another share its compiler cache)."""
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tokenizer = family_tokenizer("qwen3")
    other = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
    call = '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'
    sglang_grammar("qwen3", _constraint("qwen3", [WEATHER, other], "required"), reasoning=False)
    named = sglang_grammar("qwen3", _constraint("qwen3", [WEATHER, other], NAMED), reasoning=False)
    with pytest.raises(ValueError, match="Tokens not accepted"):
        for token in encode(tokenizer, call):
            named.accept_token(token)
    required = sglang_grammar("qwen3", _constraint("qwen3", [WEATHER, other], "required"), reasoning=False)
    with pytest.raises(ValueError, match="Tokens not accepted"):
        for token in encode(tokenizer, "Sunny.<|im_end|>"):
            required.accept_token(token)


def constrained_request(serving: OpenAIServingChat, prefix: str, tools: list[dict[str, Any]], tool_choice: Any, *,
                        stream: bool) -> tuple[ChatCompletionRequest, dict[str, Any], bool]:
    """A request prepared by SGLang's own ``_process_messages`` (the prompt given as ids, so no chat template
    renders it) and ``to_sampling_params``: the request, its sampling parameters and whether it reasons."""
    tokenizer = serving.tokenizer_manager.tokenizer
    request = ChatCompletionRequest(model="m", messages=[{"role": "user", "content": "hi"}], stream=stream,
                                    tools=tools, tool_choice=tool_choice, input_ids=encode(tokenizer, prefix))
    processed = serving._process_messages(request, False)
    sampling = request.to_sampling_params(stop=processed.stop, model_generation_config={},
                                          tool_call_constraint=processed.tool_call_constraint)
    adapted = types.SimpleNamespace(text=None, input_ids=request.input_ids, sampling_params=sampling)
    serving._set_response_parser_context(
        request, adapted, tool_call_constraint=processed.tool_call_constraint,
        tools=serving._effective_tools(request), template_tool_call_grammar=processed.template_tool_call_grammar,
        message_start_tool_call_constraint=processed.message_start_tool_call_constraint)
    assert request._response_parser_prefix == prefix
    return request, sampling, processed.require_reasoning


@pytest.mark.parametrize("tool_choice", ["required", NAMED], ids=["required", "named"])
def test_a_constrained_request_through_sglangs_chat_serving(tool_choice: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``required`` and named requests as SGLang serves them: the sampling parameters carry the structural
    tag, SGLang's xgrammar backend admits the model's own call and refuses a plain answer, and the call comes
    back to the client (streamed and not) read by the chatparse detector, not as a forced JSON array."""
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    tokenizer = family_tokenizer("qwen3")
    other = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
    output = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Seoul"}}\n</tool_call>'
    want = [{"name": "get_weather", "arguments": '{"city": "Seoul"}'}]
    for stream in (False, True):
        serving = serving_chat(tokenizer)
        request, sampling, reasons = constrained_request(serving, QWEN_HEADER, [WEATHER, other], tool_choice,
                                                         stream=stream)
        assert "json_schema" not in sampling or not sampling["json_schema"]
        constraint = ("structural_tag", StructuralTag.model_validate_json(sampling["structural_tag"]))
        grammar = sglang_grammar("qwen3", constraint, reasoning=reasons)
        for token in encode(tokenizer, output + "<|im_end|>"):
            grammar.accept_token(token)
        assert grammar.is_terminated()
        refusing = sglang_grammar("qwen3", constraint, reasoning=reasons)
        with pytest.raises(ValueError, match="Tokens not accepted"):
            for token in encode(tokenizer, "Sunny."):
                refusing.accept_token(token)
        ids = encode(tokenizer, output)
        if stream:
            groups = tokens.groupings(ids, 7)["random 1-8 #0"]
            steps = engine_steps(tokenizer, request, groups, "stop")
            serving.tokenizer_manager.steps = steps  # type: ignore[attr-defined]
            got = accumulate(asyncio.run(sse_chunks(serving, request)))
        else:
            final = engine_steps(tokenizer, request, [ids], "stop")[-1]
            choice = serving._build_chat_response(request, [final], created=0).choices[0]
            got = {"content": choice.message.content or "", "finish_reason": choice.finish_reason,
                   "calls": [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                             for c in choice.message.tool_calls or ()]}
        assert [{"name": c["name"], "arguments": c["arguments"]} for c in got["calls"]] == want, stream
        assert not got["content"], stream


def test_a_cut_call_is_left_out_with_a_line_in_the_log(monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    case = {"prefix": QWEN_HEADER, "tools": [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}} for name in "ab"],
        "output": '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b", "arguments": {"x": '}
    with caplog.at_level(logging.WARNING, logger="sglang.chatparse"):
        result = non_streaming(family_tokenizer("qwen3"), case, "length")
    assert [(c["name"], c["arguments"]) for c in result["calls"]] == [("a", "{}")]
    assert result["finish_reason"] == "length"
    dropped = [r for r in caplog.records if r.name == "sglang.chatparse" and "(truncated)" in r.getMessage()]
    assert len(dropped) == 1  # the reasoning detector parses the same text quietly


def test_held_reasoning_is_sent_whole_when_stream_reasoning_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    parser = ReasoningParser(NAME, stream_reasoning=False, prefix=QWEN_HEADER,
                             tokenizer=family_tokenizer("qwen3"))
    output = "<think>Let me see, slowly.</think>Sunny."
    steps = [parser.parse_stream_chunk(output[i:i + 3]) for i in range(0, len(output), 3)]
    reasoning = [r for r, _ in steps if r]
    assert reasoning == ["Let me see, slowly."]
    assert "".join(n or "" for _, n in steps) + (parser.parse_stream_end()[1] or "") == "Sunny."


def test_gpt_oss_call_closer_survives_sglangs_stop_trimming(monkeypatch: pytest.MonkeyPatch) -> None:
    """``<|call|>`` ends a gpt-oss generation as a stop token; SGLang's detokenizer keeps a stop token that
    closes a call of the tool parser, so the call is not read as cut."""
    monkeypatch.setenv(TEMPLATE_ENV, "gpt_oss")
    tokenizer = family_tokenizer("gpt_oss")
    (call_id,) = encode(tokenizer, "<|call|>")
    assert call_id in tool_close_token_ids(NAME, tokenizer)
    path = next(p for f, p in TOOL_CASES if f == "gpt_oss" and load_case(p)["output"].endswith("<|call|>"))
    served = served_case("gpt_oss", path)
    serving = serving_chat(tokenizer)
    request = make_request(serving, served.case, stream=False)
    ids = encode(tokenizer, served.case["output"])
    final = engine_steps(tokenizer, request, [ids], "stop", matched=call_id)[-1]
    assert final["text"] == served.case["output"]
    message = serving._build_chat_response(request, [final], created=0).choices[0].message
    assert [c.function.name for c in message.tool_calls] == [c["name"] for c in served.want["calls"]]


@pytest.mark.parametrize("stream", [False, True], ids=["non-streaming", "streaming"])
def test_a_constrained_gpt_oss_call_keeps_its_stop_token_closer(stream: bool,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a tool grammar SGLang asks the tool detector which closer a stopped output leaves open
    (``open_call_closer``) and trims a stop token that closes no call: ``<|call|>`` after a gpt-oss call
    closes it, so it stays and the call is returned."""
    monkeypatch.setenv(TEMPLATE_ENV, "gpt_oss")
    tokenizer = family_tokenizer("gpt_oss")
    (call_id,) = encode(tokenizer, "<|call|>")
    path = next(p for f, p in TOOL_CASES if f == "gpt_oss" and load_case(p)["output"].endswith("<|call|>"))
    served = served_case("gpt_oss", path)
    tools = [t for t in served.case["tools"] if t.get("type", "function") == "function"]
    serving = serving_chat(tokenizer)
    request, _, _ = constrained_request(serving, served.case["prefix"], tools, "required", stream=stream)
    ids = encode(tokenizer, served.case["output"])
    if stream:
        serving.tokenizer_manager.steps = engine_steps(  # type: ignore[attr-defined]
            tokenizer, request, tokens.groupings(ids, 3)["random 1-8 #0"], "stop", matched=call_id)
        calls = accumulate(asyncio.run(sse_chunks(serving, request)))["calls"]
    else:
        final = engine_steps(tokenizer, request, [ids], "stop", matched=call_id)[-1]
        message = serving._build_chat_response(request, [final], created=0).choices[0].message
        calls = [{"name": c.function.name, "arguments": c.function.arguments} for c in message.tool_calls or ()]
    assert [(c["name"], c["arguments"]) for c in calls] == [(c["name"], c["arguments"]) for c in served.want["calls"]]


def test_open_call_closer_names_the_closer_a_stopped_call_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The closer whose addition completes a call: GLM 4.7's ``</tool_call>`` after a call its parser does
    not read without it; none for a Qwen3 call its parser reads whole at the end of the output."""
    monkeypatch.setenv(TEMPLATE_ENV, "glm47")
    glm = FunctionCallParser([WEATHER], NAME, tokenizer=family_tokenizer("glm47")).detector
    call = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Seoul</arg_value>"
    assert glm.open_call_closer(call) == "</tool_call>"
    assert glm.open_call_closer(call + "</tool_call>") is None
    assert glm.open_call_closer("Sunny.") is None
    monkeypatch.setenv(TEMPLATE_ENV, "qwen3")
    qwen = FunctionCallParser([WEATHER], NAME, tokenizer=family_tokenizer("qwen3"), prefix=QWEN_HEADER).detector
    assert qwen.open_call_closer('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Seoul"}}\n') is None
