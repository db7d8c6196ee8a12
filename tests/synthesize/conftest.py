"""One synthesis per test template, shared by the tests of this directory (rendering and the round trip
are the slow part)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("transformers")

from chatparse.synthesize import SynthesizedTemplate, synthesize_template
from tests.synthesize.families import FAMILIES, source

VERIFY_MESSAGES = 80  # per template; the CLI's default is 200

_CACHE: dict[str, SynthesizedTemplate] = {}


@pytest.fixture(scope="session")
def synthesized() -> Callable[[str], SynthesizedTemplate]:
    def get(name: str) -> SynthesizedTemplate:
        if name not in _CACHE:
            _CACHE[name] = synthesize_template(source(name), verify_messages=VERIFY_MESSAGES,
                                               **FAMILIES[name]["tokens"])
        return _CACHE[name]

    return get
