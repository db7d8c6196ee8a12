"""Render a chat template as transformers' ``apply_chat_template`` does (transformers' own renderer: its
sandboxed Jinja environment with ``raise_exception``, ``tojson``, ``strftime_now`` and the reasoning-field
aliases), in a child process bounded in time, memory and output size: a chat template is code from a model
hub and may loop or render without end. Compiling it is work the template can make expensive too (Jinja
folds constant expressions while compiling: ``{{ 10 ** (10 ** 10) }}``), so the child compiles it as well;
the parent only reads the source text. The child dies with its parent, and one overall budget bounds a
whole synthesis. jinja2 and transformers are imported on first use."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chatparse.synthesize.errors import MissingDependencyError, RenderError

INSTALL_HINT = "from a chatparse checkout: pip install '.[transformers]' (chatparse is not on PyPI)"
MAX_TEMPLATE_CHARS = 1 << 20
COMPILE = "compile"  # the probe name of compiling the template (the child's first job)


@dataclass(frozen=True)
class RenderLimits:
    """Bounds of the renderer: ``seconds`` of wall clock for one render (compiling included), ``max_chars``
    characters of output, ``max_memory`` bytes the child may add, and ``total_seconds`` of wall clock for
    every render of one ``Renderer`` (a whole synthesis: a few hundred renders, milliseconds each for a real
    chat template)."""

    seconds: float = 10.0
    max_chars: int = 2_000_000
    max_memory: int = 2 << 30
    total_seconds: float = 300.0


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


def check_source(chat_template: Any) -> str:
    """The checks the parent makes on a chat template: a non-empty string of bounded size (nothing compiled)."""
    if not isinstance(chat_template, str) or not chat_template.strip():
        raise RenderError(f"expected a chat template (Jinja source text), found {type(chat_template).__name__} "
                          f"{str(chat_template)[:40]!r}", code="bad_chat_template")
    if len(chat_template) > MAX_TEMPLATE_CHARS:
        raise RenderError(f"expected a chat template of at most {MAX_TEMPLATE_CHARS} characters, found "
                          f"{len(chat_template)}", code="chat_template_too_large")
    return chat_template


def template_variables(chat_template: str, limits: RenderLimits | None = None) -> frozenset[str]:
    """The names a chat template reads from its context (``enable_thinking``, ``tools``, ...), from its
    syntax tree, compiled in the bounded child (``Renderer.variables``). A template Jinja cannot compile is
    a ``RenderError`` (``bad_chat_template``, ``chat_template_too_deep``)."""
    check_source(chat_template)
    with Renderer(chat_template, limits=limits) as renderer:
        return renderer.variables()


def _compile_and_read(chat_template: str) -> tuple[str, Any]:
    """In the child: compile the template (transformers' cached compile, which its renders reuse) and read
    the names it uses; ``("vars", names)`` or ``("bad", (code, message))``."""
    import jinja2
    from jinja2 import meta
    from transformers.utils.chat_template_utils import _compile_jinja_template

    try:
        environment = _compile_jinja_template(chat_template).environment
        return "vars", sorted(meta.find_undeclared_variables(environment.parse(chat_template)))
    except jinja2.TemplateSyntaxError as exc:
        return "bad", ("bad_chat_template", f"the chat template is not valid Jinja: {exc.message} (line {exc.lineno})")
    except (RecursionError, SyntaxError) as exc:  # Jinja's parser, or Python's limits on the generated code
        why = "Jinja's parser recursed too deeply" if isinstance(exc, RecursionError) else \
            f"Python refused the compiled code: {exc.msg}"
        return "bad", ("chat_template_too_deep",
                       f"expected a chat template Jinja can compile, found one nested too deeply ({why}: blocks or "
                       "expressions nested hundreds of levels); real chat templates nest a few levels: check that "
                       "the file is the chat template")
    except MemoryError:
        return "too_large", -1
    except Exception as exc:  # constant folding runs the template's own arithmetic (int-string limits, ...)
        return "bad", ("bad_chat_template",
                       f"expected a chat template Jinja can compile, found one that fails while compiling: "
                       f"{type(exc).__name__}: {str(exc)[:300]}")


def _tie_to_parent(parent: int) -> None:
    """End this (child) process when ``parent`` ends, however it ends (SIGTERM, SIGKILL, a crash): Linux's
    ``PR_SET_PDEATHSIG``, else a thread that watches the parent id. Ctrl-C is the parent's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, signal.SIGKILL, 0, 0, 0) == 0:  # 1: PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the parent ended before the call
                os._exit(0)
            return
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="chatparse-render-watch").start()


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


def _serve(conn: Any, parent: int, chat_template: str, template_kwargs: Mapping[str, Any], max_chars: int,
           max_memory: int) -> None:
    """The child: compile the template or render each request received on ``conn``, and send back
    ``(kind, value)``."""
    _tie_to_parent(parent)
    _limit_memory(max_memory)
    from transformers.utils.chat_template_utils import render_jinja_template

    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        if job == COMPILE:
            conn.send(_compile_and_read(chat_template))
            continue
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


