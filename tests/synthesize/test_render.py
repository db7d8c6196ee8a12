"""Rendering is transformers' own, in a child process bounded in time, memory and output size; a template
that fails to render, loops or renders without bound is a named error."""

from __future__ import annotations

import builtins
import resource
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


# --- compiling is the template's work too (issue 34 §2) ---------------------------------------------------


def test_a_constant_that_never_finishes_folding_is_a_timeout_of_the_compile_in_the_child() -> None:
    """Jinja folds constant expressions while compiling, dead branches included: this one hung the parent."""
    with pytest.raises(RenderError) as caught:
        synthesize_template("{% if false %}{{ 10 ** (10 ** 10) }}{% endif %}", limits=RenderLimits(seconds=1.0))
    assert (caught.value.code, caught.value.probe) == ("render_timeout", "compile")
    assert str(caught.value).startswith("compiling the chat template did not finish within 1 s")


def test_a_huge_folded_constant_is_bounded_by_the_childs_memory_and_the_parent_stays_small() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(RenderError) as caught:
        synthesize_template("{{ 'x' * 1500000000 }}", limits=RenderLimits(max_memory=256 << 20))
    # Folding gives up on the MemoryError (compile) and the render then meets it: either way, in the child.
    assert caught.value.code == "render_too_large"
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 << 10  # KiB: the 1.5 GB was the child's


@pytest.mark.parametrize(
    ("source", "code", "words"),
    [
        ("{% if false %}{{ 10 ** 5000 }}{% endif %}", "bad_chat_template", "integer string conversion"),
        ("{% for x in y %}" * 25 + "{% endfor %}" * 25, "chat_template_too_deep", "too many statically nested blocks"),
    ],
    ids=["int-string-limit", "nested-blocks"],
)
def test_a_template_that_python_refuses_to_compile_is_the_templates_error(source: str, code: str, words: str) -> None:
    """These escaped as ValueError (the CLI said bad_option) and SyntaxError (internal_error)."""
    with pytest.raises(RenderError) as caught:
        synthesize_template(source)
    assert (caught.value.code, caught.value.probe) == (code, "compile")
    assert words in str(caught.value)


def test_one_budget_bounds_the_whole_synthesis_and_progress_is_reported() -> None:
    slow = "{% for i in range(90000) %}{% for j in range(3) %}{% endfor %}{% endfor %}" + CHATML  # a real template takes milliseconds per render
    seen: list[tuple[int, float]] = []
    with pytest.raises(RenderError) as caught:
        synthesize_template(slow, limits=RenderLimits(total_seconds=1.0),
                            progress=lambda renders, seconds: seen.append((renders, seconds)))
    assert caught.value.code == "synthesis_timeout"
    assert "whole time budget of 1 s (RenderLimits.total_seconds)" in str(caught.value)
    assert caught.value.details["renders"] == len(seen)
    assert [renders for renders, _ in seen] == list(range(1, len(seen) + 1))
