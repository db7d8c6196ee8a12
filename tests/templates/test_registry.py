"""The built-in template registry: names and aliases, fresh copies, metadata, conventions, detection."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest

import chatparse
from chatparse.content.registry import get_content_parser
from chatparse.errors import ChatparseError, TemplateError
from chatparse.templates import (
    UnknownTemplateError,
    detect_template,
    get_template,
    list_templates,
    template_info,
)
from chatparse.templates.registry import _check_record, normalize_name
from tests.templates.corpus_loader import CORPUS

PART_A = [
    "hermes", "qwen3", "qwen3_thinking_2507", "qwen3_coder", "qwen3.5", "deepseek_r1", "deepseek_v3",
    "deepseek_v3.1", "deepseek_v3.2", "llama3_json", "llama4_pythonic", "mistral_v3", "mistral_v11", "kimi_k2",
    "glm45", "glm47", "granite", "granite_20b_fc", "internlm2", "jamba",
]  # fmt: skip
NAMES = list_templates()
CONTENT_ONLY = {"gemma2"}  # chat templates with no tool calls at all: the whole turn is the content
METADATA_KEYS = {
    "name",
    "models",
    "model_types",
    "sources",
    "prefill",
    "chatparse_only",
    "extensions",
    "notes",
}


def extension_keys_used(template: dict[str, Any]) -> set[str]:
    """The chatparse extension keys a template uses, as ``chatparse.<key>``."""
    keys = set(template.get("chatparse", {}))
    for field in template["fields"].values():
        keys.update(field.get("chatparse", {}))
    return {f"chatparse.{key}" for key in keys}


def parsers_used(template: dict[str, Any]) -> set[str]:
    """Every content parser a template names, nested value parsers included."""
    used: set[str] = set()
    for field in template["fields"].values():
        used.add(field.get("content", "text"))
        args = field.get("content_args", {})
        nested = [
            args.get("value_parser"),
            args.get("default_parser"),
            *args.get("value_parsers", {}).values(),
        ]
        used.update(spec.get("name", "text") for spec in nested if isinstance(spec, dict))
    return used


def test_lists_every_part_a_family_once_sorted() -> None:
    assert set(PART_A) <= set(NAMES)
    assert NAMES == sorted(set(NAMES))


@pytest.mark.parametrize("name", NAMES)
def test_template_compiles_and_follows_the_conventions(name: str) -> None:
    template = get_template(name)
    compiled = chatparse.load_template(template)
    assert template["defaults"] == {"role": "assistant"}
    assert set(template["fields"]) <= {"thinking", "content", "tool_calls", "citations"}  # citations: Cohere grounding
    assert "tool_calls" in template["fields"] or name in CONTENT_ONLY
    assert compiled.implicit in (None, "content")  # gpt-oss has an explicit final channel


@pytest.mark.parametrize("name", NAMES)
def test_metadata(name: str) -> None:
    info = template_info(name)
    assert METADATA_KEYS <= set(info) and "template" not in info
    assert info["name"] == name
    assert all(isinstance(x, str) and x for x in info["models"] + info["sources"] + info["model_types"])
    assert info["models"] and info["sources"] and info["notes"].strip()
    assert isinstance(info["prefill"], str)  # "" when the chat template pre-writes nothing
    assert info["chatparse_only"] is bool(info["extensions"])
    for extension in info["extensions"]:
        if not extension.startswith("chatparse."):
            assert not get_content_parser(extension).compatible, f"{extension} exists in transformers too"


@pytest.mark.parametrize("name", NAMES)
def test_extensions_list_exactly_the_non_transformers_parsers_and_keys(name: str) -> None:
    template = get_template(name)
    foreign = {p for p in parsers_used(template) if not get_content_parser(p).compatible}
    assert foreign | extension_keys_used(template) == set(template_info(name)["extensions"])


@pytest.mark.parametrize("name", NAMES)
def test_every_family_has_a_corpus_of_at_least_four_cases(name: str) -> None:
    cases = sorted((CORPUS / normalize_name(name)).glob("*.json"))
    assert len(cases) >= 4, f"{name}: {len(cases)} corpus cases"


def test_get_template_returns_a_fresh_copy() -> None:
    first = get_template("hermes")
    original = first["fields"]["tool_calls"]["content"]
    first["fields"]["tool_calls"]["content"] = "text"
    first["defaults"]["role"] = "user"
    again = get_template("hermes")
    assert again["fields"]["tool_calls"]["content"] == original != "text"
    assert again["defaults"] == {"role": "assistant"}
    template_info("hermes")["models"].clear()
    assert template_info("hermes")["models"]


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("qwen3_5", "qwen3.5"),
        ("Qwen3.5", "qwen3.5"),
        ("deepseek_v3_1", "deepseek_v3.1"),
        ("DEEPSEEK_V3.2", "deepseek_v3.2"),
    ],
)
def test_dotted_names_accept_underscores(alias: str, name: str) -> None:
    assert get_template(alias) == get_template(name)
    assert template_info(alias)["name"] == name


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownTemplateError) as caught:
        get_template("gpt-7")
    error = caught.value
    assert error.code == "unknown_template"
    assert isinstance(error, ChatparseError) and isinstance(error, KeyError)
    assert "'gpt-7'" in str(error) and "hermes" in str(error) and "qwen3.5" in str(error)
    with pytest.raises(UnknownTemplateError):
        template_info("")


def test_data_files_are_package_data() -> None:
    data = resources.files("chatparse.templates").joinpath("data")
    names = {entry.name for entry in data.iterdir() if entry.name.endswith(".json")}
    assert {normalize_name(name) + ".json" for name in NAMES} == names


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ([], "expected a JSON object"),
        ({"name": "x"}, "missing the key 'template'"),
        (
            {**template_info("hermes"), "template": {}, "chatparse_only": "no"},
            "'chatparse_only' must be bool",
        ),
        ({**template_info("hermes"), "template": {}, "extra": 1}, r"unknown keys \['extra'\]"),
    ],
)
def test_malformed_data_files_are_rejected(record: Any, problem: str) -> None:
    with pytest.raises(TemplateError, match=problem) as caught:
        _check_record("x.json", record)
    assert caught.value.code == "invalid_builtin_template"


# --- detection ----------------------------------------------------------------------------------------

QWEN3_JINJA = (
    "{%- if tools %}<tools></tools> <tool_call>{%- endif %}{{- '<|im_start|>' + message.role }}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif %}{%- endif %}"
)
QWEN3_2507_JINJA = "<tool_call>{{- '<|im_start|>' }}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}"
QWEN3_CODER_JINJA = (
    "{{- '<|im_start|>' }}<tool_call>\\n<function=example>\\n<parameter=example_parameter_1>\\nvalue"
)
QWEN35_JINJA = QWEN3_CODER_JINJA + "{{- '<|im_start|>assistant\\n<think>\\n' }}"
HERMES_JINJA = "{{- '<|im_start|>' + message.role }}<tool_call>\\n{\"name\": <function-name>}\\n</tool_call>"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"model_id": "Qwen/Qwen3-8B"}, "qwen3"),
        ({"model_id": "Qwen/Qwen3-30B-A3B-Thinking-2507-FP8"}, "qwen3_thinking_2507"),
        ({"model_id": "Qwen/QwQ-32B"}, "qwen3_thinking_2507"),
        ({"model_id": "Qwen/Qwen3-Coder-30B-A3B-Instruct"}, "qwen3_coder"),
        ({"model_id": "Qwen/Qwen3.5-27B"}, "qwen3.5"),
        ({"model_id": "Qwen/Qwen2.5-7B-Instruct"}, "hermes"),
        ({"model_id": "NousResearch/Hermes-3-Llama-3.1-8B"}, "hermes"),
        ({"model_id": "deepseek-ai/DeepSeek-R1-0528"}, "deepseek_r1"),
        ({"model_id": "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"}, "deepseek_r1"),
        ({"model_id": "deepseek-ai/DeepSeek-V3-0324"}, "deepseek_v3"),
        ({"model_id": "deepseek-ai/DeepSeek-V3.1-Terminus"}, "deepseek_v3.1"),
        ({"model_id": "deepseek-ai/DeepSeek-V3.2-Exp"}, "deepseek_v3.2"),
        ({"model_id": "meta-llama/Llama-3.1-8B-Instruct"}, "llama3_json"),
        ({"model_id": "meta-llama/Llama-4-Scout-17B-16E-Instruct"}, "llama4_pythonic"),
        ({"model_id": "mistralai/Mistral-7B-Instruct-v0.3"}, "mistral_v3"),
        ({"model_id": "mistralai/Mistral-Small-3.2-24B-Instruct-2506"}, "mistral_v11"),
        ({"model_id": "moonshotai/Kimi-K2-Thinking"}, "kimi_k2"),
        ({"model_id": "zai-org/GLM-4.5-Air"}, "glm45"),
        ({"model_id": "zai-org/GLM-4.7"}, "glm47"),
        ({"model_id": "ibm-granite/granite-3.2-8b-instruct"}, "granite"),
        ({"model_id": "ibm-granite/granite-20b-functioncalling"}, "granite_20b_fc"),
        ({"model_id": "internlm/internlm2_5-7b-chat"}, "internlm2"),
        ({"model_id": "ai21labs/AI21-Jamba-1.5-Mini"}, "jamba"),
        ({"model_type": "qwen3_moe"}, "qwen3"),
        ({"model_type": "qwen2"}, "hermes"),
        ({"model_type": "deepseek_v32"}, "deepseek_v3.2"),
        ({"model_type": "llama4"}, "llama4_pythonic"),
        ({"model_type": "mistral3"}, "mistral_v11"),
        ({"model_type": "glm4_moe"}, "glm45"),
        ({"model_type": "JAMBA"}, "jamba"),
        ({"chat_template": QWEN3_JINJA}, "qwen3"),
        ({"chat_template": QWEN3_2507_JINJA}, "qwen3_thinking_2507"),
        ({"chat_template": QWEN3_CODER_JINJA}, "qwen3_coder"),
        ({"chat_template": QWEN35_JINJA}, "qwen3.5"),
        ({"chat_template": HERMES_JINJA}, "hermes"),
        (
            {"chat_template": "{{ '<｜Assistant｜>' }}<｜tool▁calls▁begin｜>｜DSML｜function_calls"},
            "deepseek_v3.2",
        ),
        ({"chat_template": "[TOOL_CALLS]{{ name }}[ARGS]{{ arguments }}"}, "mistral_v11"),
        ({"chat_template": "<|im_assistant|>assistant<|im_middle|><|tool_calls_section_begin|>"}, "kimi_k2"),
        ({"chat_template": "[gMASK]<sop><|assistant|><think><tool_call>{{ name }}<arg_key>"}, "glm47"),
        ({"chat_template": "<|im_start|>assistant\\n<|action_start|><|plugin|>"}, "internlm2"),
        # DeepSeek V4 writes DSML '<｜DSML｜tool_calls>' blocks, not V3.2's 'function_calls': never deepseek_v3.2
        ({"chat_template": "{{ '<｜Assistant｜>' }}<{{ dsml }}tool_calls>\n<{{ dsml }}invoke name=\"x\">｜DSML｜"},
         "deepseek_v4"),
        ({"chat_template": "<|assistant|>{{- '</think>' if not enable_thinking else '<think>' -}}<arg_key>{{ k }}"
                           "</arg_key><arg_value>"}, "glm47"),  # GLM-4.7-Flash
        ({"chat_template": "<|assistant|>{{- '\\n<think></think>' if not enable_thinking else '' -}}<arg_key>"
                           "{{ k }}</arg_key>\n"}, "glm45"),  # GLM-4.6
        # the chat template is the strongest clue, then the model id, then model_type
        (
            {"model_id": "Qwen/Qwen3-8B", "model_type": "qwen2", "chat_template": QWEN3_CODER_JINJA},
            "qwen3_coder",
        ),
        ({"model_id": "my-org/finetune", "model_type": "qwen3"}, "qwen3"),
        ({"model_id": "Qwen/Qwen3-4B-Thinking-2507", "model_type": "qwen3"}, "qwen3_thinking_2507"),
    ],
)
def test_detect_template(kwargs: dict[str, str], expected: str) -> None:
    assert detect_template(**kwargs) == expected


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"model_id": "my-org/unknown-model"}, {"model_type": "bert"}, {"chat_template": "{{ messages }}"},
    ],
)
def test_detect_template_without_a_match(kwargs: dict[str, str]) -> None:
    assert detect_template(**kwargs) is None


@pytest.mark.parametrize("name", NAMES)
def test_each_family_detects_itself_by_its_own_patterns(name: str) -> None:
    info = template_info(name)
    for model_type in info["model_types"]:
        assert detect_template(model_type=model_type) == name
    for pattern in info.get("detect", {}).get("model_id", []):
        model_id = pattern.replace("*", "x")
        assert detect_template(model_id=model_id) == name, model_id