Progress = Callable[[int, float], None]  # (renders so far, seconds used of the overall budget)


class Renderer:
    """Renders requests one by one in a child process (started on first use, restarted after a kill).

    The child compiles the template (``variables``) and renders it. A render (or the compile) that takes
    longer than ``limits.seconds``, or produces more than ``limits.max_chars`` characters or more memory than
    ``limits.max_memory``, is a ``RenderError`` naming the probe; so is running past ``limits.total_seconds``
    over all renders (``synthesis_timeout``). A render the template refuses is returned as a ``Failure``.
    ``progress`` is called after each render. Use as a context manager (or call ``close``).
    """

    def __init__(self, chat_template: str, template_kwargs: Mapping[str, Any] | None = None,
                 limits: RenderLimits | None = None, progress: Progress | None = None) -> None:
        require_renderer()
        self.chat_template = check_source(chat_template)
        self.template_kwargs = dict(template_kwargs or {})
        self.limits = limits or RenderLimits()
        self.progress = progress
        self.count = 0
        self._started = time.monotonic()
        self._process: Any = None
        self._conn: Any = None

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:  # an error or Ctrl-C: the child may be mid-render, end it now
            self._kill()
        else:
            self.close()

    @property
    def elapsed(self) -> float:
        """Seconds since the renderer was made (what ``limits.total_seconds`` bounds)."""
        return time.monotonic() - self._started

    def _start(self) -> None:
        methods = multiprocessing.get_all_start_methods()
        context: Any = multiprocessing.get_context("fork" if "fork" in methods and os.name == "posix" else "spawn")
        parent, child = context.Pipe()
        process = context.Process(
            target=_serve, daemon=True, name="chatparse-render",
            args=(child, os.getpid(), self.chat_template, self.template_kwargs, self.limits.max_chars,
                  self.limits.max_memory))
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

    def variables(self) -> frozenset[str]:
        """The names the chat template reads from its context, compiled and read in the child."""
        kind, value = self._ask(COMPILE, COMPILE)
        if kind == "vars":
            return frozenset(value)
        code, message = value
        raise RenderError(message, code=code, probe=COMPILE)

    def render(self, requests: Iterable[Request]) -> list[str | Failure]:
        """The rendered text of each request, or the template's own ``Failure``."""
        return [self.render_one(request) for request in requests]

    def render_one(self, request: Request) -> str | Failure:
        job = ([dict(m) for m in request.messages], None if request.tools is None else list(request.tools),
               request.add_generation_prompt, dict(request.switches))
        kind, value = self._ask(job, request.probe)
        self.count += 1
        if self.progress is not None:
            self.progress(self.count, self.elapsed)
        if kind == "ok":
            return str(value)
        return Failure(request.probe, str(value))

    def _ask(self, job: Any, probe: str) -> tuple[str, Any]:
        """Send ``job`` to the child and wait for its reply within the time that is left."""
        left = self.limits.total_seconds - self.elapsed
        if left <= 0:
            raise self._out_of_budget(probe)
        if self._process is None or not self._process.is_alive():
            self._kill()
            self._start()
        wait = min(self.limits.seconds, left)
        what = "compiling the chat template" if probe == COMPILE else f"rendering probe {probe!r}"
        try:
            self._conn.send(job)
            ready = self._conn.poll(wait)
        except (OSError, ValueError) as exc:
            self._kill()
            raise RenderError(f"{what}: could not send the job to the renderer: {exc}",
                              code="render_crashed", probe=probe) from None
        if not ready:
            self._kill()
            if wait < self.limits.seconds:
                raise self._out_of_budget(probe)
            raise RenderError(
                f"{what} did not finish within {self.limits.seconds:g} s; expected a chat template that compiles "
                "and renders in bounded time (it loops, renders without end, or computes huge constants)",
                code="render_timeout", probe=probe)
        try:
            kind, value = self._conn.recv()
        except (EOFError, OSError):
            self._kill()
            raise RenderError(
                f"the renderer died while {what} (past the memory limit of "
                f"{self.limits.max_memory >> 20} MiB?); expected a chat template that renders a bounded text",
                code="render_too_large", probe=probe) from None
        if kind == "too_large":
            self._kill()
            found = "more than the memory limit" if value < 0 else f"{value} characters"
            raise RenderError(
                f"{what} produced {found}; expected at most "
                f"{self.limits.max_chars} characters (the template renders without bound)",
                code="render_too_large", probe=probe)
        return kind, value

    def _out_of_budget(self, probe: str) -> RenderError:
        return RenderError(
            f"the synthesis used its whole time budget of {self.limits.total_seconds:g} s "
            f"(RenderLimits.total_seconds) after {self.count} renders, at probe {probe!r}; expected a chat "
            "template whose renders take milliseconds. Raise the budget (the CLI's --time-limit) for a slow "
            "machine, or check the template for expensive loops.",
            code="synthesis_timeout", probe=probe, renders=self.count)
