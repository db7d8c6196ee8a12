"""Compiled templates, parsers and chat-completion streams pickle: ``copy.deepcopy``, ``multiprocessing``
and Ray hand them between processes. A template is pickled as its source and compiled again on load; a
parser or stream mid-generation keeps its stream state, so the copy goes on exactly as the original."""

from __future__ import annotations

import copy
import json
import multiprocessing
import pickle
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.templates import list_templates
from tests.templates.corpus_loader import corpus_cases, load_case

CASES = corpus_cases()
FAMILIES = sorted({family for family, _ in CASES})
# One case of every family for parsers, another for streams, and a third for both in the families whose
# cases are most varied (the corpus has about a thousand).
VARIED = {"gpt_oss", "qwen3_coder", "qwen3_5", "hermes", "kimi_k2", "deepseek_v3_1", "minimax_m2"}
PARSER_CASES = [c for f in FAMILIES for c in [c for c in CASES if c[0] == f][0::5][: 2 if f in VARIED else 1]]
STREAM_CASES = [c for f in FAMILIES for c in [c for c in CASES if c[0] == f][2::5][: 2 if f in VARIED else 1]]


def template_name(family: str) -> str:
    return next(name for name in list_templates() if name.replace(".", "_") == family)


def call_id(index: int) -> str:
    """Deterministic call ids (a module-level function pickles; a lambda would not)."""
    return f"call_{index}"


def cuts(text: str) -> list[int]:
    """Where a generation is handed on: before the first token, inside it, and at a few places after."""
    return sorted({0, 1, len(text) // 3, (2 * len(text)) // 3, len(text)})


def tokens(text: str, start: int = 0, end: int | None = None, size: int = 4) -> list[str]:
    end = len(text) if end is None else end
    return [text[i : min(i + size, end)] for i in range(start, end, size)]


@pytest.mark.parametrize("name", list_templates())
def test_every_builtin_template_pickles_and_deep_copies(name: str) -> None:
    """The copy is the template compiled again from its source: the same source, fields and parses."""
    template = chatparse.load_template(name)
    family = name.replace(".", "_")
    cases = [load_case(path) for fam, path in CASES if fam == family][:2]
    for copied in (pickle.loads(pickle.dumps(template)), copy.deepcopy(template)):
        assert isinstance(copied, chatparse.CompiledTemplate)
        assert copied.to_dict() == template.to_dict()
        assert list(copied.fields) == list(template.fields)
        for case in cases:
            options = {"tools": case.get("tools"), **case.get("options", {})}
            assert chatparse.parse_response(case["output"], copied, prefix=case["prefix"], **options) == \
                chatparse.parse_response(case["output"], template, prefix=case["prefix"], **options)


def _rest_of(parser: chatparse.ResponseParser, text: str, cut: int, finish_reason: str | None = None) -> Any:
    try:
        events = [parser.feed(chunk) for chunk in tokens(text, cut)]
        return json.dumps([events, parser.finalize(finish_reason=finish_reason)], default=repr)
    except chatparse.ChatparseError as exc:
        return ("error", exc.code)


@pytest.mark.parametrize(("family", "path"), PARSER_CASES, ids=[f"{f}/{p.stem}" for f, p in PARSER_CASES])
def test_a_parser_pickled_mid_stream_goes_on_as_the_original(family: str, path: Path) -> None:
    """At several places of a corpus generation, the parser is pickled (and deep-copied); the copies and
    the original get the rest of the output and give the same events and message."""
    case = load_case(path)
    text, options = case["output"], {"tools": case.get("tools"), **case.get("options", {})}
    finish_reason = options.pop("finish_reason", None)  # a finalize argument, not a parser option
    for cut in cuts(text):
        parser = chatparse.ResponseParser(template_name(family), case["prefix"], **options)
        for chunk in tokens(text, 0, cut):
            try:
                parser.feed(chunk)
            except chatparse.ChatparseError:
                break
        copies = [pickle.loads(pickle.dumps(parser)), copy.deepcopy(parser)]
        original = _rest_of(parser, text, cut, finish_reason)
        assert [_rest_of(c, text, cut, finish_reason) for c in copies] == [original, original], f"cut at {cut}"


def _stream_rest(stream: chatparse.ChatCompletionStream, text: str, cut: int) -> Any:
    try:
        chunks = [stream.feed(chunk) for chunk in tokens(text, cut)] + [stream.finish()]
        return json.dumps([chunks, stream.message, stream.mismatches], default=repr)
    except chatparse.ChatparseError as exc:
        return ("error", exc.code)


@pytest.mark.parametrize(("family", "path"), STREAM_CASES, ids=[f"{f}/{p.stem}" for f, p in STREAM_CASES])
def test_a_chat_completion_stream_pickled_mid_stream_goes_on_as_the_original(family: str, path: Path) -> None:
    """The same for ``ChatCompletionStream``, inside tool calls too (its argument scanners pickle)."""
    case = load_case(path)
    text = case["output"]
    for cut in cuts(text):
        stream = chatparse.ChatCompletionStream(template_name(family), case["prefix"], tools=case.get("tools"),
                                                id_factory=call_id, completion_id="chatcmpl-1", created=1)
        for chunk in tokens(text, 0, cut):
            stream.feed(chunk)
        copied = pickle.loads(pickle.dumps(stream))
        assert _stream_rest(copied, text, cut) == _stream_rest(stream, text, cut), f"cut at {cut}"


def test_a_failed_parser_stays_failed_when_pickled() -> None:
    parser = chatparse.ResponseParser("hermes", "")
    with pytest.raises(chatparse.ChatparseError):
        parser.feed('<tool_call>\n{"name": oops}\n</tool_call>\nDone.')  # text after the close decides it
    copied = pickle.loads(pickle.dumps(parser))
    with pytest.raises(chatparse.UsageError) as info:
        copied.feed("The answer is 42.")
    assert info.value.code == "parser_failed"
    assert info.value.details["first_code"] == "content_parse_failed"


def _parse_in_worker(job: tuple[Any, str, str]) -> dict[str, Any]:
    template, prefix, text = job
    assert isinstance(template, chatparse.CompiledTemplate)
    return chatparse.parse_response(text, template, prefix=prefix)


def test_a_multiprocessing_pool_maps_with_a_compiled_template() -> None:
    """The compiled template travels to the worker processes (pickled) with each job."""
    jobs = []
    for family in ("gpt_oss", "qwen3_coder", "hermes"):
        template = chatparse.load_template(template_name(family))
        for _, path in [c for c in CASES if c[0] == family][:3]:
            case = load_case(path)
            if not case.get("tools") and not case.get("options"):
                jobs.append((template, case["prefix"], case["output"]))
    expected = [_parse_in_worker(job) for job in jobs]
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with context.Pool(2) as pool:
        assert pool.map(_parse_in_worker, jobs) == expected
