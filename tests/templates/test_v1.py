"""The v1 (transformers) form of the built-ins: ``get_template(name, v1=True)`` and ``templates install --v1``
write what transformers' own ``tokenizer.parse_response`` accepts. For every built-in v1 can express, a real
tokenizer (built locally, no hub) with the v1 form installed parses every corpus output of its family on
token ids and on text, exactly as chatparse parses the same v1 form; on clean outputs that is the built-in's
own message. Every other built-in is refused with the reason."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.cli.main import main
from chatparse.integrations.tokenizer_config import install_response_template
from chatparse.templates import NotV1Error, get_template, list_templates, v1_form
from chatparse.templates.registry import normalize_name
from tests.templates.corpus_loader import corpus_cases, load_case

transformers = pytest.importorskip("transformers")
from tests.integrations import tokenizers as tk  # noqa: E402  (needs transformers)


def _expressible() -> list[str]:
    names = []
    for name in list_templates():
        try:
            v1_form(name)
        except NotV1Error:
            continue
        names.append(name)
    return names


V1_NAMES = _expressible()
REFUSED = [n for n in list_templates() if n not in V1_NAMES]


def _outcome(parse: Any) -> Any:
    """A parse's message, or that it failed (the two libraries word their errors differently)."""
    try:
        return parse()
    except (ValueError, KeyError):
        return "failed"


def _tokenizer_with(tmp_path: Path, name: str) -> Any:
    directory = tmp_path / name
    tk.family_tokenizer(normalize_name(name)).save_pretrained(directory)
    install_response_template(directory, get_template(name, v1=True))
    return transformers.AutoTokenizer.from_pretrained(directory)


def test_the_split_is_what_v1_can_say() -> None:
    """Calls as JSON objects (one per region) or as parameters each closed by a fixed tag; the rest need
    chatparse's parsers or its end-of-value rule."""
    # hermes, glm45 and glm47 read spellings v1 cannot say (bare JSON objects that need the request's tools,
    # GLM's dropped-tag repairs): their v1 form is refused with the reason.
    assert V1_NAMES == ["deepseek_r1", "deepseek_v3", "deepseek_v3.1", "ernie45", "functionary_v3_1", "gemma2", "gpt_oss",
                        "inkling", "kimi_k2", "ling3", "llm_jp_4.1", "longcat", "mimo", "minimax_m2", "plamo3",
                        "poolside_v1", "qwen3", "qwen3.5", "qwen3_coder", "qwen3_thinking_2507", "seed_oss", "smollm3",
                        "step3"]


@pytest.mark.parametrize("name", V1_NAMES)
def test_transformers_parse_response_reads_the_v1_form_on_ids_and_text(tmp_path: Path, name: str) -> None:
    tokenizer = _tokenizer_with(tmp_path, name)
    v1 = get_template(name, v1=True)
    assert tokenizer.response_template == v1
    cases = [load_case(path) for family, path in corpus_cases() if family == normalize_name(name)]
    exact = 0
    for case in cases:
        output, prefix, tools = case["output"], case["prefix"], case.get("tools")
        ids = tk.encode(tokenizer, output)
        on_ids = _outcome(lambda: tokenizer.parse_response(ids, prefix=prefix, tools=tools))  # noqa: B023
        on_text = _outcome(lambda: tokenizer.parse_response(output, prefix=prefix, tools=tools))  # noqa: B023
        ours = _outcome(lambda: chatparse.parse_response(output, v1, prefix=prefix, tools=tools))  # noqa: B023
        assert on_ids == on_text == ours, case["description"]
        exact += on_ids == case["expected"]
    # The corpus is mostly hard cases (cuts, markers inside strings): some parse differently in v1, as
    # v1_form(name).losses says; the clean ones give the built-in's own message.
    assert exact >= 1, f"{exact} of {len(cases)} corpus cases parse as the built-in does"


@pytest.mark.parametrize(("name", "call"), [
    ("qwen3", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "서울"}}\n</tool_call>'),
    ("qwen3.5", "<tool_call>\n<function=get_weather>\n<parameter=city>\n서울\n</parameter>\n</function>\n</tool_call>"),
], ids=["json-calls", "xml-params"])
def test_a_clean_turn_parses_as_the_builtin_does_through_transformers(tmp_path: Path, name: str, call: str) -> None:
    tokenizer = _tokenizer_with(tmp_path, name)
    prefix = "<|im_start|>user\nWeather in Seoul?<|im_end|>\n<|im_start|>assistant\n<think>\n"
    output = f"Call the tool.\n</think>\n\nChecking.\n{call}<|im_end|>"
    expected = chatparse.parse_response(output, name, prefix=prefix)
    assert expected["tool_calls"][0]["function"]["arguments"] == {"city": "서울"}
    assert tokenizer.parse_response(tk.encode(tokenizer, output), prefix=prefix) == expected
    assert tokenizer.parse_response(output, prefix=prefix) == expected


@pytest.mark.parametrize("name", V1_NAMES)
def test_the_v1_form_says_what_it_loses(name: str) -> None:
    form = v1_form(name)
    assert "chatparse" not in json.dumps(form.template)
    assert form.losses and all(isinstance(loss, str) and loss for loss in form.losses)
    assert any("end-of-turn markers" in loss for loss in form.losses)
    assert get_template(name, v1=True) == form.template and get_template(name, v1=True) is not form.template


@pytest.mark.parametrize("name", REFUSED)
def test_a_builtin_v1_cannot_express_is_refused_with_the_reason(name: str) -> None:
    with pytest.raises(NotV1Error) as caught:
        get_template(name, v1=True)
    error = caught.value
    assert error.code == "not_v1_expressible" and error.field
    assert str(error).startswith(f"the built-in {name!r} cannot be written as a v1 template: field '{error.field}'")
    assert "Use the built-in with chatparse" in str(error)


def test_install_v1_with_the_console_script(tmp_path: Path) -> None:
    """The user's path: `chatparse templates install --v1 qwen3 DIR`, then AutoTokenizer reads it."""
    directory = tmp_path / "Qwen3-8B"
    tk.family_tokenizer("qwen3").save_pretrained(directory)
    script = shutil.which("chatparse", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "chatparse"]
    env = {**os.environ, "TRANSFORMERS_VERBOSITY": "error"}
    result = subprocess.run([*command, "templates", "install", "--v1", "qwen3", str(directory)], capture_output=True,
                            text=True, timeout=120, check=False, env=env)
    assert result.returncode == 0, result.stderr
    assert "wrote the v1 (transformers) form of 'qwen3'" in result.stdout
    assert all(f"  - {loss}" in result.stdout for loss in v1_form("qwen3").losses)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    assert tokenizer.parse_response("Hello!<|im_end|>", prefix="<|im_start|>assistant\n") == {
        "role": "assistant", "content": "Hello!"}


def test_install_v1_of_a_builtin_v1_cannot_express_leaves_the_config_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tk.family_tokenizer("qwen3").save_pretrained(tmp_path)
    config = tmp_path / "tokenizer_config.json"
    before = hashlib.sha256(config.read_bytes()).hexdigest()
    assert main(["templates", "install", "--v1", "lfm2", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "error [not_v1_expressible] (field=tool_calls, key=content)" in err and "'python-calls'" in err
    assert hashlib.sha256(config.read_bytes()).hexdigest() == before


def test_show_v1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["templates", "show", "--v1", "qwen3"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["template"] == get_template("qwen3", v1=True)
    assert shown["v1_losses"] == list(v1_form("qwen3").losses)
