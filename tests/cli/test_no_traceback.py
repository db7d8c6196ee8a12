"""Every command's bad-input paths through the real entry point (a subprocess): the documented exit code
(0 ok, 1 some inputs failed, 2 usage or setup error), a named error code, and never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("chatparse")
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "chatparse"]
PREFIX = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def chatparse(*args: str, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    env.pop("CHATPARSE_DEBUG", None)
    return subprocess.run([*ENTRY, *args], input=stdin, capture_output=True, cwd=cwd, env=env, timeout=120)


def expect(result: subprocess.CompletedProcess[bytes], code: int, *in_stderr: str) -> str:
    out, err = result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in out + err, err
    assert result.returncode == code, (result.returncode, err)
    for text in in_stderr:
        assert text in err, err
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("inputs")
    (d / "binary.dat").write_bytes(bytes(range(256)) * 4)
    (d / "latin1.txt").write_bytes(b"caf\xe9 au lait\n")
    (d / "deep.json").write_text("[" * 100_000, encoding="utf-8")
    (d / "deep.jsonl").write_text('{"output": ' + "[" * 100_000 + "}\n", encoding="utf-8")
    (d / "surrogate.jsonl").write_text(json.dumps({"id": "\ud800", "output": "a \ud800 b<|im_end|>", "prefix": ""})
                                       + "\n", encoding="utf-8")
    (d / "good.jsonl").write_text(json.dumps({"output": "<think>x</think>y<|im_end|>", "prefix": PREFIX}) + "\n",
                                  encoding="utf-8")
    (d / "corrupt.parquet").write_bytes(b"PAR1" + b"\x00garbage" * 10)
    (d / "typo.json").write_text(json.dumps({"start_anchor": "<a>", "fields": {"content": {
        "open": "<c>", "close": "</c>", "transform": {"x": "{contnet}"}}}}), encoding="utf-8")
    (d / "empty_anchor.json").write_text(json.dumps({"start_anchor": "", "fields": {"content": {"close": "</c>"}}}),
                                         encoding="utf-8")
    (d / "tools_obj.json").write_text('{"name": "f"}', encoding="utf-8")
    (d / "evidence.json").write_text('{"doc#1": "some text"}', encoding="utf-8")
    return d


# --- parse ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "exit_code", "error"),
    [
        (["missing.jsonl"], 2, "[file_not_found]"),
        (["."], 2, "[is_a_directory]"),
        (["binary.dat"], 2, "[binary_input]"),
        (["corrupt.parquet"], 2, "[unreadable_input]"),
        (["deep.jsonl"], 1, "too_deep 1"),
        (["latin1.txt"], 1, "invalid_utf8 1"),
        (["good.jsonl", "--tools", "missing.json"], 2, "[file_not_found]"),
        (["good.jsonl", "--tools", "binary.dat"], 2, "[invalid_utf8]"),
        (["good.jsonl", "--tools", "tools_obj.json"], 2, "[bad_tools]"),
        (["good.jsonl", "--prefix", "@binary.dat"], 2, "[invalid_utf8]"),
        (["good.jsonl", "-j", "0"], 2, "expected a number of 1 or more"),
        (["good.jsonl", "--ray"], 2, "[bad_format]"),
        (["good.jsonl", "--output-format", "xml"], 2, "invalid choice"),
        (["good.jsonl", "-o", "no/such/dir/out.jsonl"], 2, "[unwritable_output]"),
        (["good.jsonl", "--errors", "errors.parquet"], 2, "[bad_option]"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_parse_bad_inputs(files: Path, args: list[str], exit_code: int, error: str) -> None:
    expect(chatparse("parse", "-t", "qwen3", *args, cwd=files), exit_code, error)


@pytest.mark.parametrize(
    ("template", "error"),
    [("binary.dat", "[bad_json]"), ("deep.json", "[too_deep]"), ("empty_anchor.json", "[empty_literal]"),
     ("qwen4", "Did you mean 'qwen3'"), ("nobody/no-such-model", "no built-in template is detected")],
)
def test_parse_bad_templates(files: Path, template: str, error: str) -> None:
    expect(chatparse("parse", "-t", template, "good.jsonl", cwd=files), 2, error)


def test_unknown_template_is_one_error_everywhere(files: Path) -> None:
    for args in (["parse", "-t", "qwen4", "good.jsonl"], ["stream", "-t", "qwen4", "--prefix", "", "--output", "x"],
                 ["templates", "show", "qwen4"], ["templates", "check", "qwen4"]):
        result = chatparse(*args, cwd=files)
        assert result.stdout == b""
        expect(result, 2, "error [unknown_template] (key=qwen4)", "Did you mean 'qwen3'")


@pytest.mark.parametrize("name", ["Qwen3", "QWEN3.5", "Qwen/Qwen3-8B"])
def test_template_names_any_case_and_model_ids_resolve(files: Path, name: str) -> None:
    out = expect(chatparse("parse", "-t", name, "good.jsonl", "-q", cwd=files), 0)
    assert json.loads(out)["message"]["content"] == "y"


def test_a_lone_surrogate_is_written_escaped_or_fails_its_row(files: Path) -> None:
    out = expect(chatparse("parse", "-t", "qwen3", "surrogate.jsonl", cwd=files), 0)
    assert json.loads(out)["message"]["content"] == "a \ud800 b"
    expect(chatparse("parse", "-t", "qwen3", "surrogate.jsonl", "-o", "-", "--output-format", "parquet",
                     cwd=files), 1, "unencodable_text 1")


def test_parse_reads_stdin_and_pipes_plain_jsonl(files: Path) -> None:
    out = expect(chatparse("parse", "-t", "qwen3", stdin=(files / "good.jsonl").read_bytes()), 0, "1 row in")
    assert out.count("\n") == 1 and json.loads(out)["line"] == 1


# --- stream ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--output", "@missing"], "[file_not_found]"),
        (["--output", "@binary.dat"], "[invalid_utf8]"),
        (["--output", "@."], "[is_a_directory]"),
        (["--output", "x", "--prefix", "@binary.dat"], "[invalid_utf8]"),
        (["--output", "x", "--chunk", "0"], "expected a number of 1 or more, found 0"),
        (["--output", "x", "--chunk", "-3"], "expected a number of 1 or more, found -3"),
        (["--output", "x", "--chunk", "many"], "expected a whole number"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_stream_bad_inputs(files: Path, args: list[str], error: str) -> None:
    prefix = [] if "--prefix" in args else ["--prefix", ""]
    expect(chatparse("stream", "-t", "qwen3", *prefix, *args, cwd=files), 2, error)


def test_stream_needs_the_prompt(files: Path) -> None:
    expect(chatparse("stream", "-t", "qwen3", "--output", "x", cwd=files), 2, "--prefix")


def test_stream_prints_jsonl_events(files: Path) -> None:
    out = expect(chatparse("stream", "-t", "qwen3", "--prefix", PREFIX + "<think>", "--output", "a</think>b",
                           "--chunk", "1"), 0)
    events = [json.loads(line) for line in out.splitlines()]
    assert events[-1] == {"type": "message", "message": {"role": "assistant", "thinking": "a", "content": "b"}}
    assert {e["type"] for e in events[:-1]} <= {"region_open", "region_chunk", "region_close"}


# --- templates ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("file", "error"),
    [("binary.dat", "error [bad_json]"), ("deep.json", "error [too_deep]"),
     ("typo.json", "error [undefined_placeholder] (field=content, key=transform)"),
     ("empty_anchor.json", "Set it to the assistant-turn header")],
)
def test_templates_check_reports_findings(files: Path, file: str, error: str) -> None:
    out = expect(chatparse("templates", "check", file, cwd=files), 1)
    assert error in out


def test_templates_show_prints_the_template() -> None:
    out = expect(chatparse("templates", "show", "Qwen3"), 0)
    record = json.loads(out)
    assert record["name"] == "qwen3" and record["template"]["start_anchor"] == "<|im_start|>assistant\n"
    assert "tool_calls" in record["template"]["fields"] and record["models"]


def test_templates_without_an_action_is_usage() -> None:
    expect(chatparse("templates"), 2, "usage: chatparse templates")


# --- answers, detect, bench, demo, main -----------------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "exit_code", "error"),
    [
        (["binary.dat"], 1, ""),
        (["deep.jsonl"], 1, ""),
        (["surrogate.jsonl", "--evidence", "evidence.json"], 1, ""),
        (["missing.jsonl"], 2, "[file_not_found]"),
        (["good.jsonl", "--evidence", "binary.dat"], 2, "[invalid_utf8]"),
        (["good.jsonl", "--evidence", "deep.json"], 2, "[too_deep]"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_answers_check_bad_inputs(files: Path, args: list[str], exit_code: int, error: str) -> None:
    out = expect(chatparse("answers", "check", *args, cwd=files), exit_code, error)
    for line in out.splitlines():
        assert json.loads(line)["ok"] is False


def test_answers_eval_missing_dataset(files: Path) -> None:
    expect(chatparse("answers", "eval", "no-such-dir", cwd=files), 2, "chatparse answers eval: error [")


def test_detect(files: Path) -> None:
    assert expect(chatparse("detect", "Qwen/Qwen3-8B"), 0) == "qwen3\n"
    expect(chatparse("detect", "nobody/no-such-model"), 1, "no built-in template fits the model id")
    expect(chatparse("detect", str(files)), 1, "no built-in template fits the model directory")


def test_bench_prints_its_table_not_its_json() -> None:
    out = expect(chatparse("bench", "--quick", "--no-reference"), 0)
    assert out.strip() and max(len(line) for line in out.splitlines()) < 400


def test_demo_rejects_a_chunk_below_one() -> None:
    expect(chatparse("demo", "--chunk", "0"), 2, "expected a number of 1 or more")


def test_main_usage_errors() -> None:
    expect(chatparse(), 2, "usage: chatparse")
    expect(chatparse("frobnicate"), 2, "invalid choice")


def test_every_help_has_the_exit_code_table() -> None:
    for args in ([], ["parse"], ["stream"], ["detect"], ["templates"], ["templates", "check"], ["answers", "check"]):
        out = expect(chatparse(*args, "--help"), 0)
        assert "exit codes:" in out and "1  some inputs failed" in out and "2  usage or setup error" in out


@pytest.mark.parametrize("file", ["missing.json", "binary.dat", "deep.json", "."])
def test_templates_synthesize_bad_inputs(files: Path, file: str) -> None:
    expect(chatparse("templates", "synthesize", file, cwd=files), 2, "error [")
