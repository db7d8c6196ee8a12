"""chatparse.integrations.tokenizer_config: a template written into a tokenizer directory is what
transformers' ``AutoTokenizer.from_pretrained(...).parse_response`` then uses; reading one back; named errors
for missing files, broken JSON and a missing template; detection from a model directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chatparse.benchmark import QWEN3
from chatparse.errors import TemplateError
from chatparse.integrations.tokenizer_config import (
    MissingResponseTemplateError,
    ResponseTemplateExistsError,
    TokenizerConfigError,
    chat_template_text,
    detect_directory,
    install_response_template,
    read_response_template,
)
from chatparse.integrations.transformers import parse_response
from chatparse.templates import get_template
from tests.integrations import tokenizers as tk
from tests.tokens import template_markers

transformers = pytest.importorskip("transformers")

PROMPT = "<|im_start|>user\nWeather in Seoul?<|im_end|>\n<|im_start|>assistant\n"
OUTPUT = '<think>Call the tool.</think><tool_call>{"name": "get_weather", "arguments": {"city": "서울"}}</tool_call>' \
         "<|im_end|>"


def saved_tokenizer(directory: Path, **kwargs: Any) -> Path:
    special, tags = template_markers("qwen3")
    tk.byte_level([OUTPUT], special=special, added=tags, **kwargs).save_pretrained(directory)
    return directory


def config(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    return data


def test_an_installed_template_is_used_by_transformers(tmp_path: Path) -> None:
    directory = saved_tokenizer(tmp_path / "model")
    before = config(directory)
    path = install_response_template(directory, json.dumps(QWEN3))
    assert path == directory / "tokenizer_config.json"
    after = config(directory)
    assert after == {**before, "response_template": QWEN3}  # every other key kept
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    assert tokenizer.response_template == QWEN3
    ids = tokenizer.encode(OUTPUT, add_special_tokens=False)
    expected = {"role": "assistant", "thinking": "Call the tool.", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "서울"}}}]}
    assert tokenizer.parse_response(ids, prefix=PROMPT) == expected
    assert parse_response(ids, tokenizer=tokenizer, prefix=PROMPT) == expected


def test_a_builtin_installs_and_reads_back(tmp_path: Path) -> None:
    directory = saved_tokenizer(tmp_path)
    install_response_template(directory, "qwen3")
    assert read_response_template(directory) == get_template("qwen3")
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    ids = tokenizer.encode(OUTPUT, add_special_tokens=False)
    message = parse_response(ids, tokenizer=tokenizer, prefix=PROMPT)
    assert message["tool_calls"][0]["function"]["arguments"] == {"city": "서울"}


def test_installing_twice_is_a_no_op_and_a_different_template_needs_force(tmp_path: Path) -> None:
    directory = saved_tokenizer(tmp_path)
    install_response_template(directory, "qwen3")
    stamp = (directory / "tokenizer_config.json").stat().st_mtime_ns
    install_response_template(directory / "tokenizer_config.json", "qwen3")
    assert (directory / "tokenizer_config.json").stat().st_mtime_ns == stamp
    with pytest.raises(ResponseTemplateExistsError) as info:
        install_response_template(directory, QWEN3)
    assert info.value.code == "response_template_exists" and "force" in str(info.value)
    install_response_template(directory, QWEN3, force=True)
    assert read_response_template(directory) == QWEN3
    assert sorted(p.name for p in directory.iterdir() if p.name.startswith(".")) == []  # no temporary left


def test_an_invalid_template_is_refused_before_writing(tmp_path: Path) -> None:
    directory = saved_tokenizer(tmp_path)
    before = (directory / "tokenizer_config.json").read_text(encoding="utf-8")
    with pytest.raises(TemplateError) as info:
        install_response_template(directory, {"fields": {"content": {"bogus": 1}}, "start_anchor": "x"})
    assert info.value.code == "unknown_key"
    assert (directory / "tokenizer_config.json").read_text(encoding="utf-8") == before


def test_a_config_without_a_template_says_what_to_do(tmp_path: Path) -> None:
    directory = saved_tokenizer(tmp_path / "Qwen3-8B")
    for target in (directory, directory / "tokenizer_config.json"):
        with pytest.raises(MissingResponseTemplateError) as info:
            read_response_template(target)
        error = info.value
        assert error.code == "no_response_template" and error.key == "response_template"
        assert error.details["suggestion"] == "qwen3"
        assert str(error).startswith("expected a response template, found none:")
        assert "`chatparse templates install qwen3 MODEL_DIR`" in str(error)


@pytest.mark.parametrize(("content", "code"), [
    (None, "no_tokenizer_config"), ("{not json", "bad_tokenizer_config"), ("[1]", "bad_tokenizer_config"),
    ('{"response_template": "qwen3"}', "bad_tokenizer_config"),
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "bad_tokenizer_config"), (b"\xff\xfe{}", "bad_tokenizer_config"),
])
def test_broken_configs_are_named(tmp_path: Path, content: str | bytes | None, code: str) -> None:
    if isinstance(content, bytes):
        (tmp_path / "tokenizer_config.json").write_bytes(content)
    elif content is not None:
        (tmp_path / "tokenizer_config.json").write_text(content, encoding="utf-8")
    with pytest.raises(TokenizerConfigError) as info:
        read_response_template(tmp_path)
    assert info.value.code == code
    with pytest.raises(TokenizerConfigError):
        read_response_template(tmp_path / "missing" / "tokenizer_config.json")


def test_detect_a_model_directory(tmp_path: Path) -> None:
    directory = saved_tokenizer(tmp_path / "checkpoint-500")
    assert detect_directory(directory) is None
    (directory / "config.json").write_text(json.dumps({"model_type": "qwen3"}), encoding="utf-8")
    assert detect_directory(directory) == "qwen3"
    named = saved_tokenizer(tmp_path / "gpt-oss-20b")
    assert detect_directory(named / "tokenizer_config.json") == "gpt_oss"


def test_chat_template_forms() -> None:
    assert chat_template_text("x") == "x"
    assert chat_template_text({"default": "a", "tool_use": "b"}) == "a\nb"
    assert chat_template_text([{"name": "default", "template": "a"}, {"name": "rag"}]) == "a"
    assert chat_template_text(None) is None and chat_template_text([]) is None
