"""``chatparse grammar``: the grammar on stdout (or as JSON), errors as one line with a code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatparse.cli.main import main
from tests.grammar.walk import accepts

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture
def tools_file(tmp_path: Path) -> str:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    return str(path)


def test_prints_the_lark_grammar(tools_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grammar", "-t", "qwen3_coder", "--tools", tools_file, "--tool-choice", "required"]) == 0
    lark = capsys.readouterr().out
    call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nSeoul\n</parameter>\n</function>\n</tool_call>"
    assert accepts(lark, call)[0] and not accepts(lark, "Hello")[0]


def test_json_output_and_options(tools_file: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("<|im_start|>assistant\n<think>\n")
    assert main(["grammar", "-t", "qwen3", "--tools", tools_file, "--tool-choice", "get_weather", "--no-parallel",
                 "--prefix", f"@{prompt}", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tool_choice"] == "get_weather" and out["reasoning"] == "open" and not out["parallel_tool_calls"]
    assert out["grammar"].startswith("%llguidance")


def test_prints_the_structural_tag(tools_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grammar", "-t", "qwen3", "--tools", tools_file, "--tool-choice", "required", "--special-token",
                 "<|im_end|>", "--format", "structural-tag"]) == 0
    tag = json.loads(capsys.readouterr().out)
    assert tag["type"] == "structural_tag"
    assert '{"type": "optional", "content": {"type": "const_string", "value": "<|im_end|>"}}' in json.dumps(tag)
    assert main(["grammar", "-t", "qwen3", "--tools", tools_file, "--format", "structural-tag", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "structural-tag" and out["grammar"]["format"]["type"] == "grammar"


def test_errors_are_one_line_with_a_code(tools_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grammar", "-t", "qwen3", "--tools", tools_file, "--tool-choice", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chatparse grammar: error [unknown_tool]") and err.count("\n") == 1
    assert main(["grammar", "-t", "qwen3", "--tools", "missing.json"]) == 2
    assert "[file_not_found]" in capsys.readouterr().err


def test_lenient_lists_what_it_left_free(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}}}]))
    assert main(["grammar", "-t", "qwen3", "--tools", str(path)]) == 2
    assert "[unsupported_schema]" in capsys.readouterr().err
    assert main(["grammar", "-t", "qwen3", "--tools", str(path), "--lenient"]) == 0
    assert "minimum" in capsys.readouterr().err


def test_prints_the_gbnf_grammar(tools_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.grammar.gbnf_lark import gbnf_to_lark

    assert main(["grammar", "-t", "qwen3_coder", "--tools", tools_file, "--tool-choice", "required",
                 "--format", "gbnf"]) == 0
    gbnf = capsys.readouterr().out
    assert gbnf.startswith("root ::= ")
    call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nSeoul\n</parameter>\n</function>\n</tool_call>"
    lark = gbnf_to_lark(gbnf)
    assert accepts(lark, call)[0] and not accepts(lark, "Hello")[0]
    # GBNF names a special token by its text only when it is spelled <...>
    assert main(["grammar", "-t", "minimax_m2", "--tools", tools_file, "--special-token", "[e~[",
                 "--format", "gbnf"]) == 2
    assert "[special_token]" in capsys.readouterr().err
