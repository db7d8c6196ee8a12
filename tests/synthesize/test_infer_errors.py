"""A template whose renders do not show a part of the format fails with the reason, naming the probe."""

from __future__ import annotations

import pytest

from chatparse.errors import UsageError
from chatparse.synthesize import NotInferableError, synthesize_template

HEAD = "{% for m in messages %}<|im_start|>{{ m.role }}\n"
TAIL = "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"


def _fails(template: str) -> NotInferableError:
    with pytest.raises(NotInferableError) as caught:
        synthesize_template(template, verify_messages=0)
    return caught.value


def test_calls_not_rendered() -> None:
    error = _fails(HEAD + "{{ m.content }}" + TAIL)
    assert error.code == "calls_not_rendered"
    assert "tool calls are not rendered by this template" in str(error)
    assert error.probe == "one call"


def test_calls_refused() -> None:
    error = _fails(HEAD + "{% if m.tool_calls %}{{ raise_exception('no tools here') }}{% endif %}{{ m.content }}"
                   + TAIL)
    assert error.code == "calls_refused"
    assert "no tools here" in str(error)


def test_unknown_call_syntax() -> None:
    error = _fails(HEAD + "{{ m.content }}{% for c in m.tool_calls or [] %}CALL {{ c.function.name }} WITH "
                   "{% for k, v in c.function.arguments.items() %}{{ k }} is {{ v }} {% endfor %}{% endfor %}" + TAIL)
    assert error.code == "unknown_call_syntax"
    assert "none of the known call syntaxes" in str(error)


def test_content_not_rendered() -> None:
    error = _fails(HEAD + "{% if m.role == 'assistant' %}(answer){% else %}{{ m.content }}{% endif %}" + TAIL)
    assert error.code == "content_not_rendered"


def test_probe_kwargs_are_not_template_kwargs() -> None:
    with pytest.raises(UsageError) as caught:
        synthesize_template(HEAD + "{{ m.content }}" + TAIL, add_generation_prompt=True)
    assert caught.value.code == "bad_option"


@pytest.mark.parametrize("template", [
    "static text, no messages",
    "{{ messages | tojson }}",
    "{% for m in messages %}{{ m.content }}{% endfor %}",
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}",
    "{% for m in messages %}<{{ m.role }}>{{ m | string }}</{{ m.role }}>{% endfor %}",
], ids=["static", "json-dump", "contents-only", "plain-roles", "python-repr"])
def test_odd_templates_end_in_a_template_or_a_named_error(template: str) -> None:
    from chatparse.synthesize import SynthesisError, SynthesizedTemplate

    try:
        result = synthesize_template(template, verify_messages=10)
    except SynthesisError as exc:
        assert exc.code != "synthesis_fault", str(exc)
        return
    assert isinstance(result, SynthesizedTemplate)
