"""Detection on real chat templates (tests/templates/chat_templates/*.jinja, copied unchanged from llama.cpp's
models/templates at commit 0c1e57098bba, as vendored by the llama-cpp-python 0.3.36 sdist): each is detected
as the built-in that parses back what the template renders (rendered with its own Jinja by transformers'
renderer, full prompt as prefix), or as none when no built-in fits, and the CLI then points to
``chatparse templates synthesize``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chatparse.cli.main import main
from chatparse.integrations.tokenizer_config import detect_directory
from chatparse.templates import detect_template
from tests.templates.chat_template_roundtrip import TURNS, round_trip

CHAT_TEMPLATES = Path(__file__).parent / "chat_templates"
LLAMA3 = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
ALL_TURNS = tuple(TURNS)


# file stem: (family or None, render kwargs, the turns it renders (others it leaves out or refuses), options)
CASES: dict[str, tuple[str | None, dict[str, Any], tuple[str, ...], dict[str, Any]]] = {
    # detected before this change, parsed their own renders wrong: a thinking-off prompt pre-writes an
    # empty reasoning block and the rendered turn holds one more (the empty one added a leading newline)
    "Qwen-Qwen3-0.6B": ("qwen3", {"enable_thinking": False}, ALL_TURNS, {}),
    "GLM-4.6": ("glm45", {"enable_thinking": False}, ALL_TURNS, {}),
    "inclusionai-ling-3.0-flash": ("ling3", {"enable_thinking": False}, ALL_TURNS, {}),
    "tencent-Hy3": ("hunyuan_hy3", {}, ALL_TURNS, {}),
    # not detected before this change
    "LFM2.5-8B-A1B": ("lfm2", {"bos_token": "<|startoftext|>"}, ALL_TURNS, {}),
    "LFM2.5-Instruct": ("lfm2", {"bos_token": "<|startoftext|>"}, ("content",), {}),  # renders no calls
    "google-gemma-2-2b-it": ("gemma2", {"bos_token": "<bos>"}, ("content",), {"system": False}),
    "meetkai-functionary-medium-v3.2": ("functionary_v3_2", LLAMA3, ALL_TURNS, {"string_arguments": True}),
    "meta-llama-Llama-3.2-3B-Instruct": ("llama3_json", {**LLAMA3, "date_string": "26 Jul 2024"},
                                         ("content", "reasoning", "one_call"), {}),  # refuses parallel calls
    "microsoft-Phi-3.5-mini-instruct": ("phi4_mini", {"eos_token": "<|endoftext|>"}, ("content",), {}),
    "unsloth-Apriel-1.5": ("apriel", {"bos_token": "<s>", "eos_token": "</s>"}, ALL_TURNS, {}),
    "Apriel-1.6-15b-Thinker-fixed": ("apriel", {"bos_token": "<s>", "eos_token": "</s>"}, ("reasoning",),
                                     {"reasoning_prefix": "Here are my reasoning steps:\n"}),
    "fireworks-ai-llama-3-firefunction-v2": ("firefunction_v2", {**LLAMA3, "functions": "[]", "datetime": "2025-01-01"},
                                             ALL_TURNS, {}),
    "CohereForAI-c4ai-command-r-plus-tool_use": ("command_r_plus", {"bos_token": "<BOS_TOKEN>"}, ALL_TURNS, {}),
    # no built-in fits: plain-text roles (RWKV), '<sep>'-ended Hermes turns (Reka Edge), Solar Open's and
    # Spark 2.5's own call tokens
    "llama-cpp-rwkv-world": (None, {}, (), {}),
    "Reka-Edge": (None, {}, (), {}),
    "upstage-Solar-Open-100B": (None, {}, (), {}),
    "Spark2.5": (None, {}, (), {}),
}


def _source(stem: str) -> str:
    return (CHAT_TEMPLATES / f"{stem}.jinja").read_text(encoding="utf-8")


def test_every_fixture_has_a_case() -> None:
    assert {p.stem for p in CHAT_TEMPLATES.glob("*.jinja")} == set(CASES)


@pytest.mark.parametrize("stem", CASES)
def test_the_real_template_is_detected(stem: str) -> None:
    assert detect_template(chat_template=_source(stem)) == CASES[stem][0]


ROUND_TRIPS = [(stem, turn) for stem, (family, _, turns, _) in CASES.items() if family for turn in turns]


@pytest.mark.parametrize(("stem", "turn"), ROUND_TRIPS, ids=[f"{s}/{t}" for s, t in ROUND_TRIPS])
def test_the_detected_built_in_parses_back_what_the_template_renders(stem: str, turn: str) -> None:
    pytest.importorskip("transformers")
    family, kwargs, _, options = CASES[stem]
    assert family is not None
    result = round_trip(family, _source(stem), turn, kwargs, **options)
    assert result is not None, "the rendering is no generation from its own prompt"
    parsed, expected, output = result
    assert len(expected) > 1, f"the template wrote nothing of the turn: {output!r}"
    assert parsed == expected, output


def test_a_tokenizer_config_is_detected_from_its_chat_template(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": _source("google-gemma-2-2b-it")}))
    assert detect_directory(tmp_path) == "gemma2"
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": [
        {"name": "default", "template": _source("LFM2.5-Instruct")}]}))
    assert detect_directory(tmp_path) == "lfm2"


def test_when_no_built_in_fits_the_cli_points_to_synthesize(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "chat_template.jinja").write_text(_source("llama-cpp-rwkv-world"), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text("{}")
    assert main(["detect", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "no built-in template fits" in err and f"chatparse templates synthesize {tmp_path}" in err
    assert main(["templates", "install", "auto", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "no built-in template fits" in err and f"chatparse templates synthesize {tmp_path}" in err
