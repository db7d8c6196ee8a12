"""`chatparse templates check`: load-time errors with their code and location, and TemplateWarnings."""

from __future__ import annotations

import argparse
import json
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
