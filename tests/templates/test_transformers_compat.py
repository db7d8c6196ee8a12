"""The built-ins and transformers 5.24: every built-in uses chatparse's real-output extensions, which
transformers rejects with a clear error at load; what remains without them is a valid v1 template that
transformers loads wherever it uses only transformers' content parsers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from chatparse.content.registry import get_content_parser
from chatparse.templates import get_template, list_templates, template_info

pytest.importorskip("transformers.utils.chat_parsing")
from transformers.utils.chat_parsing.response_templates import load_response_template

NAMES = list_templates()


def without_extensions(template: dict[str, Any]) -> dict[str, Any]:
    """The template with every ``chatparse`` object removed (its v1 part)."""
    v1 = copy.deepcopy(template)
    v1.pop("chatparse", None)
    for field in v1["fields"].values():
        field.pop("chatparse", None)
    return v1


@pytest.mark.parametrize("name", NAMES)
def test_every_builtin_is_chatparse_only_and_transformers_says_why(name: str) -> None:
    assert template_info(name)["chatparse_only"]
    with pytest.raises(ValueError, match=r"Unknown keys in response_template: \['chatparse'\]|unknown content parser"):
        load_response_template(get_template(name))


@pytest.mark.parametrize("name", NAMES)
def test_the_v1_part_loads_in_transformers_where_its_parsers_are_transformers(name: str) -> None:
    v1 = without_extensions(get_template(name))
    foreign = [f["content"] for f in v1["fields"].values() if not get_content_parser(f.get("content", "text")).compatible]
    if foreign:
        with pytest.raises(ValueError, match="unknown content parser"):
            load_response_template(v1)
    else:
        load_response_template(v1)
