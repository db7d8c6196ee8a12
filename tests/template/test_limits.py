"""Load-time template limits (issue 7): pattern length, counted repeats, nested-quantifier warning.

The reference compiles whatever the template says: ``(?:a{1000}){10000}`` (18 characters) costs seconds and
gigabytes at load. Here such patterns are rejected, by name, before the regex compiler sees them.
"""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import chatparse
from chatparse.errors import TemplateError, TemplateWarning
from chatparse.template.compile import MAX_PATTERN_LENGTH
from chatparse.template.regex_info import quantifier_facts

ROOT = Path(__file__).resolve().parents[2]


def tpl(open_pattern: str, key: str = "open_pattern") -> dict[str, Any]:
    return {"start_anchor": "<s>", "fields": {"x": {key: open_pattern, "close": "</x>"}, "content": {}}}


def load_error(template: dict[str, Any]) -> TemplateError:
    with pytest.raises(TemplateError) as info:
        chatparse.load_template(template)
    return info.value


def test_pattern_too_long() -> None:
    err = load_error(tpl("a" * (MAX_PATTERN_LENGTH + 1)))
    assert (err.code, err.field, err.key) == ("pattern_too_long", "x", "open_pattern")
    chatparse.load_template(tpl("a" * MAX_PATTERN_LENGTH))


def test_literal_list_too_long() -> None:
    template = {"start_anchor": "<s>", "fields": {"x": {"open": [f"<t{i}>" for i in range(2000)], "close": "</x>"}}}
    assert load_error(template).code == "pattern_too_long"


@pytest.mark.parametrize("pattern", [r"a{1001}", r"a{2,5000}", r"(?:a{1000}){10000}", r"x{,99999}"])
def test_counted_repeat_too_large(pattern: str) -> None:
    err = load_error(tpl(pattern))
    assert (err.code, err.key) == ("repeat_too_large", "open_pattern")


def test_nested_repeat_product_too_large() -> None:
    err = load_error(tpl(r"(?:(?:a{999}){999}){9}"))
    assert err.code == "repeat_too_large"
    chatparse.load_template(tpl(r"(?:(?:a{30}){30}){30}"))  # 27,000 copies: compiles in milliseconds


def test_limits_apply_to_close_and_anchor_patterns() -> None:
    template = {"start_anchor_pattern": "a{5000}", "fields": {"c": {}}}
    assert (load_error(template).code, load_error(template).key) == ("repeat_too_large", "start_anchor_pattern")
    template = {"start_anchor": "<s>", "fields": {"x": {"open": "<x>", "close_pattern": "b" * 5000}}}
    assert load_error(template).code == "pattern_too_long"


