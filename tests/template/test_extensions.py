"""chatparse's extension keys: checked at load time, with named errors."""

from __future__ import annotations

from typing import Any

import pytest

import chatparse
from chatparse.errors import TemplateError


def template(top: dict[str, Any] | None = None, **field_ext: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "start_anchor": "A:",
        "fields": {
            "tool_calls": {"open": "<c>", "close": "</c>", "repeats": True, "content": "json"},
            "content": {"repeats": True, "join": ""},
        },
    }
    if top is not None:
        spec["chatparse"] = top
    if field_ext:
        spec["fields"]["tool_calls"]["chatparse"] = field_ext
    return spec


@pytest.mark.parametrize(("spec", "code", "key"), [
    (template({"end": []}), "bad_type", "chatparse.end"),
    (template({"end": ["<e>"], "stop": 1}), "unknown_key", "chatparse.stop"),
    (template({"discard_after_end": ["<pad>"]}), "discard_without_end", "chatparse.discard_after_end"),
    ({**template(), "chatparse": 5}, "bad_type", "chatparse"),
    (template(structure="yaml"), "bad_value", "chatparse.structure"),
    (template(structure={"spans": [["<v>"]]}), "bad_type", "chatparse.structure"),
    (template(structure={}), "empty_structure", "chatparse.structure"),
    (template(guard=True), "guard_without_structure", "chatparse.guard"),
    (template(structure={"spans": [["<v>", "</v>"]]}, ends_with_value=True), "ends_without_syntax",
     "chatparse.ends_with_value"),
    (template(truncation="yes"), "bad_type", "chatparse.truncation"),
    (template(colour=True), "unknown_key", "chatparse.colour"),
])
def test_bad_extension_keys_fail_at_load(spec: dict[str, Any], code: str, key: str) -> None:
    with pytest.raises(TemplateError) as info:
        chatparse.load_template(spec)
    assert info.value.code == code
    assert info.value.key == key


def test_extend_needs_repeats_and_strip_joined_needs_join() -> None:
    spec = template()
    spec["fields"]["tool_calls"]["repeats"] = False
    spec["fields"]["tool_calls"]["chatparse"] = {"extend": True}
    with pytest.raises(TemplateError, match="extend") as info:
        chatparse.load_template(spec)
    assert info.value.code == "extend_without_repeats"
    spec = template()
    spec["fields"]["tool_calls"]["chatparse"] = {"strip_joined": True}
    with pytest.raises(TemplateError) as info:
        chatparse.load_template(spec)
    assert info.value.code == "strip_without_join"


def test_a_template_using_them_is_chatparse_only() -> None:
    assert not chatparse.load_template(template()).chatparse_only
    assert chatparse.load_template(template({"end": "<e>"})).chatparse_only
    assert chatparse.load_template(template(truncation=True)).chatparse_only


def test_a_model_directory_without_a_response_template_says_what_to_do(tmp_path: Any) -> None:
    (tmp_path / "tokenizer_config.json").write_text('{"chat_template": "x", "eos_token": "<|im_end|>"}')
    for where in (tmp_path, tmp_path / "tokenizer_config.json"):
        with pytest.raises(TemplateError, match="chatparse templates install") as info:
            chatparse.load_template(str(where))
        assert info.value.code == "no_response_template"
    (tmp_path / "tokenizer_config.json").write_text('{"response_template": {"start_anchor": "A", "fields": {"c": {}}}}')
    assert chatparse.load_template(str(tmp_path)).implicit == "c"


def test_binary_and_deeply_nested_files_are_named_errors(tmp_path: Any) -> None:
    binary = tmp_path / "t.json"
    binary.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(TemplateError) as info:
        chatparse.load_template(str(binary))
    assert info.value.code == "bad_json"
    with pytest.raises(TemplateError) as info:
        chatparse.load_template('{"a":' * 100_000 + "1" + "}" * 100_000)
    assert info.value.code == "too_deep"
