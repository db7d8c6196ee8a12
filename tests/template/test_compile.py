"""compile_template's load-time checks that transformers lacks: a repeated field's default of the wrong
shape, and transform placeholders no output can define (the reference accepts both at load and then
fails when the field's region closes)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import chatparse
from chatparse import TemplateError, TemplateWarning, load_template
from chatparse.template.compile import compile_template


def _template(field: dict[str, Any], defaults: dict[str, Any] | None = None) -> dict[str, Any]:
    """One field 'x', delimited by <x> and </x> unless ``field`` gives its own open or close pattern."""
    delimiters = {"open": "<x>", "close": "</x>"}
    for key in ("open", "close"):
        if f"{key}_pattern" in field:
            del delimiters[key]
    spec: dict[str, Any] = {"start_anchor": "<|a|>", "fields": {"x": {**delimiters, **field}}}
    if defaults is not None:
        spec["defaults"] = defaults
    return spec


@pytest.mark.parametrize("default", ["", 0, None, {}, "[]"], ids=["empty-string", "zero", "null", "dict", "text"])
def test_a_repeated_field_default_must_be_a_list(default: Any) -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(_template({"repeats": True}, {"x": default}))
    error = caught.value
    assert (error.code, error.field, error.key) == ("bad_default", "x", "defaults")
    assert str(error) == (
        f"response_template.defaults['x'] must be a list, found {type(default).__name__} {default!r}: field 'x' "
        "repeats, so each match is appended to it. Use [] or drop the default."
    )


@pytest.mark.parametrize("default", [0, [], {}], ids=["zero", "list", "dict"])
def test_a_joined_field_default_must_be_a_string_or_null(default: Any) -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(_template({"repeats": True, "join": " "}, {"x": default}))
    assert caught.value.code == "bad_default"
    assert "must be a string or null" in str(caught.value)


@pytest.mark.parametrize(
    ("field", "default", "message"),
    [
        ({"repeats": True}, ["kept"], {"x": ["kept", "a", "b"]}),
        ({"repeats": True, "join": " "}, "kept", {"x": "kept a b"}),
        ({"repeats": True, "join": " "}, None, {"x": "a b"}),
        ({}, "", {"x": "b"}),  # a field that does not repeat replaces its default: any value will do
    ],
    ids=["list", "string-join", "null-join", "not-repeated"],
)
def test_defaults_of_the_right_shape_load_and_parse(field: dict[str, Any], default: Any, message: Any) -> None:
    assert chatparse.parse_response("<x>a</x><x>b</x>", _template(field, {"x": default}), prefix="") == message


def test_the_reference_fails_on_those_defaults_only_when_the_region_closes() -> None:
    """Why it is a load error here: transformers loads the template and crashes (not a ValueError) on the
    first region, or silently returns the bad default when the field never occurs."""
    reference = pytest.importorskip("transformers.utils.chat_parsing")
    template = _template({"repeats": True}, {"x": ""})
    assert reference.parse_response("no region", template, prefix="") == {"x": ""}
    with pytest.raises(AttributeError):
        reference.parse_response("<x>a</x>", template, prefix="")


@pytest.mark.parametrize(
    ("field", "code"),
    [
        ({"transform": {"name": "{foo}"}}, "undefined_placeholder"),
        ({"open_pattern": "<x (?P<name>\\w+)>", "transform": {"f": "{name}", "g": "{tool}"}}, "undefined_placeholder"),
        ({"open_pattern": "<x (?P<name>\\w+)>", "transform": {"f": "{name.first}"}}, "placeholder_not_a_dict"),
    ],
    ids=["no-group", "other-group", "path-into-a-capture"],
)
def test_a_placeholder_no_output_can_define_fails_at_load(field: dict[str, Any], code: str) -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(_template(field))
    assert (caught.value.code, caught.value.field, caught.value.key) == (code, "x", "transform")


def test_an_undefined_placeholder_message_names_what_is_available() -> None:
    with pytest.raises(TemplateError) as caught:
        load_template(_template({"open_pattern": "<x (?P<name>\\w+)>", "transform": {"f": "{tool}"}}))
    assert str(caught.value) == (
        "Field 'x': transform placeholder '{tool}' is not defined by any output: no named group of the field's open "
        "or close pattern is called 'tool'. Available: ['content', 'name']. Capture it with (?P<tool>...) in the "
        "open or close pattern, or use one of those."
    )


@pytest.mark.parametrize(
    "field",
    [
        {"content": "json", "transform": {"name": "{content.name}", "args": "{content.arguments}"}},
        {"content": "json", "transform": {"f": "{tool}"}, "transform_each": True},  # names come from each item
        {"content": "xml-inline", "content_args": {"tag_pattern": "<(?P<key>\\w+)>(?P<value>.*?)</\\1>"},
         "transform": {"f": "{content.city}"}},
        {"close_pattern": "</x (?P<status>\\w+)>", "transform": {"s": "{status}", "v": "{content}"}},
    ],
    ids=["json-paths", "transform-each", "xml-inline-path", "close-group"],
)
def test_placeholders_an_output_can_define_load_silently(field: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", TemplateWarning)
        compile_template(_template(field))  # not load_template: its cache would hide a second warning


@pytest.mark.parametrize("content", ["text", "int", "float", "bool"])
def test_a_path_into_a_scalar_parsers_value_warns(content: str) -> None:
    with pytest.warns(TemplateWarning, match=r"cannot index into the \w+ parser's value at 'name'"):
        compile_template(_template({"content": content, "transform": {"n": "{content.name}"}}))


def test_an_undefined_placeholder_is_also_the_keyerror_the_reference_raises() -> None:
    """Code written for transformers catches KeyError for an undefined placeholder; the load-time error is one
    too, with its code and its message unchanged (str() is the message, not KeyError's repr)."""
    template = _template({"open_pattern": "<x (?P<name>\\w+)>", "transform": {"f": "{tool}"}})
    with pytest.raises(KeyError) as caught:
        load_template(template)
    assert isinstance(caught.value, TemplateError)
    assert caught.value.code == "undefined_placeholder"
    assert str(caught.value).startswith("Field 'x': transform placeholder '{tool}' is not defined by any output")
    with pytest.raises(TemplateError) as not_a_key:  # a path into a capture is not a missing name
        load_template(_template({"open_pattern": "<x (?P<name>\\w+)>", "transform": {"f": "{name.first}"}}))
    assert not isinstance(not_a_key.value, KeyError)


def test_the_reference_accepts_an_undefined_placeholder_and_fails_on_every_region() -> None:
    reference = pytest.importorskip("transformers.utils.chat_parsing")
    spec = _template({"transform": {"name": "{foo}"}})
    assert reference.parse_response("no region", spec, prefix="") == {}
    with pytest.raises(KeyError, match="is not defined"):
        reference.parse_response("<x>a</x>", spec, prefix="")
