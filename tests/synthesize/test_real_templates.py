"""Offline, not in CI: synthesize from every published chat template in the directory named by
CHATPARSE_CHAT_TEMPLATES (``*.jinja`` files, searched recursively; other projects' code is never copied into
this repository). Every file must end in a template or a named SynthesisError, never a crash, and a template
with a written call form builds a grammar; the per-file outcome is printed (run with ``-s``). Special tokens: a
tokenizer_config.json beside a file, else a guess."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chatparse.grammar import tool_grammar
from chatparse.synthesize import SynthesisError, read_chat_template, synthesize_template
from chatparse.synthesize.probes import TOOLS

DIRECTORY = os.environ.get("CHATPARSE_CHAT_TEMPLATES")
FILES = sorted(Path(DIRECTORY).rglob("*.jinja")) if DIRECTORY else []
GUESSES = {"bos_token": ("<|begin_of_text|>", "<bos>", "<｜begin▁of▁sentence｜>", "<|startoftext|>", "<s>"),
           "eos_token": ("<|eot_id|>", "<eos>", "<｜end▁of▁sentence｜>", "<|im_end|>", "<|endoftext|>", "</s>")}

pytestmark = pytest.mark.skipif(not FILES, reason="set CHATPARSE_CHAT_TEMPLATES to a directory of .jinja files")


def _tokens(path: Path, text: str) -> dict[str, str]:
    _, kwargs, _, _ = read_chat_template(path)
    for key, candidates in GUESSES.items():
        if key not in kwargs:
            kwargs[key] = next((c for c in candidates if c in text), candidates[-1])
    return kwargs


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_synthesis_ends_in_a_template_or_a_named_error(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        result = synthesize_template(text, verify_messages=60, **_tokens(path, text))
    except SynthesisError as exc:
        print(f"{path.stem}: error [{exc.code}] {str(exc)[:160]}")
        return
    report = result.report
    assert report is not None
    calls = result["fields"].get("tool_calls", {}).get("chatparse", {})
    if "write" in calls:  # a written form always builds a grammar
        tool_grammar(dict(result), TOOLS, tool_choice="required")
    print(f"{path.stem}: {'exact' if result.exact else 'NOT EXACT'} {report.exact}/{report.checks}"
          f"{'; grammar' if 'write' in calls else ''}")
