"""Rendering is transformers' own, in a child process bounded in time, memory and output size; a template
that fails to render, loops or renders without bound is a named error."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from chatparse.synthesize import RenderLimits, synthesize_template
from chatparse.synthesize.errors import MissingDependencyError, RenderError
from chatparse.synthesize.render import Failure, Renderer, Request, require_renderer, template_variables

CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_renders_as_transformers_does() -> None:
    from transformers.utils.chat_template_utils import render_jinja_template

    messages = [{"role": "user", "content": "Hi"}]
    expected = render_jinja_template(conversations=[messages], chat_template=CHATML, add_generation_prompt=True)
    with Renderer(CHATML) as renderer:
        assert renderer.render_one(Request("p", messages, True)) == expected[0][0]  # type: ignore[index]


def test_a_refused_render_is_data() -> None:
    template = "{{ raise_exception('no system messages, please') }}"
    with Renderer(template) as renderer:
        failure = renderer.render_one(Request("probe-x", [{"role": "user", "content": "Hi"}]))
    assert isinstance(failure, Failure)
    assert failure.probe == "probe-x" and "no system messages, please" in failure.reason


def test_a_looping_template_is_a_timeout_naming_the_probe() -> None:
    looping = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(RenderError) as caught:
        synthesize_template(looping, limits=RenderLimits(seconds=1.0))
    assert caught.value.code == "render_timeout"
    assert caught.value.probe == "prompt"
    assert "bounded time" in str(caught.value)


def test_unbounded_output_is_a_named_error() -> None:
    huge = "{{ 'x' * 5000000 }}"
    with pytest.raises(RenderError) as caught:
        synthesize_template(huge, limits=RenderLimits(max_chars=100_000))
    assert caught.value.code == "render_too_large"
    assert "5000000 characters" in str(caught.value)


def test_a_template_that_outgrows_memory_is_a_named_error() -> None:
    doubling = ("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                "{% endfor %}{{ ns.s }}")
    with pytest.raises(RenderError) as caught:
        synthesize_template(doubling, limits=RenderLimits(max_memory=256 << 20, max_chars=1 << 20))
    assert caught.value.code == "render_too_large"


def test_syntax_errors_and_non_templates_are_named() -> None:
    with pytest.raises(RenderError) as caught:
        template_variables("{% if %}")
    assert caught.value.code == "bad_chat_template"
    with pytest.raises(RenderError) as caught:
        template_variables("")
    assert caught.value.code == "bad_chat_template"


@pytest.mark.parametrize("source", ["{% if true %}" * 2000 + "x" + "{% endif %}" * 2000,
                                    "{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}"])
def test_a_chat_template_nested_past_the_jinja_parser_is_named(source: str) -> None:
    with pytest.raises(RenderError) as caught:
        synthesize_template(source)
    assert caught.value.code == "chat_template_too_deep"
    assert "nested too deeply" in str(caught.value)


def test_a_template_that_always_fails_names_its_reason() -> None:
    with pytest.raises(RenderError) as caught:
        synthesize_template("{{ bos_token + messages[0].content }}")
    assert caught.value.code == "render_failed"
    assert "'bos_token' is undefined" in str(caught.value)
    assert "eos_token=" in str(caught.value)  # the fix: pass the tokenizer's special tokens


def test_the_switches_a_template_reads() -> None:
    variables = template_variables("{% if enable_thinking %}<think>{% endif %}{{ messages }}{{ thinking }}")
    assert {"enable_thinking", "thinking", "messages"} <= variables


def test_missing_renderer_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("transformers"):
            raise ImportError("No module named 'transformers'", name="transformers")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(MissingDependencyError) as caught:
        require_renderer()
    assert caught.value.code == "missing_dependency"
    assert isinstance(caught.value, ImportError)
    assert "pip install '.[transformers]'" in str(caught.value)
