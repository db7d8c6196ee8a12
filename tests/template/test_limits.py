"""Load-time template limits (issue 7): pattern length, counted repeats, nested-quantifier warning.

The reference compiles whatever the template says: ``(?:a{1000}){10000}`` (18 characters) costs seconds and
gigabytes at load. Here such patterns are rejected, by name, before the regex compiler sees them.
"""

from __future__ import annotations

import json
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


def test_a_busy_machine_is_not_a_catastrophic_pattern() -> None:
    """A search that times out by the wall clock while the process used little CPU (a busy machine) is
    retried with refilled budgets; one that burns the CPU it was given on the retry is a RegexBudgetError."""
    from chatparse.engine.limits import Limits, RegexBudget

    budget = RegexBudget(Limits(search_timeout=0.05))
    calls: list[float] = []

    def stalls_twice(*, timeout: float) -> str:
        calls.append(timeout)
        if len(calls) <= 2:
            time.sleep(0.01)  # descheduled (or other threads used the process's CPU time): no CPU burned
            raise TimeoutError
        return "matched"

    assert budget.run(stalls_twice, "f", "close") == "matched"
    assert len(calls) == 3

    def burns(*, timeout: float) -> str:
        end = time.process_time() + timeout
        while time.process_time() < end:
            pass
        raise TimeoutError

    with pytest.raises(chatparse.RegexBudgetError):
        budget.run(burns, "f", "close")


def test_a_budget_used_up_by_the_wall_clock_is_refilled_while_the_cpu_allows() -> None:
    from chatparse.engine.limits import Limits, RegexBudget

    budget = RegexBudget(Limits(feed_budget=0.01, message_budget=0.5))
    budget.feed_left = budget.message_left = 0.0  # the wall clock ran out (the process was descheduled)
    assert budget.run(lambda *, timeout: timeout, "f", "close") > 0
    budget.cpu_allowed = -1.0  # the message really used its CPU
    budget.feed_left = 0.0
    with pytest.raises(chatparse.RegexBudgetError):
        budget.run(lambda *, timeout: timeout, "f", "close")


# --- transforms that amplify, keys that are not strings (issue 34 §3) -------------------------------------


def _calls(transform: Any) -> dict[str, Any]:
    return {"start_anchor": "<s>", "fields": {"tool_calls": {"open": "<tool_call>", "close": "</tool_call>",
                                                              "content": "json", "transform": transform}}}


def test_a_transform_that_repeats_content_99000_times_is_refused_at_load() -> None:
    """It passed `templates check` and turned a 10 KB row into a 990 MB line: now a named load error."""
    error = load_error(_calls({"copies": ["{content}"] * 99_000}))
    assert (error.code, error.field, error.key) == ("transform_too_large", "tool_calls", "transform")
    assert "at most 64 placeholder uses (Limits.transform_copies), found 99000" in str(error)
    json.dumps({"code": error.code, **error.location, **error.details})  # the error serialises


def test_real_transforms_are_far_below_the_copies_limit() -> None:
    from chatparse.templates import get_template, list_templates

    uses = [chatparse.load_template(get_template(n)).fields[f].copies for n in list_templates()
            for f in get_template(n)["fields"]]
    assert 0 < max(uses) <= 8 < chatparse.Limits().transform_copies


def test_a_parser_with_a_lower_copies_limit_checks_its_template() -> None:
    template = _calls({"name": "{content.name}", "again": "{content.name}", "arguments": "{content.arguments}"})
    output = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert chatparse.parse_response(output, template, prefix="")["tool_calls"]["again"] == "f"
    with pytest.raises(TemplateError) as info:
        chatparse.ResponseParser(template, prefix="", limits=chatparse.Limits(transform_copies=2))
    assert info.value.code == "transform_too_large"
    with pytest.raises(chatparse.errors.UsageError):
        chatparse.Limits(transform_copies=0)


@pytest.mark.parametrize(
    ("template", "where", "key"),
    [
        ({"start_anchor": "<s>", "fields": {1: {"open": "<x>"}}}, "response_template.fields", "1"),
        ({"start_anchor": "<s>", 1: 2, "defaults": {}, "fields": {"x": {}}}, "response_template", "1"),
        ({"start_anchor": "<s>", "defaults": {("a", 1): 3}, "fields": {"x": {}}}, "response_template.defaults",
         "('a', 1)"),
        ({"start_anchor": "<s>", "fields": {"x": {"open": "<x>", "transform": {None: "{content}"}}}},
         "response_template.fields.x.transform", "None"),
    ],
    ids=["field-name", "mixed-top-level", "tuple-in-defaults", "none-in-transform"],
)
def test_a_key_that_is_not_a_string_is_refused_at_load_with_a_message_that_serialises(
        template: dict[Any, Any], where: str, key: str) -> None:
    error = load_error(template)
    assert (error.code, error.key) == ("bad_key", key)
    assert f"key {key} in {where}." in str(error)
    assert json.loads(json.dumps({"message": str(error), **error.location})) == {"message": str(error), "key": key}


def test_a_non_string_key_is_refused_even_after_the_same_template_with_string_keys_loaded() -> None:
    """The compile cache is keyed by canonical JSON, where the key 1 and the key "1" are one key."""
    chatparse.load_template({"start_anchor": "<s>", "fields": {"1": {"open": "<x>", "close": "</x>"}}})
    assert load_error({"start_anchor": "<s>", "fields": {1: {"open": "<x>", "close": "</x>"}}}).code == "bad_key"
