"""`chatparse templates check`: load-time errors with their code and location, and TemplateWarnings."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chatparse.cli import templates_cmd


def check(tmp_path: Path, template: dict[str, Any]) -> int:
    path = tmp_path / "template.json"
    path.write_text(json.dumps(template), encoding="utf-8")
    parser = argparse.ArgumentParser(prog="chatparse")
    templates_cmd.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["templates", "check", str(path)])
    code = args.func(args)
    assert isinstance(code, int)
    return code


def _field(**spec: Any) -> dict[str, Any]:
    return {"start_anchor": "<|a|>", "fields": {"x": {"open": "<x>", "close": "</x>", **spec}}}


def test_check_shows_a_placeholder_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A field name of its own: load_template caches compiled templates, and a cached one warns no more.
    template = _field(content="text", transform={"who": "{content.name}"})
    template["fields"]["warned_in_cli_test"] = template["fields"].pop("x")
    assert check(tmp_path, template) == 0
    out = capsys.readouterr().out
    assert "warning: Field 'warned_in_cli_test': transform placeholder '{content.name}' cannot index into the text " \
           "parser's value at 'name'" in out
    assert out.rstrip().endswith("transformers-compatible")


@pytest.mark.parametrize(
    ("template", "code", "where"),
    [
        (_field(transform={"name": "{foo}"}), "undefined_placeholder", "field=x, key=transform"),
        ({**_field(repeats=True), "defaults": {"x": ""}}, "bad_default", "field=x, key=defaults"),
        (_field(content="json", transform={"a": ["{content}"] * 99_000}), "transform_too_large",
         "field=x, key=transform"),
    ],
    ids=["placeholder", "default", "amplifying-transform"],
)
def test_check_shows_load_errors_with_code_and_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: dict[str, Any], code: str, where: str
) -> None:
    assert check(tmp_path, template) == 1
    assert capsys.readouterr().out.startswith(f"error [{code}] ({where}): ")


# --- untrusted model directories: detect and install (issue 34 §2) ---------------------------------------


def _console(*args: str) -> subprocess.CompletedProcess[str]:
    script = shutil.which("chatparse", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "chatparse"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120, check=False)


def _model_dir(tmp_path: Path, mode: int) -> Path:
    directory = tmp_path / "Qwen3-8B"
    directory.mkdir()
    config = directory / "tokenizer_config.json"
    config.write_text(json.dumps({"eos_token": "<|im_end|>", "model_max_length": 40960}), encoding="utf-8")
    config.chmod(mode)
    return directory


@pytest.mark.parametrize("mode", [0o644, 0o640], ids=["0644", "0640"])
def test_install_keeps_the_configs_permission_bits_and_leaves_no_temporary(tmp_path: Path, mode: int) -> None:
    """A server running as another user read the 0644 file; after install it was 0600."""
    directory = _model_dir(tmp_path, mode)
    result = _console("templates", "install", "qwen3", str(directory))
    assert result.returncode == 0, result.stderr
    config = directory / "tokenizer_config.json"
    assert stat.S_IMODE(config.stat().st_mode) == mode
    data = json.loads(config.read_text(encoding="utf-8"))
    assert data["model_max_length"] == 40960 and data["response_template"]["start_anchor"] == "<|im_start|>assistant\n"
    assert sorted(p.name for p in directory.iterdir()) == ["tokenizer_config.json"]


def test_install_that_fails_while_writing_leaves_the_config_as_it_was(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from chatparse.cli.main import main

    directory = _model_dir(tmp_path, 0o644)
    config = directory / "tokenizer_config.json"
    before = hashlib.sha256(config.read_bytes()).hexdigest()

    def fail(*args: Any) -> None:
        raise KeyboardInterrupt  # Ctrl-C between writing the new file and putting it in place

    monkeypatch.setattr(os, "replace", fail)
    assert main(["templates", "install", "qwen3", str(directory)]) == 130
    assert hashlib.sha256(config.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in directory.iterdir()) == ["tokenizer_config.json"]


@pytest.mark.parametrize("argv", [["detect"], ["templates", "detect"], ["templates", "install", "auto"]],
                         ids=["detect", "templates-detect", "install-auto"])
def test_a_chat_template_file_that_is_not_utf8_is_the_templates_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    from chatparse.cli.main import main

    directory = _model_dir(tmp_path, 0o644)
    (directory / "chat_template.jinja").write_bytes(b"{% for m in messages %}\xff\xfe{% endfor %}")
    before = (directory / "tokenizer_config.json").read_bytes()
    assert main([*argv, str(directory)]) == 2
    err = capsys.readouterr().err
    assert "error [bad_chat_template]" in err and "found byte 0xff at offset 23" in err
    assert "internal_error" not in err
    assert (directory / "tokenizer_config.json").read_bytes() == before


def test_a_number_past_pythons_int_string_limit_is_the_files_error(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """json.loads raises a plain ValueError for a 5,001-digit number: it escaped as internal_error."""
    from chatparse.cli.main import main

    huge = '{"start_anchor": "<s>", "fields": {"x": {}}, "defaults": {"n": 1' + "0" * 5000 + "}}"
    (tmp_path / "template.json").write_text(huge, encoding="utf-8")
    assert main(["templates", "check", str(tmp_path / "template.json")]) == 1
    assert capsys.readouterr().out.startswith("error [bad_json]: Expected JSON in ")
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "tokenizer_config.json").write_text('{"model_max_length": 1' + "0" * 5000 + "}", encoding="utf-8")
    assert main(["templates", "install", "qwen3", str(directory)]) == 2
    err = capsys.readouterr().err
    assert "error [bad_tokenizer_config]" in err and "internal_error" not in err


def test_list_tags_the_built_ins_transformers_can_read_and_fits_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """newcomer-3 #27: every line ended in '[chatparse-only]' (no information) and ran to 158 columns."""
    from chatparse.cli.main import main
    from chatparse.templates import list_templates, v1_form
    from chatparse.templates.v1 import NotV1Error

    assert main(["templates", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(list_templates()) and max(map(len, lines)) <= 100
    for line in lines:
        name = line.split()[0]
        try:
            v1_form(name)
            expressible = True
        except NotV1Error:
            expressible = False
        assert line.endswith("[v1]") == expressible, line
