"""python-calls' lax repairs for model output (LFM2): set literals and unescaped nested quotes, only with
``repairs``; Python escapes as Python reads them."""

from __future__ import annotations

from typing import Any

import pytest

from chatparse.content.python_calls import parse_python_calls

LAX = {"brackets": "required", "separator": "comma", "repairs": True}
STRICT = {"brackets": "required", "separator": "comma"}


@pytest.mark.parametrize(("body", "arguments"), [
    ("[f(ids={3, 1, 3})]", {"ids": [3, 1]}),
    ("[f(tags={'a', 'b'}, empty={})]", {"tags": ["a", "b"], "empty": {}}),
    ("[f(d={'k': {1, 2}})]", {"d": {"k": [1, 2]}}),
    ("[f(command='sed -n '360,450p' app.py')]", {"command": "sed -n '360,450p' app.py"}),
    ("[f(q='it's', n=1)]", {"q": "it's", "n": 1}),
    ("[f(a='x' 'y', b='z')]", {"a": "xy", "b": "z"}),  # adjacent literals are still concatenated
    ("[f(sep='\\\\,', tab='\\t', other='\\,')]", {"sep": "\\,", "tab": "\t", "other": "\\,"}),
])
def test_repairs(body: str, arguments: dict[str, Any]) -> None:
    assert parse_python_calls(body, LAX) == [{"name": "f", "arguments": arguments}]


@pytest.mark.parametrize("body", ["[f(ids={3, 1})]", "[f(command='sed -n '360,450p' app.py')]"])
def test_strict_without_repairs(body: str) -> None:
    with pytest.raises(ValueError, match="python-calls"):
        parse_python_calls(body, STRICT)


def test_an_odd_quote_with_no_later_close_still_fails() -> None:
    with pytest.raises(ValueError):
        parse_python_calls("[f(q='it's)]", LAX)
