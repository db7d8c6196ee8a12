"""What layout inference finds (``Format``: prompts, reasoning, calls, ends, anchors) and how it asks the
chat template (``Session``, and ``_Probing``: renders after the user turn, the base conversation, the
thinking switches, the evidence notes)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatparse.synthesize import probes as P
from chatparse.synthesize.calls import CallFormat
from chatparse.synthesize.errors import NotInferableError, RenderError
from chatparse.synthesize.render import Failure, Renderer, Request
from chatparse.synthesize.text import Lexer

THINKING_SWITCHES = ("enable_thinking", "thinking")


@dataclass(frozen=True)
class Prompt:
    """A generation prompt: its label (``default``, ``enable_thinking=False``, ``after a tool result``, ...),
    its switches, its full text and what it writes after the assistant header (``prefill``)."""

    label: str
    switches: Mapping[str, Any]
    after_tool: bool
    text: str
    prefill: str = ""


@dataclass(frozen=True)
class Reasoning:
    open: str
    close: str


@dataclass
class Format:
    """Everything inferred about one chat template's assistant turn."""

    anchors: list[str]
    reasoning: Reasoning | None
    content_open: str
    content_close: str
    glue: list[str]
    end: list[str]
    discard: list[str]
    next_turn: list[str]
    calls: CallFormat | None
    form: P.Form
    prompts: list[Prompt]
    with_system: bool
    switches: list[tuple[str, dict[str, Any]]]
    evidence: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    calls_end_turn: bool = False


class Session:
    """Renders probe conversations through one ``Renderer`` and caches them by probe name."""

    def __init__(self, renderer: Renderer, variables: frozenset[str], lexer: Lexer) -> None:
        self.renderer = renderer
        self.variables = variables
        self.lexer = lexer
        self.with_system = True
        self._cache: dict[tuple[Any, ...], str | Failure] = {}

    def base(self) -> list[dict[str, Any]]:
        return P.base(self.with_system)

    def render(self, probe: str, messages: Sequence[Mapping[str, Any]], generation_prompt: bool = False,
               switches: Mapping[str, Any] | None = None) -> str | Failure:
        key = (probe, json.dumps(messages, sort_keys=True, default=str), generation_prompt,
               tuple(sorted((switches or {}).items())))
        if key not in self._cache:
            self._cache[key] = self.renderer.render_one(
                Request(probe, messages, generation_prompt, dict(switches or {}), P.TOOLS))
        return self._cache[key]


def _after(text: str, sentinel: str) -> str | None:
    at = text.rfind(sentinel)
    return None if at < 0 else text[at + len(sentinel):]


class _Probing:
    """Asks the chat template (a base of ``LayoutInference``)."""

    def __init__(self, session: Session, eos: str | None, pad: str | None, stops: Sequence[str] = ()) -> None:
        self.s = session
        self.lexer = session.lexer
        self.eos, self.pad = eos, pad
        self.stops = list(stops)
        self.evidence: list[tuple[str, str]] = []
        self.notes: list[str] = []
        self.section_one = ""
        self.header_ends: list[str] = []  # end markers that are the next message's header (GLM's <|user|>)

    def note(self, topic: str, text: str) -> None:
        self.evidence.append((topic, text))

    def after_user(self, probe: str, messages: Sequence[Mapping[str, Any]], generation_prompt: bool = False,
                   switches: Mapping[str, Any] | None = None) -> str | Failure:
        rendered = self.s.render(probe, messages, generation_prompt, switches)
        if isinstance(rendered, Failure):
            return rendered
        tail = _after(rendered, P.USER)
        if tail is None:
            raise NotInferableError(f"probe {probe!r}: expected the user message {P.USER!r} in the render, found "
                                    "it missing (the template drops or rewrites user messages)",
                                    code="user_not_rendered", probe=probe)
        return tail

    def choose_base(self) -> None:
        first = self.s.render("prompt", self.s.base(), True)
        if isinstance(first, Failure):
            self.s.with_system = False
            second = self.s.render("prompt", self.s.base(), True)
            if isinstance(second, Failure):
                hint = ""
                if "_token' is undefined" in first.reason:
                    hint = (" (the template reads the tokenizer's special tokens: pass them, e.g. "
                            "bos_token='<s>', eos_token='</s>', or give the tokenizer_config.json)")
                raise RenderError(f"the chat template fails to render a system and a user message: "
                                  f"{first.reason}{hint}", code="render_failed", probe="prompt")
            self.note("prompt", f"the template refuses a system message ({first.reason[:120]}); probes start with "
                                "the user message")

    def switches(self) -> list[tuple[str, dict[str, Any]]]:
        read = [name for name in THINKING_SWITCHES if name in self.s.variables]
        out: list[tuple[str, dict[str, Any]]] = [("default", {})]
        for name in read:
            out += [(f"{name}=True", {name: True}), (f"{name}=False", {name: False})]
        if len(read) > 1:
            out += [("all thinking switches on", dict.fromkeys(read, True)),
                    ("all thinking switches off", dict.fromkeys(read, False))]
        return out

    def _required(self, rendered: str | Failure, probe: str) -> str:
        if isinstance(rendered, Failure):
            raise RenderError(f"probe {probe!r}: the chat template failed to render: {rendered.reason}",
                              code="render_failed", probe=rendered.probe)
        return rendered
