"""transform: placeholder paths, the load-time placeholder check, and what apply_transform raises."""

from __future__ import annotations

import pytest

from chatparse.errors import TemplateError, TemplateWarning, TransformError
from chatparse.transform import apply_transform, check_placeholders, placeholder_paths

TRANSFORM = {"type": "function", "function": {"name": "{name}", "arguments": "{content.args}"}, "ids": ["{n}", 1]}


def test_placeholder_paths_are_the_whole_string_placeholders() -> None:
    assert placeholder_paths(TRANSFORM) == {"name", "content.args", "n"}
    assert placeholder_paths({"a": "literal", "b": 3, "c": []}) == set()


def test_check_placeholders_accepts_groups_and_content() -> None:
    check_placeholders(TRANSFORM, field="f", groups={"name", "n"}, scalar_parser=None)


def test_check_placeholders_rejects_a_root_nothing_defines() -> None:
    with pytest.raises(TemplateError) as caught:
        check_placeholders(TRANSFORM, field="f", groups={"name"}, scalar_parser=None)
    assert (caught.value.code, caught.value.field, caught.value.key) == ("undefined_placeholder", "f", "transform")
    assert "'{n}'" in str(caught.value)


def test_check_placeholders_rejects_a_path_into_a_capture() -> None:
    with pytest.raises(TemplateError) as caught:
        check_placeholders({"a": "{name.first}"}, field="f", groups={"name"}, scalar_parser=None)
    assert caught.value.code == "placeholder_not_a_dict"


def test_check_placeholders_warns_on_a_path_into_a_scalar() -> None:
    with pytest.warns(TemplateWarning, match="'{content.args}' cannot index into the text parser's value"):
        check_placeholders(TRANSFORM, field="f", groups={"name", "n"}, scalar_parser="text")


@pytest.mark.parametrize(
    ("scope", "code", "words"),
    [
        ({"content": {}}, "undefined_placeholder", "transform placeholder '{name}' is not defined. Available: ['content']"),
        ({"name": "x", "n": 1, "content": "s"}, "placeholder_not_a_dict",
         "transform placeholder '{content.args}' cannot index into str at 'args'"),
        ({"name": "x", "n": 1, "content": {"a": 1}}, "placeholder_missing_key",
         "transform placeholder '{content.args}' is missing key 'args'. Available: ['a']"),
    ],
    ids=["undefined", "not-a-dict", "missing-key"],
)
def test_apply_transform_failures_are_named_in_the_reference_words(scope: dict[str, object], code: str,
                                                                    words: str) -> None:
    with pytest.raises(TransformError) as caught:
        apply_transform(TRANSFORM, scope, field="f")
    assert caught.value.code == code
    assert str(caught.value).startswith(f"Field 'f': {words}")
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)


def test_apply_transform_keeps_types() -> None:
    scope = {"name": "get", "n": 7, "content": {"args": {"x": [1]}}}
    assert apply_transform(TRANSFORM, scope, field="f") == {
        "type": "function", "function": {"name": "get", "arguments": {"x": [1]}}, "ids": [7, 1]}
