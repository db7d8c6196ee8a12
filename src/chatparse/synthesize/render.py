"""Render a chat template as transformers' ``apply_chat_template`` does (transformers' own renderer: its
sandboxed Jinja environment with ``raise_exception``, ``tojson``, ``strftime_now`` and the reasoning-field
aliases), in a child process bounded in time, memory and output size: a chat template is code from a model
hub and may loop or render without end. jinja2 and transformers are imported on first use."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatparse.synthesize.errors import MissingDependencyError, RenderError

INSTALL_HINT = "from a chatparse checkout: pip install '.[transformers]' (chatparse is not on PyPI)"
MAX_TEMPLATE_CHARS = 1 << 20


@dataclass(frozen=True)
class RenderLimits:
    """Bounds of one render: wall-clock seconds, characters of output, bytes of memory the renderer may add."""

    seconds: float = 10.0
    max_chars: int = 2_000_000
    max_memory: int = 2 << 30


@dataclass(frozen=True)
class Request:
    """One conversation to render: ``probe`` names it in reports and errors; ``switches`` are the template
    keyword arguments of this render (``enable_thinking``, ...) on top of the synthesis-wide ones."""

    probe: str
    messages: Sequence[Mapping[str, Any]]
    add_generation_prompt: bool = False
    switches: Mapping[str, Any] = field(default_factory=dict)
    tools: Sequence[Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class Failure:
    """A render the template itself refused (``raise_exception``, a type error on unexpected input)."""

    probe: str
    reason: str


def require_renderer() -> None:
    """Import jinja2 and transformers' chat-template renderer, or say what to install."""
    try:
        import jinja2  # noqa: F401
        from transformers.utils import chat_template_utils  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError(
            f"synthesizing a response template renders the chat template with transformers' renderer; "
            f"expected jinja2 and transformers to be installed, found {exc.name or exc} missing. Install them "
            f"with `{INSTALL_HINT}`.", code="missing_dependency") from None


def template_variables(chat_template: str) -> frozenset[str]:
    """The names a chat template reads from its context (``enable_thinking``, ``tools``, ...), from its
    syntax tree (nothing is executed). A syntax error is a ``RenderError`` (``bad_chat_template``)."""
    if not isinstance(chat_template, str) or not chat_template.strip():
        raise RenderError(f"expected a chat template (Jinja source text), found {type(chat_template).__name__} "
                          f"{str(chat_template)[:40]!r}", code="bad_chat_template")
    if len(chat_template) > MAX_TEMPLATE_CHARS:
        raise RenderError(f"expected a chat template of at most {MAX_TEMPLATE_CHARS} characters, found "
                          f"{len(chat_template)}", code="chat_template_too_large")
    require_renderer()
    import jinja2
    from jinja2 import meta

    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template

        environment = _compile_jinja_template(chat_template).environment
        tree = environment.parse(chat_template)
    except jinja2.TemplateSyntaxError as exc:
        raise RenderError(f"the chat template is not valid Jinja: {exc.message} (line {exc.lineno})",
                          code="bad_chat_template") from None
    except RecursionError:
        raise RenderError("expected a chat template Jinja can compile, found one nested too deeply for its "
                          "parser (blocks or expressions nested hundreds of levels); real chat templates nest "
                          "a few levels: check that the file is the chat template", code="chat_template_too_deep") from None
    return frozenset(meta.find_undeclared_variables(tree))


def _limit_memory(extra: int) -> None:
    """Cap the address space of this (child) process at its current size plus ``extra`` bytes (Linux)."""
    try:
        import resource

        with open("/proc/self/status", encoding="ascii") as status:
            line = next(row for row in status if row.startswith("VmSize:"))
        current = int(line.split()[1]) * 1024
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = current + extra
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, OSError, StopIteration, ValueError):
        pass  # not Linux: time and output size are still bounded


