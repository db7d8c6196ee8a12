"""Parser and grammar agree, for every built-in that has a grammar: random walks through its Lark grammar
(llguidance, byte tokenizer) parse back, one-shot and streamed, into exactly the calls the tool choice
demands, with arguments valid against each tool's schema; and every turn the family's real chat template
renders is admitted by the grammar (the grammar is not narrower than the model's own format)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import chatparse
from chatparse.grammar import GrammarError, ToolGrammar, tool_grammar
from chatparse.grammar.build import plan, region_texts
from chatparse.template.compile import load_template
from chatparse.templates import get_template, list_templates
from tests.grammar.walk import accepts, walk
from tests.streamcheck import random_split, stream

RENDERED = Path(__file__).parent.parent / "templates" / "rendered"
# Built-ins with no grammar yet, each with the reason (the test below checks the reason is still true).
NO_GRAMMAR: dict[str, str] = {
    # Harmony-like messages: content and each call are messages of their own (' to=user<|message|>...').
    "muse_glimmer": "no_write_form",
    "muse_spark": "no_write_form",
}

# Built-ins whose grammar cannot write a free-form object (an object schema without 'properties': MiniMax M3
# writes objects as nested elements of any name, and no grammar matches such a close to its open). For the
# render test their tools' free-form objects get the properties the rendered calls give them; a test below
# checks that the grammar raises for the tools as they are.
NO_FREE_FORM_OBJECTS = {"minimax_m3"}

# Schemas that stress the argument grammar: nesting, arrays, enums, unions, nullable, no parameters,
# strings (which walks fill with markers, newlines and non-ASCII text).
STRESS_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "plan_trip", "parameters": {
        "type": "object", "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "budget": {"type": ["number", "null"]},
            "mode": {"type": "string", "enum": ["train", "plane", "car"]},
            "stops": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "nights": {"type": "integer"}}, "required": ["name"],
                "additionalProperties": False}, "maxItems": 3},
            "flexible": {"type": "boolean"},
            "note": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        }, "required": ["city", "mode"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {"name": "write_file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"]}}},
]


def _rendered(family: str) -> dict[str, Any] | None:
    path = RENDERED / f"{family.replace('.', '_')}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _prefix(family: str) -> str:
    data = _rendered(family)
    if data is None:
        return ""
    renderings = data["renderings"]
    for name in ("prompt_enable_thinking_true", "prompt"):
        if name in renderings and "text" in renderings[name]:
            return str(renderings[name]["text"])
    return ""


def _families() -> list[str]:
    return [name for name in list_templates() if "tool_calls" in get_template(name)["fields"]]


def _grammar_families() -> list[str]:
    return [f for f in _families() if f not in NO_GRAMMAR]


CHOICES: list[tuple[Any, bool]] = [("auto", True), ("required", True), ("required", False), ("none", True),
                                   ("plan_trip", True), ("auto", False)]


def _check_message(message: dict[str, Any], choice: Any, parallel: bool) -> None:
    calls = message.get("tool_calls", [])
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in STRESS_TOOLS}
    if choice == "none":
        assert not calls
    elif choice == "required":
        assert len(calls) >= 1
    elif choice != "auto":
        assert len(calls) == 1 and calls[0]["function"]["name"] == choice
    if not parallel:
        assert len(calls) <= 1
    for call in calls:
        function = call["function"]
        assert function["name"] in schemas
        jsonschema.validate(function["arguments"], schemas[function["name"]])


@pytest.mark.parametrize("family", _grammar_families())
def test_random_walks_parse_back(family: str) -> None:
    template = get_template(family)
    prefix = _prefix(family)
    assert_walks_parse_back(template, prefix, family, _free_text_stops(template))


def lark_form(grammar: ToolGrammar) -> str:
    return grammar.lark


def assert_walks_parse_back(template: Any, prefix: str, label: str, extra_literals: Collection[str] = (), *,
                            form: Callable[[ToolGrammar], str] = lark_form,
                            choices: Sequence[tuple[Any, bool]] = CHOICES, walks: int = 4,
                            tools: Sequence[dict[str, Any]] = STRESS_TOOLS) -> None:
    """Random walks through the grammar of every tool choice (as Lark: ``form``) parse back (one-shot and
    streamed) into the calls the choice demands, with schema-valid arguments; most walks must finish."""
    rng = random.Random(label)
    finished = 0
    for choice, parallel in choices:
        grammar = tool_grammar(template, tools, tool_choice=choice, parallel_tool_calls=parallel, prefix=prefix)
        literals = sorted(grammar.grammar.literals() | set(extra_literals))
        lark = form(grammar)
        for _ in range(walks):
            text = walk(lark, rng, literals)
            if text is None:
                continue
            finished += 1
            where = f"{label} {choice} parallel={parallel}: {text!r}"
            message = chatparse.parse_response(text, template, prefix=prefix, tools=tools)
            try:
                _check_message(message, choice, parallel)
            except (AssertionError, jsonschema.ValidationError) as exc:
                raise AssertionError(f"{where}\n-> {message}\n{exc}") from exc
            streamed, _ = stream(template, prefix, random_split(text, rng), tools=tools)
            assert streamed == message, where
    total = walks * len(choices)
    assert finished >= total // 2, f"only {finished} of {total} walks finished"


def _free_text_stops(template: dict[str, Any]) -> set[str]:
    """Markers that end free text (the reasoning's close, the turn's end): no literal of the grammar, but
    walks should write them too."""
    compiled = load_template(template)
    stops = set(compiled.ext.end)
    thinking = plan(compiled).thinking
    if thinking is not None:
        stops.update(region_texts(thinking))
    return stops


def _turns(family: str) -> list[tuple[str, str]]:
    """(prompt, generated turn) for each assistant turn the real chat template renders."""
    data = _rendered(family)
    if data is None:
        return []
    ends = get_template(family).get("chatparse", {}).get("end", [])
    turns = []
    for name, rendering in data["renderings"].items():
        if not name.startswith("assistant_") or not rendering.get("prompt_is_prefix"):
            continue
        text = rendering["assistant_text"]
        found = [(text.find(e), e) for e in ends if e in text]
        if found:
            at, marker = min(found)
            text = text[: at + len(marker)]
        prompt = data["renderings"][rendering["prompt_rendering"]]["text"]
        turns.append((prompt, text))
    return turns


def _shape(value: Any) -> dict[str, Any]:
    """A schema for ``value`` with the properties its objects have."""
    if isinstance(value, dict):
        return {"type": "object", "properties": {k: _shape(v) for k, v in value.items()}}
    if isinstance(value, list):
        return {"type": "array", "items": _shape(value[0]) if value else {"type": "string"}}
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
    return {"type": kinds[type(value)]}


def _free_form_objects_declared(family: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tools`` with each free-form object parameter given the properties of its rendered values."""
    values: dict[tuple[str, str], Any] = {}
    for rendering in _rendered(family)["renderings"].values():  # type: ignore[index]
        for message in rendering.get("messages", []):
            for call in message.get("tool_calls") or []:
                for key, value in call["function"]["arguments"].items():
                    values[(call["function"]["name"], key)] = value
    out = json.loads(json.dumps(tools))
    for tool in out:
        function = tool["function"]
        for key, schema in function["parameters"].get("properties", {}).items():
            if schema.get("type") == "object" and not schema.get("properties") and (function["name"], key) in values:
                schema.update(_shape(values[(function["name"], key)]))
    return out


