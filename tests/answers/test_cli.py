"""`chatparse answers check|eval` through argparse, following main.py's ``args.func(args)`` contract."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chatparse.cli import answers_cmd

from .conftest import EDU_LIMIT_BLOCK, dump


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="chatparse")
    answers_cmd.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    assert isinstance(code, int)
    return code


@pytest.fixture
def evidence_file(tmp_path: Path) -> Path:
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps({"edu#2": EDU_LIMIT_BLOCK}, ensure_ascii=False), encoding="utf-8")
    return path


def write_lines(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n", encoding="utf-8")
    return path


def test_check_all_pass_exits_zero(tmp_path: Path, evidence_file: Path) -> None:
    source = write_lines(tmp_path / "in.jsonl", [{"id": "a", "output": dump()}])
    out = tmp_path / "out.jsonl"
    assert run(["answers", "check", str(source), "--evidence", str(evidence_file), "-o", str(out)]) == 0
    (verdict,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert verdict == {"id": "a", "line": 1, "ok": True, "status": "answered", "stage": "grounding", "errors": []}


def test_check_failures_exit_one_with_codes(tmp_path: Path, evidence_file: Path) -> None:
    records: list[dict[str, object]] = [
        {"id": "good", "output": dump()},
        {"id": "invented", "output": dump(citations=[{"source_id": "교육비 안내", "quote": "교육비"}])},
        {"output": "```json\n{}\n```"},
        {"id": "own-evidence", "output": dump(), "evidence": {"other": "x"}},
    ]
    source = write_lines(tmp_path / "in.jsonl", records)
    out = tmp_path / "out.jsonl"
    assert run(["answers", "check", str(source), "--evidence", str(evidence_file), "-o", str(out)]) == 1
    verdicts = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [v["ok"] for v in verdicts] == [True, False, False, False]
    assert verdicts[1]["errors"][0]["code"] == "unknown_source"
    assert verdicts[2]["id"] is None and verdicts[2]["line"] == 3
    assert verdicts[2]["errors"][0]["code"] == "not_bare_json"
    assert verdicts[3]["errors"][0]["code"] == "unknown_source"


def test_check_reads_stdin_and_writes_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], evidence_file: Path
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO((json.dumps({"output": dump()}) + "\n\n").encode("utf-8")))
    monkeypatch.setattr("sys.stdin", stdin)
    assert run(["answers", "check", "--evidence", str(evidence_file)]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"not json", "invalid_json"),
        (json.dumps({"output": 3}).encode(), "bad_line"),
        (json.dumps(["output"]).encode(), "bad_line"),
        (json.dumps({"output": "{}"}).encode(), "missing_evidence"),
        (b"\xff\xfe binary", "invalid_utf8"),
        (b'{"output": ' + b"[" * 100_000 + b"}", "too_deep"),
    ],
    ids=["not-json", "output-not-text", "not-an-object", "no-evidence", "binary", "deep"],
)
def test_a_bad_line_fails_alone_and_checking_goes_on(
    tmp_path: Path, evidence_file: Path, line: bytes, code: str
) -> None:
    """The policy of `chatparse parse`: a bad line is a failed verdict with its code; the next line is checked."""
    source = tmp_path / "in.jsonl"
    good = json.dumps({"id": "good", "output": dump(), "evidence": {"edu#2": EDU_LIMIT_BLOCK}}).encode()
    source.write_bytes(line + b"\n" + good + b"\n")
    out = tmp_path / "o.jsonl"
    evidence = [] if code == "missing_evidence" else ["--evidence", str(evidence_file)]
    assert run(["answers", "check", str(source), "-o", str(out), *evidence]) == 1
    bad, after = [json.loads(v) for v in out.read_text(encoding="utf-8").splitlines()]
    assert bad["id"] is None and bad["line"] == 1 and bad["ok"] is False and bad["stage"] == "input"
    assert bad["errors"][0]["code"] == code
    assert after["id"] == "good" and after["ok"]


def test_a_lone_surrogate_in_an_id_is_written_escaped(tmp_path: Path, evidence_file: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a\\ud800", "output": "x"}\n', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    assert run(["answers", "check", str(source), "-o", str(out), "--evidence", str(evidence_file)]) == 1
    assert json.loads(out.read_text(encoding="utf-8"))["id"] == "a\ud800"


def test_check_missing_file_exits_two(tmp_path: Path) -> None:
    assert run(["answers", "check", str(tmp_path / "nope.jsonl")]) == 2


def test_eval_builtin_prints_report_and_writes_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "run.jsonl"
    assert run(["answers", "eval", "builtin", "--prompt", "P1", "--prompt", "P2", "--log", str(log)]) == 0
    out = capsys.readouterr().out
    assert out.index("P1  ") < out.index("P2  ")
    assert "REGRESSION P2 vs P1: confident answers on unanswerable questions 1 → 4" in out
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["event"] == "run" and set(lines[0]["prompt_versions"]) == {"P1", "P2"}


def test_eval_defaults_to_all_prompts(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["answers", "eval", "builtin"]) == 0
    out = capsys.readouterr().out
    assert all(f"\n{name}  " in out for name in ("P0", "P1", "P2"))


def test_eval_unknown_dataset_exits_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["answers", "eval", str(tmp_path)]) == 2
    assert "[invalid_dataset]" in capsys.readouterr().err


def test_eval_unknown_prompt_is_an_argparse_error() -> None:
    with pytest.raises(SystemExit):
        run(["answers", "eval", "builtin", "--prompt", "P9"])


# --- through the real console script ---------------------------------------------------------------------------

SCRIPT = Path(sys.executable).with_name("chatparse")
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "chatparse"]


def console(*args: str, cwd: Path, key: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "CHATPARSE_DEBUG")}
    if key is not None:
        env["OPENAI_API_KEY"] = key
    return subprocess.run([*ENTRY, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_a_live_run_is_logged_as_live_and_exits_one_when_every_attempt_failed(tmp_path: Path) -> None:
    result = console("answers", "eval", "builtin", "--prompt", "P0", "--model", "my-model", "--base-url",
                     "http://127.0.0.1:9/v1", "--api-key", "none", "--log", "live.jsonl", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "LIVE run: calling my-model" in result.stderr and "error [all_attempts_failed]" in result.stderr
    assert "(LIVE run) · model my-model" in result.stdout and "SYNTHETIC" not in result.stdout
    run_line = json.loads((tmp_path / "live.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert run_line["synthetic"] is False and run_line["live"] is True and run_line["settings"]["model"] == "my-model"


def test_a_missing_api_key_is_a_setup_error_naming_the_fix(tmp_path: Path) -> None:
    result = console("answers", "eval", "builtin", "--model", "my-model", cwd=tmp_path)
    assert result.returncode == 2 and "error [missing_api_key]" in result.stderr
    assert "OPENAI_API_KEY" in result.stderr and "--api-key" in result.stderr and "internal_error" not in result.stderr


def test_python_openai_generator_without_a_key_is_a_chatparse_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    from chatparse.answers.generators import OpenAIGenerator
    from chatparse.errors import ChatparseError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ChatparseError) as caught:
        OpenAIGenerator("my-model")
    assert caught.value.code == "missing_api_key" and "OPENAI_API_KEY" in str(caught.value)


def test_fail_on_regression_gates_ci(tmp_path: Path) -> None:
    plain = console("answers", "eval", "builtin", "--prompt", "P1", "--prompt", "P2", cwd=tmp_path)
    assert plain.returncode == 0 and "REGRESSION P2 vs P1" in plain.stdout
    gated = console("answers", "eval", "builtin", "--prompt", "P1", "--prompt", "P2", "--fail-on-regression",
                    cwd=tmp_path)
    assert gated.returncode == 1 and "--fail-on-regression" in gated.stderr


def test_check_keeps_each_inputs_id_and_counts(tmp_path: Path) -> None:
    write_lines(tmp_path / "answers.jsonl", [{"id": "a1", "output": dump()}, {"id": "a2", "output": 3}])
    before = (tmp_path / "answers.jsonl").read_bytes()
    result = console("answers", "check", "answers.jsonl", "-o", "verdicts.jsonl", cwd=tmp_path)
    assert result.returncode == 1 and "2 lines: 0 ok, 2 failed" in result.stderr, result.stderr
    verdicts = [json.loads(v) for v in (tmp_path / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(v["id"], v["line"]) for v in verdicts] == [("a1", 1), ("a2", 2)]
    assert verdicts[0]["errors"][0]["code"] == "missing_evidence"
    same = console("answers", "check", "answers.jsonl", "-o", "answers.jsonl", cwd=tmp_path)
    assert same.returncode == 2 and "output_is_input" in same.stderr
    assert (tmp_path / "answers.jsonl").read_bytes() == before


def test_an_evidence_file_that_is_not_json_says_where(tmp_path: Path) -> None:
    (tmp_path / "evidence.json").write_text('{"a": "x",\n oops}', encoding="utf-8")
    write_lines(tmp_path / "answers.jsonl", [{"id": "a1", "output": dump()}])
    result = console("answers", "check", "answers.jsonl", "--evidence", "evidence.json", cwd=tmp_path)
    assert result.returncode == 2 and "error [invalid_json]" in result.stderr and "line 2, column 2" in result.stderr
