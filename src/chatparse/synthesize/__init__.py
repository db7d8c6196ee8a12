"""Synthesize a response template from a chat template: render probe conversations through it (transformers'
renderer, bounded), infer the markers from the differences between renders, emit a v1 response template with
chatparse's real-output extensions, and prove it by a round trip over generated messages.

``synthesize_template(chat_template, **template_kwargs)`` returns a ``SynthesizedTemplate``: the template
itself (a dict, usable wherever a template goes) carrying what was inferred, the evidence and the report.
Needs jinja2 and transformers (the ``transformers`` extra: ``pip install '.[transformers]'`` in a checkout), imported on first use.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from chatparse.errors import ChatparseError, UsageError
from chatparse.synthesize.errors import MissingDependencyError, NotInferableError, RenderError, SynthesisError
from chatparse.synthesize.infer import Format, LayoutInference, Prompt, Session
from chatparse.synthesize.render import Progress, Renderer, RenderLimits, check_source
from chatparse.synthesize.text import Lexer
from chatparse.synthesize.verify import Report, Verifier

SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
RESERVED_KWARGS = ("messages", "conversation", "tools", "documents", "add_generation_prompt",
                   "continue_final_message", "chat_template")


class SynthesizedTemplate(dict[str, Any]):
    """A synthesized response template: the dict itself is the template (pass it to ``parse_response``,
    ``ResponseParser``, ``install_response_template``); ``format`` holds what was inferred, ``prompts`` what
    each generation prompt pre-writes, ``report`` the round trip (None when not verified)."""

    format: Format
    report: Report | None

    def __init__(self, template: Mapping[str, Any], fmt: Format, report: Report | None) -> None:
        super().__init__(template)
        self.format = fmt
        self.report = report

    @property
    def template(self) -> dict[str, Any]:
        """A plain copy of the template."""
        return copy.deepcopy(dict(self))

    @property
    def prompts(self) -> list[Prompt]:
        return list(self.format.prompts)

    @property
    def exact(self) -> bool:
        """Every generated message that the chat template renders round-tripped."""
        return self.report is not None and self.report.ok

    def explain(self) -> str:
        """The inferred markers, what each prompt pre-writes, the evidence and the verification summary."""
        from chatparse.synthesize.explain import explain

        return explain(self)


def synthesize_template(chat_template: str, *, verify_messages: int = 200, seed: int = 0,
                        special_tokens: Iterable[str] = (), end_tokens: Iterable[str] = (),
                        limits: RenderLimits | None = None, progress: Progress | None = None,
                        **template_kwargs: Any) -> SynthesizedTemplate:
    """A response template for the model whose chat template is ``chat_template`` (the Jinja source).

    ``template_kwargs`` are what the renderer receives besides the messages, as transformers'
    ``apply_chat_template`` passes them: the tokenizer's special tokens (``bos_token``, ``eos_token``, ...)
    and any switch to hold fixed (``reasoning_effort="high"``); the thinking switches the template reads
    (``enable_thinking``, ``thinking``) are varied by the probes. ``special_tokens``: the tokenizer's added
    tokens (better marker boundaries). ``end_tokens``: tokens generation also stops at (generation_config's
    ``eos_token_id`` besides ``eos_token``): end markers, dropped after the end. ``verify_messages``
    generated messages are round-tripped (0: no verification). ``limits`` bounds each render and the whole
    synthesis (``RenderLimits.total_seconds``); ``progress(renders, seconds)`` is called after each render.
    The chat template is compiled and rendered only in a bounded child process. Raises ``SynthesisError``
    (``RenderError``, ``NotInferableError``, ``MissingDependencyError``) with a code and the probe at fault.
    """
    for key in RESERVED_KWARGS:
        if key in template_kwargs:
            raise UsageError(f"synthesize_template: {key!r} is set by the probes; expected template keyword "
                             "arguments such as bos_token/eos_token", code="bad_option", key=key)
    check_source(chat_template)
    tokens = [v for k, v in template_kwargs.items() if k in SPECIAL_TOKEN_KEYS and isinstance(v, str)]
    stops = [t for t in end_tokens if isinstance(t, str) and t]
    lexer = Lexer([*tokens, *special_tokens, *stops])
    from chatparse.synthesize.emit import emit

    with Renderer(chat_template, template_kwargs, limits, progress) as renderer:
        session = Session(renderer, renderer.variables(), lexer)
        eos, pad = template_kwargs.get("eos_token"), template_kwargs.get("pad_token")
        try:
            fmt = LayoutInference(session, eos if isinstance(eos, str) else None,
                                  pad if isinstance(pad, str) else None, stops).run()
            template = emit(fmt, lexer)
            _check_loads(template)
            report = Verifier(session, fmt, template, lexer).run(verify_messages, seed) if verify_messages else None
        except ChatparseError:
            raise
        except Exception as exc:  # a bug in the inference, not the template's fault: named, never raw
            raise SynthesisError(f"unexpected {type(exc).__name__} while synthesizing: {str(exc)[:200]} (a bug: "
                                 "please report it with the chat template)", code="synthesis_fault") from exc
    return SynthesizedTemplate(template, fmt, report)


def _check_loads(template: Mapping[str, Any]) -> None:
    """The emitted template must load; a load error is an inference gap, named as such."""
    from chatparse.errors import TemplateError
    from chatparse.template.compile import load_template

    try:
        load_template(dict(template))
    except TemplateError as exc:
        raise NotInferableError(f"the inferred format does not make a valid response template: [{exc.code}] {exc}",
                                code="invalid_template", probe="emit") from None


def read_chat_template(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any], list[str], list[str]]:
    """The chat template, the template keyword arguments (the special tokens as transformers passes them),
    the added tokens and the tokens generation stops at (generation_config.json's ``eos_token_id``, by the
    added tokens' ids) of ``path``: a tokenizer_config.json, a ``.jinja`` file (tokens from a
    tokenizer_config.json beside it) or a model directory (its chat_template.jinja wins over the config's,
    as in transformers)."""
    target = Path(path)
    if not target.exists():
        raise SynthesisError(f"expected a tokenizer_config.json, a .jinja chat template or a model directory, found "
                             f"nothing at {target}", code="no_chat_template", path=str(target))
    directory = target if target.is_dir() else target.parent
    config_file = directory / "tokenizer_config.json"
    config: dict[str, Any] = {}
    if target.is_file() and target.suffix == ".json":
        config_file = target
    if config_file.is_file():
        try:
            loaded = json.loads(config_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise SynthesisError(f"{config_file}: expected a JSON tokenizer config, found invalid JSON ({exc})",
                                 code="bad_tokenizer_config", path=str(config_file)) from None
        except RecursionError:
            raise SynthesisError(f"{config_file}: expected a JSON tokenizer config, found JSON nested too deeply "
                                 "to read (thousands of levels)", code="bad_tokenizer_config",
                                 path=str(config_file)) from None
        config = loaded if isinstance(loaded, dict) else {}
    source = _chat_template_source(target, directory, config)
    kwargs: dict[str, Any] = {}
    for key in SPECIAL_TOKEN_KEYS:
        token = _token_text(config.get(key))
        if token is not None:
            kwargs[key] = token
    decoder = config.get("added_tokens_decoder") or {}
    added = [t for v in decoder.values() if isinstance(v, dict) and v.get("special", True) and (t := _token_text(v))]
    return source, kwargs, added, _stop_tokens(directory, decoder)


def _stop_tokens(directory: Path, decoder: Mapping[str, Any]) -> list[str]:
    """The tokens of generation_config.json's ``eos_token_id`` (an id or a list), named by the added tokens."""
    path = directory / "generation_config.json"
    try:
        ids = json.loads(path.read_text(encoding="utf-8")).get("eos_token_id") if path.is_file() else None
    except (ValueError, UnicodeDecodeError, AttributeError, RecursionError):
        return []
    ids = ids if isinstance(ids, list) else [ids]
    names = [_token_text(decoder.get(str(i))) for i in ids if isinstance(i, int)]
    return [n for n in names if n]


