"""``chatparse templates install`` and ``chatparse templates detect`` on tokenizer directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chatparse.benchmark import QWEN3
from chatparse.cli.main import main
from chatparse.templates import get_template


def model_dir(path: Path, **config: object) -> Path:
    path.mkdir(parents=True)
    (path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>", **config}), encoding="utf-8")
    return path


def saved(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
    return data


def test_install_a_builtin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = model_dir(tmp_path / "m")
    assert main(["templates", "install", "qwen3", str(directory)]) == 0
    assert saved(directory) == {"eos_token": "<|im_end|>", "response_template": get_template("qwen3")}
    out = capsys.readouterr().out
    assert f"wrote the response_template 'qwen3' to {directory / 'tokenizer_config.json'}" in out
    assert "chatparse-only" in out or "transformers-compatible" in out


def test_install_a_template_file_says_transformers_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = model_dir(tmp_path / "m")
    template = tmp_path / "t.json"
    template.write_text(json.dumps(QWEN3), encoding="utf-8")
    assert main(["templates", "install", str(template), str(directory)]) == 0
    assert saved(directory)["response_template"] == QWEN3
    assert "transformers-compatible: AutoTokenizer.from_pretrained(DIR).parse_response" in capsys.readouterr().out


def test_install_auto_detects_the_family(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = model_dir(tmp_path / "gpt-oss-120b")
    assert main(["templates", "install", "auto", str(directory)]) == 0
    assert saved(directory)["response_template"] == get_template("gpt_oss")
    unknown = model_dir(tmp_path / "x")
    assert main(["templates", "install", "auto", str(unknown)]) == 2
    assert "no built-in template fits" in capsys.readouterr().err
    assert "response_template" not in saved(unknown)


def test_install_errors_name_their_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = model_dir(tmp_path / "m", response_template=QWEN3)
    assert main(["templates", "install", "qwen3", str(directory)]) == 2
    assert "error [response_template_exists]" in capsys.readouterr().err
    assert main(["templates", "install", "qwen3", str(directory), "--force"]) == 0
    assert saved(directory)["response_template"] == get_template("qwen3")
    assert main(["templates", "install", "qwen3", str(tmp_path / "nowhere")]) == 2
    assert "error [no_tokenizer_config]" in capsys.readouterr().err
    assert main(["templates", "install", "no-such-family", str(directory)]) == 2
    assert "error [unknown_template]" in capsys.readouterr().err


def test_detect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = model_dir(tmp_path / "m")
    (directory / "config.json").write_text(json.dumps({"model_type": "qwen3"}), encoding="utf-8")
    assert main(["templates", "detect", str(directory)]) == 0
    assert capsys.readouterr().out == "qwen3\n"
    assert main(["templates", "detect", str(model_dir(tmp_path / "x"))]) == 1
    assert "no built-in template fits" in capsys.readouterr().err
