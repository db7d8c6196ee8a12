"""Built-ins that need no extension load in transformers 5.24 unchanged and give the corpus's expected
messages there too; the chatparse-only ones really do need chatparse."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from chatparse.templates import get_template, list_templates, template_info
from chatparse.templates.registry import normalize_name
from tests.templates.corpus_loader import case_id, corpus_cases, load_case

reference = pytest.importorskip("transformers.utils.chat_parsing")
from transformers.utils.chat_parsing.response_templates import load_response_template  # noqa: E402

COMPATIBLE = [name for name in list_templates() if not template_info(name)["chatparse_only"]]
CHATPARSE_ONLY = [name for name in list_templates() if template_info(name)["chatparse_only"]]
COMPATIBLE_KEYS = {normalize_name(name) for name in COMPATIBLE}
COMPATIBLE_CASES = [(family, path) for family, path in corpus_cases() if family in COMPATIBLE_KEYS]


@pytest.mark.parametrize("name", COMPATIBLE)
def test_loads_in_transformers(name: str) -> None:
    load_response_template(get_template(name))


@pytest.mark.parametrize("name", CHATPARSE_ONLY)
def test_chatparse_only_templates_do_not_load_in_transformers(name: str) -> None:
    with pytest.raises(ValueError, match=r"unknown content parser|Unknown keys|unknown keys"):
        load_response_template(get_template(name))


@pytest.mark.parametrize(
    ("family", "path"), COMPATIBLE_CASES, ids=[case_id(f, p) for f, p in COMPATIBLE_CASES]
)
def test_transformers_gives_the_expected_message(family: str, path: Path) -> None:
    case = load_case(path)
    template = get_template(family)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "malformed" in case["expected"]:
            # transformers has no keep mode: a region chatparse flags is an error there
            with pytest.raises(ValueError):
                reference.parse_response(
                    case["output"], template, prefix=case["prefix"], tools=case.get("tools")
                )
            return
        message = reference.parse_response(
            case["output"], template, prefix=case["prefix"], tools=case.get("tools")
        )
    assert message == case["expected"]
