"""``chatparse templates synthesize PATH``: reads a tokenizer_config.json, a .jinja file or a model
directory; exit 0 when the round trip is exact, 1 when it is not (naming the failing probes), 2 when no
template can be inferred."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chatparse
from chatparse.cli.main import main
from chatparse.synthesize import read_chat_template
from tests.synthesize.families import FAMILIES, source


def _model_dir(tmp_path: Path, template: str, **config: object) -> Path:
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": template, **config}),
                                                    encoding="utf-8")
    return tmp_path


def test_exact_template_exits_0_and_prints_a_usable_template(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    directory = _model_dir(tmp_path, source("qwen3"), **FAMILIES["qwen3"]["tokens"])
    assert main(["templates", "synthesize", str(directory), "--messages", "20"]) == 0
    captured = capsys.readouterr()
    template = json.loads(captured.out)
    assert template["start_anchor"] == "<|im_start|>assistant\n"
    message = chatparse.parse_response("<think>ok</think>Hi.<|im_end|>", template,
                                       prefix="<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    assert message == {"role": "assistant", "thinking": "ok", "content": "Hi."}
    assert "parses exact" in captured.err


def test_explain_json_and_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jinja = tmp_path / "chat_template.jinja"
    jinja.write_text(source("kimi_k2"), encoding="utf-8")
    out = tmp_path / "template.json"
    assert main(["templates", "synthesize", str(jinja), "--messages", "10", "--explain", "-o", str(out),
                 "--set", "eos_token=[EOS]"]) == 0
    text = capsys.readouterr().out
    assert "Inferred markers:" in text and "Evidence:" in text and "Round trip:" in text
    assert json.loads(out.read_text(encoding="utf-8"))["start_anchor"] == "<|im_assistant|>assistant<|im_middle|>"
    assert main(["templates", "synthesize", str(jinja), "--messages", "10", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["exact"] is True and payload["report"]["ok"] is True
    assert payload["prompts"]["default"] == ""
    assert any(line.startswith("[calls]") for line in payload["evidence"])


def test_not_exact_exits_1_naming_the_probes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A Hermes-style template that folds newlines in content: multi-line answers cannot round-trip.
    folding = source("qwen3").replace("'\\n</think>\\n\\n' + content.lstrip('\\n')",
                                      "'\\n</think>\\n\\n' + content.lstrip('\\n').replace('\\n', ' ')")
    assert folding != source("qwen3")
    directory = _model_dir(tmp_path, folding, eos_token="<|im_end|>")
    assert main(["templates", "synthesize", str(directory), "--messages", "30"]) == 1
    err = capsys.readouterr().err
    assert "not exact" in err and "after 'default'" in err


def test_no_template_exits_2_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
             "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    assert main(["templates", "synthesize", str(_model_dir(tmp_path, plain))]) == 2
    assert "[calls_not_rendered]" in capsys.readouterr().err
    assert main(["templates", "synthesize", str(tmp_path / "missing")]) == 2
    assert "[no_chat_template]" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "data", "code"), [
    ("tokenizer_config.json", ('{"chat_template": ' + "[" * 100_000 + "]" * 100_000 + "}").encode(),
     "bad_tokenizer_config"),
    ("chat_template.jinja", b"\x9d\xff binary", "bad_chat_template"),
    ("chat_template.jinja", ("{% if true %}" * 2000 + "x" + "{% endif %}" * 2000).encode(), "chat_template_too_deep"),
    ("chat_template.jinja", ("{% for x in y %}" * 25 + "{% endfor %}" * 25).encode(), "chat_template_too_deep"),
    ("chat_template.jinja", b"{% if false %}{{ 10 ** 5000 }}{% endif %}", "bad_chat_template"),
], ids=["deep-json", "not-utf8", "deep-jinja", "nested-blocks", "int-string-limit"])
def test_unreadable_files_exit_2_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes,
                                       code: str) -> None:
    (tmp_path / name).write_bytes(data)
    assert main(["templates", "synthesize", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert f"[{code}]" in err and "internal_error" not in err


def test_the_time_limit_bounds_the_whole_synthesis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slow = "{% for i in range(90000) %}{% for j in range(3) %}{% endfor %}{% endfor %}" + source("qwen3")
    assert main(["templates", "synthesize", str(_model_dir(tmp_path, slow)), "--time-limit", "1"]) == 2
    err = capsys.readouterr().err
    assert "error [synthesis_timeout]" in err and "whole time budget of 1 s" in err
    with pytest.raises(SystemExit):
        main(["templates", "synthesize", str(tmp_path), "--time-limit", "0"])
    assert "expected a positive number of seconds, found '0'" in capsys.readouterr().err


def test_read_chat_template_from_a_model_directory(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({
        "chat_template": "from the config",
        "bos_token": {"content": "<|begin_of_text|>", "special": True}, "eos_token": "<|eot_id|>",
        "added_tokens_decoder": {"128008": {"content": "<|eom_id|>", "special": True},
                                 "128009": {"content": "<|eot_id|>", "special": True}}}), encoding="utf-8")
    (tmp_path / "chat_template.jinja").write_text("from the jinja file", encoding="utf-8")
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [128008, 128009]}),
                                                     encoding="utf-8")
    chat_template, kwargs, added, stops = read_chat_template(tmp_path)
    assert chat_template == "from the jinja file"  # transformers 5 prefers chat_template.jinja
    assert kwargs == {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
    assert added == ["<|eom_id|>", "<|eot_id|>"] and stops == ["<|eom_id|>", "<|eot_id|>"]
    chat_template, _, _, _ = read_chat_template(tmp_path / "tokenizer_config.json")
    assert chat_template == "from the config"


def test_progress_is_drawn_on_a_terminal_and_cleared(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from chatparse.cli import synthesize_cmd

    monkeypatch.setattr(synthesize_cmd, "is_terminal", lambda stream: True)
    directory = _model_dir(tmp_path, source("qwen3"), **FAMILIES["qwen3"]["tokens"])
    assert main(["templates", "synthesize", str(directory), "--messages", "5", "--time-limit", "120"]) == 0
    err = capsys.readouterr().err
    assert "\rchatparse templates synthesize: renders 1, " in err and " s of 120 s" in err
    assert "\r\033[K" in err  # the line is cleared before the result is reported


def test_an_output_that_cannot_be_written_is_said_before_the_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`-o` into a missing directory: a setup error (exit 2) before any render; an existing output is
    replaced whole (written beside it, renamed), and kept as it was when the synthesis fails."""
    import chatparse.synthesize as synthesize

    jinja = tmp_path / "chat_template.jinja"
    jinja.write_text(source("qwen3"), encoding="utf-8")
    calls: list[str] = []
    real = synthesize.synthesize_template
    monkeypatch.setattr(synthesize, "synthesize_template",
                        lambda *a, **k: calls.append("rendered") or real(*a, **k))
    missing = tmp_path / "no-such-dir" / "template.json"
    assert main(["templates", "synthesize", str(jinja), "--messages", "5", "-o", str(missing)]) == 2
    assert "unwritable_output" in capsys.readouterr().err and calls == []
    out = tmp_path / "template.json"
    out.write_text("previous\n", encoding="utf-8")
    broken = tmp_path / "broken.jinja"
    broken.write_text("{{ no template here }}", encoding="utf-8")
    assert main(["templates", "synthesize", str(broken), "--messages", "5", "-o", str(out)]) == 2
    assert out.read_text(encoding="utf-8") == "previous\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")] == []
    assert main(["templates", "synthesize", str(jinja), "--messages", "5", "-o", str(out),
                 "--set", "eos_token=<|im_end|>"]) in (0, 1)
    assert json.loads(out.read_text(encoding="utf-8"))["start_anchor"] == "<|im_start|>assistant\n"