def _chat_template_source(target: Path, directory: Path, config: Mapping[str, Any]) -> str:
    if target.is_file() and target.suffix != ".json":
        return _read_jinja(target)
    jinja = directory / "chat_template.jinja"
    if target.is_dir() and jinja.is_file():
        return _read_jinja(jinja)
    found = config.get("chat_template")
    if isinstance(found, list):  # named templates: the default one, else the first
        named = {t.get("name"): t.get("template") for t in found if isinstance(t, dict)}
        found = named.get("default") or next(iter(named.values()), None)
    if isinstance(found, str) and found.strip():
        return found
    if jinja.is_file():
        return _read_jinja(jinja)
    raise SynthesisError(f"expected a chat template in {target} (a tokenizer_config.json 'chat_template', a "
                         "chat_template.jinja or a .jinja file), found none", code="no_chat_template",
                         path=str(target))


def _read_jinja(path: Path) -> str:
    from chatparse.integrations.tokenizer_config import ChatTemplateFileError, read_chat_template_file

    try:
        return read_chat_template_file(path)
    except ChatTemplateFileError as exc:  # the synthesis's own error class, same code and words
        raise SynthesisError(exc.message, code=exc.code, path=exc.path, offset=exc.offset) from None


def _token_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


__all__ = [
    "MissingDependencyError",
    "NotInferableError",
    "RenderError",
    "RenderLimits",
    "Report",
    "SynthesisError",
    "SynthesizedTemplate",
    "read_chat_template",
    "synthesize_template",
]