def _serve(conn: Any, chat_template: str, template_kwargs: Mapping[str, Any], max_chars: int,
           max_memory: int) -> None:
    """The child: render each request received on ``conn`` and send back ``(kind, value)``."""
    _limit_memory(max_memory)
    from transformers.utils.chat_template_utils import render_jinja_template

    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        messages, tools, generation_prompt, switches = job
        try:
            result: Any = render_jinja_template(
                conversations=[messages], tools=tools, chat_template=chat_template,
                add_generation_prompt=generation_prompt, **{**template_kwargs, **switches})
            text = str(result[0][0])  # (rendered conversations, generation indices)
            reply = ("ok", text) if len(text) <= max_chars else ("too_large", len(text))
        except MemoryError:
            reply = ("too_large", -1)
        except RecursionError:
            reply = ("error", "RecursionError: the template recursed too deeply")
        except Exception as exc:  # the template's own failure is data for the probes
            reply = ("error", f"{type(exc).__name__}: {exc}"[:2000])
        conn.send(reply)


class Renderer:
    """Renders requests one by one in a child process (started on first use, restarted after a kill).

    A render that takes longer than ``limits.seconds``, or produces more than ``limits.max_chars``
    characters or more memory than ``limits.max_memory``, is a ``RenderError`` naming the probe. A render
    the template refuses is returned as a ``Failure``. Use as a context manager (or call ``close``).
    """

    def __init__(self, chat_template: str, template_kwargs: Mapping[str, Any] | None = None,
                 limits: RenderLimits | None = None) -> None:
        require_renderer()
        self.chat_template = chat_template
        self.template_kwargs = dict(template_kwargs or {})
        self.limits = limits or RenderLimits()
        self.count = 0
        self._process: Any = None
        self._conn: Any = None

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        methods = multiprocessing.get_all_start_methods()
        context: Any = multiprocessing.get_context("fork" if "fork" in methods and os.name == "posix" else "spawn")
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve, daemon=True, name="chatparse-render",
            args=(child, self.chat_template, self.template_kwargs, self.limits.max_chars, self.limits.max_memory))
        process.start()
        child.close()
        self._process, self._conn = process, parent

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join(5)
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.send(None)
            except (OSError, ValueError):
                pass
        if self._process is not None:
            self._process.join(2)
        self._kill()

    def render(self, requests: Iterable[Request]) -> list[str | Failure]:
        """The rendered text of each request, or the template's own ``Failure``."""
        return [self.render_one(request) for request in requests]

    def render_one(self, request: Request) -> str | Failure:
        if self._process is None or not self._process.is_alive():
            self._kill()
            self._start()
        self.count += 1
        job = ([dict(m) for m in request.messages], None if request.tools is None else list(request.tools),
               request.add_generation_prompt, dict(request.switches))
        try:
            self._conn.send(job)
            ready = self._conn.poll(self.limits.seconds)
        except (OSError, ValueError) as exc:
            self._kill()
            raise RenderError(f"could not send probe {request.probe!r} to the renderer: {exc}",
                              code="render_crashed", probe=request.probe) from None
        if not ready:
            self._kill()
            raise RenderError(
                f"rendering probe {request.probe!r} did not finish within {self.limits.seconds:g} s; expected a "
                "chat template that renders in bounded time (it loops or renders without end)",
                code="render_timeout", probe=request.probe)
        try:
            kind, value = self._conn.recv()
        except (EOFError, OSError):
            self._kill()
            raise RenderError(
                f"the renderer died while rendering probe {request.probe!r} (past the memory limit of "
                f"{self.limits.max_memory >> 20} MiB?); expected a chat template that renders a bounded text",
                code="render_too_large", probe=request.probe) from None
        if kind == "ok":
            return str(value)
        if kind == "too_large":
            self._kill()
            found = "more than the memory limit" if value < 0 else f"{value} characters"
            raise RenderError(
                f"rendering probe {request.probe!r} produced {found}; expected at most "
                f"{self.limits.max_chars} characters (the template renders without bound)",
                code="render_too_large", probe=request.probe)
        return Failure(request.probe, str(value))