def test_reference_size_repeat_is_rejected_fast_in_a_subprocess() -> None:
    """Compiling this pattern takes 3.6 s and 2.6 GB on the reference; rejection must be instant."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); import chatparse, time; t = time.perf_counter()\n"
            "try:\n    chatparse.load_template({'start_anchor': '<s>', 'fields': {'x': {'open_pattern': "
            "'(?:a{1000}){10000}', 'close': '</x>'}}})\nexcept chatparse.TemplateError as e:\n"
            "    print(e.code, time.perf_counter() - t)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=10)
    code_name, seconds = proc.stdout.split()
    assert code_name == "repeat_too_large" and float(seconds) < 0.5


def test_braces_that_are_not_repeats() -> None:
    assert quantifier_facts(r"\{99999\}").max_count == 0
    assert quantifier_facts(r"[{99999}]").max_count == 0
    assert quantifier_facts(r"a{}").max_count == 0
    assert quantifier_facts(r"a{3,}").max_count == 3
    chatparse.load_template(tpl(r"\{\d{1,4}\}"))


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(\w+\s?)+$", r"(?:x*y)*z", r"(a+){2,}"])
def test_nested_quantifier_warns_but_loads(pattern: str) -> None:
    with pytest.warns(TemplateWarning, match="nested_quantifier"):
        chatparse.load_template(tpl(pattern + "\u2063"))  # unique text: not served from the compile cache


@pytest.mark.parametrize("pattern", [r"(ab)+", r"<tool (\w+)>", r"(?:<\|channel\|>\w+)?<\|message\|>",
                                     r"[(a+)]+", r"(a+)?"])
def test_no_warning_for_ordinary_patterns(pattern: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chatparse.load_template(tpl(pattern + "\u2064"))


def test_builtin_templates_pass_the_limits_without_warnings() -> None:
    data = ROOT / "src" / "chatparse" / "templates" / "data"
    files = sorted(data.glob("*.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in files:
            chatparse.load_template(str(path))


def test_deeply_nested_groups_are_named() -> None:
    t0 = time.perf_counter()
    err = load_error(tpl("(" * 2000 + "a" + ")" * 2000))
    assert err.code in ("bad_regex", "pattern_too_long") and time.perf_counter() - t0 < 2


def test_one_stall_is_forgiven_once_per_message() -> None:
    """A busy machine stretches wall-clock time: the first timeout grows the search and feed budgets once
    (GRACE) and retries the search; a second one is a RegexBudgetError."""
    from chatparse.engine.limits import GRACE, Limits, RegexBudget

    budget = RegexBudget(Limits(search_timeout=0.05))
    timeouts: list[float] = []

    def stalls(*, timeout: float) -> str:
        timeouts.append(timeout)
        if len(timeouts) in (1, 3):
            raise TimeoutError
        return "matched"

    assert budget.run(stalls, "f", "close") == "matched"
    assert timeouts[1] >= timeouts[0] * (GRACE - 1)
    with pytest.raises(chatparse.RegexBudgetError):
        budget.run(stalls, "f", "close")


# --- nesting and size of the template's own values (issue 13) ------------------------------------


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _template(**top: Any) -> dict[str, Any]:
    return {"start_anchor": "A", "fields": {"c": {}}, **top}


@pytest.mark.parametrize("template", [
    _template(defaults={"c": _nested(2000)}),  # json.dumps (the cache key) and copy.deepcopy recursed
    _template(defaults={"c": _nested(65)}),
    {"start_anchor": "A", "fields": {"c": {"open": "<c>", "transform": {"v": _nested(100)}}}},
    {"start_anchor": "A", "fields": {"c": {"open": "<c>", "content": "json", "content_args": {"x": _nested(100)}}}},
], ids=["defaults 2000 deep", "defaults 65 deep", "transform", "content_args"])
def test_a_template_nested_too_deep_is_named(template: dict[str, Any]) -> None:
    error = load_error(template)
    assert error.code == "too_deep" and "at most 64 levels" in str(error) and len(str(error)) < 400


def test_deeply_nested_json_text_is_named() -> None:
    """900 levels parse as JSON (under the recursion limit), then used to fail copying the defaults."""
    text = '{"start_anchor": "A", "defaults": {"c": ' + "[" * 900 + "]" * 900 + '}, "fields": {"c": {}}}'
    with pytest.raises(TemplateError) as caught:
        chatparse.load_template(text)
    assert caught.value.code == "too_deep"


def test_a_template_that_holds_itself_is_named() -> None:
    cyclic: dict[str, Any] = {"x": 1}
    cyclic["self"] = cyclic
    assert load_error(_template(defaults={"c": cyclic})).code == "too_deep"


def test_shared_values_count_per_use() -> None:
    """60 levels of [d, d] are 2^60 values once written out: hashing the template never ended."""
    shared: list[Any] = [1]
    for _ in range(60):
        shared = [shared, shared]
    error = load_error(_template(defaults={"c": shared}))
    assert error.code == "too_large" and "100,000 values" in str(error)


def test_templates_within_the_limits_load_unchanged() -> None:
    compiled = chatparse.load_template(_template(defaults={"c": _nested(60)}))
    assert compiled.defaults["c"] == _nested(60)