@pytest.mark.parametrize("family", sorted(NO_FREE_FORM_OBJECTS))
def test_free_form_objects_raise_where_the_family_writes_elements(family: str) -> None:
    tools = _rendered(family)["tools_schema"]  # type: ignore[index]
    for lenient in (False, True):  # free text there would be read as elements: lenient cannot leave it free
        with pytest.raises(GrammarError) as info:
            tool_grammar(family, tools, lenient=lenient)
        assert info.value.code == "unsupported_schema"
        assert info.value.path == "tools/create_event/parameters/properties/location"


@pytest.mark.parametrize("family", [f for f in _grammar_families() if _turns(f)])
def test_the_grammar_admits_what_the_chat_template_renders(family: str) -> None:
    assert_admits_renders(family)


def assert_admits_renders(family: str, form: Callable[[ToolGrammar], str] = lark_form) -> None:
    """Every turn the family's chat template renders is admitted by its auto grammar (and by its required
    grammar when the turn is only calls), as Lark (``form``)."""
    template = get_template(family)
    tools = _rendered(family)["tools_schema"]  # type: ignore[index]
    if family in NO_FREE_FORM_OBJECTS:
        tools = _free_form_objects_declared(family, tools)
    for prompt, text in _turns(family):
        ok, why = accepts(form(tool_grammar(template, tools, prefix=prompt)), text)
        assert ok, f"auto grammar rejects {text!r}: {why}"
        message = chatparse.parse_response(text, template, prefix=prompt, tools=tools)
        # (a chat template that drops the calls, LFM2's, renders a turn with none: nothing to require)
        if message.get("tool_calls") and not message.get("content"):
            ok, why = accepts(form(tool_grammar(template, tools, tool_choice="required", prefix=prompt)), text)
            assert ok, f"required grammar rejects {text!r}: {why}"


@pytest.mark.parametrize("family", sorted(NO_GRAMMAR))
def test_families_without_a_grammar_say_why(family: str) -> None:
    with pytest.raises(GrammarError) as info:
        tool_grammar(family, STRESS_TOOLS)
    assert info.value.code == NO_GRAMMAR[family]
