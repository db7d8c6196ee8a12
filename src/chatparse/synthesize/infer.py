"""Infer a response format from the differences between renders of one chat template: the assistant
header (the start anchor), what each generation prompt pre-writes, the reasoning markers, a content wrapper,
the end-of-turn markers, the next-turn headers and (in ``calls``) how tool calls are written. Every fact is
recorded with the probe pair that showed it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from chatparse.synthesize import probes as P
from chatparse.synthesize.calls import CallFormat, CallInference, CallSyntaxError, Sections
from chatparse.synthesize.errors import NotInferableError, RenderError
from chatparse.synthesize.render import Failure, Renderer, Request
from chatparse.synthesize.text import Lexer
from chatparse.synthesize.write import NoWrittenForm, written_form

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


class LayoutInference:
    """The assistant turn's layout, step by step (see the module docstring)."""

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

    # --- renders ---------------------------------------------------------------------------------

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

    # --- the steps ---------------------------------------------------------------------------------

    def run(self) -> Format:
        self.choose_base()
        switches = self.switches()
        base = self.s.base()
        form = P.Form()
        prompts = {label: self._required(self.after_user(f"prompt ({label})", base, True, sw), "prompt")
                   for label, sw in switches}
        msg_c = [*base, P.assistant(form, content=P.CONTENT)]
        msg_e = [*base, P.assistant(form, content="")]
        x_c = self._required(self.after_user("content only", msg_c), "content only")
        x_e = self.after_user("empty message", msg_e)
        x_rc, reasoning_form = self._reasoning_render(base)
        if P.CONTENT not in x_c:
            raise NotInferableError(f"probe 'content only': expected the assistant's content {P.CONTENT!r} in the "
                                    f"render, found {x_c[:200]!r}", code="content_not_rendered", probe="content only")
        x_call = self.after_user("one call (header)", [*base, P.assistant(form, calls=[P.CALL_A])])
        lead = self._lead(prompts, [x_c] + [x for x in (x_rc, x_call) if isinstance(x, str)])
        reasoning, lead = self._reasoning(lead, x_rc)
        body_c = x_c[len(lead):]
        pre_c, post_c = body_c.split(P.CONTENT, 1)
        content_open = self._strip_reasoning(pre_c, reasoning).strip()
        glue = self._glue(x_rc[len(lead):] if x_rc else None, reasoning, content_open)
        if content_open:
            self.note("content", f"content is preceded by {content_open!r} ('content only' probe; dropped)")
        ref_e = x_e[len(lead):] if isinstance(x_e, str) and x_e.startswith(lead) else None
        stoppers = [m for m in (self.lexer.leading_marker(post_c), self.eos) if m]
        calls, form, sections_post, call_bodies = self._calls(lead, base, ref_e or pre_c + post_c, reasoning,
                                                              content_open, reasoning_form, stoppers)
        end, content_close, calls_end = self._end(post_c, sections_post, content_open, calls, base, form,
                                                  [body_c[: len(pre_c) + len(P.CONTENT)], *call_bodies])
        anchors = self._anchors(lead, base, form, reasoning)
        full_prompts = self._prompts(switches, anchors, base, form, calls is not None)
        if reasoning is None:
            reasoning = self._reasoning_from_prompts(full_prompts, body_c, base)
        inner = [x_c[len(lead):], *call_bodies] + ([x_rc[len(lead):]] if x_rc else [])
        closers = [reasoning.close] if reasoning is not None else []
        next_turn = self._next_turn(base, form, end, [content_close, *closers], calls, inner)
        discard = list(dict.fromkeys(t for t in (self.eos, *self.stops, self.pad) if t))
        for token in discard:
            if token not in end:
                end.append(token)
        return Format(anchors=anchors, reasoning=reasoning, content_open=content_open, content_close=content_close,
                      glue=glue, end=end, discard=discard, next_turn=next_turn, calls=calls,
                      form=P.with_form(form, reasoning=reasoning_form), prompts=full_prompts,
                      with_system=self.s.with_system, switches=switches, evidence=self.evidence, notes=self.notes,
                      calls_end_turn=calls_end)

    def _lead(self, prompts: Mapping[str, str], probes: Sequence[str]) -> str:
        """What every generation prompt and assistant probe writes after the user message (the user turn's
        end and the assistant header); a prompt that changes the user message itself is left out."""
        first = probes[0]
        lead = first[: self.lexer.prefix_len([prompts["default"], *probes])]
        shared = [label for label, text in prompts.items() if self.lexer.prefix_len([text, lead]) > 0]
        for label in sorted(set(prompts) - set(shared)):
            self.note("header", f"the prompt '{label}' changes the user message itself (its header is checked "
                                "against the other prompts only)")
        lead = first[: self.lexer.prefix_len([*(prompts[label] for label in shared), *probes])]
        self.note("header", f"every render continues the user message with {lead!r} (common prefix of the "
                            f"generation prompts {sorted(shared)} and the assistant probes)")
        return lead

    def _glue(self, body_rc: str | None, reasoning: Reasoning | None, content_open: str) -> list[str]:
        """What the template writes between the reasoning's close and the content's opener (gpt-oss'
        ``<|start|>assistant``), dropped."""
        if reasoning is None or body_rc is None:
            return []
        mid = body_rc.split(P.REASONING, 1)[1].split(P.CONTENT, 1)[0]
        rest = mid.strip()[len(reasoning.close):].strip()
        if content_open and rest.endswith(content_open):
            rest = rest[: len(rest) - len(content_open)].strip()
        if not rest:
            return []
        self.note("reasoning", f"between the reasoning's close and the content the template writes {rest!r} "
                               "(dropped)")
        return [rest]

    def _required(self, rendered: str | Failure, probe: str) -> str:
        if isinstance(rendered, Failure):
            raise RenderError(f"probe {probe!r}: the chat template failed to render: {rendered.reason}",
                              code="render_failed", probe=rendered.probe)
        return rendered

    # --- reasoning ---------------------------------------------------------------------------------

    def _reasoning_render(self, base: list[dict[str, Any]]) -> tuple[str | None, str]:
        """The render of a message whose reasoning shows: reasoning + content (reasoning as a field, else
        as content blocks), else reasoning + a call (templates that keep reasoning only in tool-call turns).
        Returns the render (cut after the reasoning's close for the call form) and the reasoning form."""
        for how, with_call in (("field", False), ("blocks", False), ("field", True)):
            form = P.Form(reasoning=how)
            message = (P.assistant(form, reasoning=P.REASONING, calls=[P.CALL_A]) if with_call
                       else P.assistant(form, content=P.CONTENT, reasoning=P.REASONING))
            text = self.after_user(f"reasoning + {'a call' if with_call else 'content'} ({how})", [*base, message])
            if not isinstance(text, str) or P.REASONING not in text:
                continue
            before, after = text.split(P.REASONING, 1)
            if with_call:
                close = self.lexer.leading_marker(after)
                if close and P.CALL_A.name in after:
                    self.note("reasoning", "reasoning is rendered only beside tool calls ('reasoning + a call' probe)")
                    return before + P.REASONING + after[: after.find(close) + len(close)] + P.CONTENT, how
            elif P.CONTENT in after and self.lexer.markers(after.split(P.CONTENT, 1)[0]):  # not a repr
                return text, how
        return None, "field"

    def _reasoning(self, lead: str, x_rc: str | None) -> tuple[Reasoning | None, str]:
        """The reasoning markers from the 'reasoning + content' render, and the header without an opener
        the prompt pre-writes."""
        if x_rc is None:
            return None, lead
        pre_r, rest = x_rc[len(lead):].split(P.REASONING, 1)
        mid = rest.split(P.CONTENT, 1)[0]
        opener = pre_r.strip()
        if not opener:
            opener = self.lexer.trailing_marker(lead)
            if not opener:
                self.notes.append("reasoning is rendered, but nothing marks where it starts (no opener before it "
                                  "and none at the end of the header); reasoning is not parsed")
                return None, lead
            lead = lead[: lead.rstrip().rfind(opener)]
            self.note("reasoning", f"every generation prompt and render writes {opener!r} right before the reasoning: "
                                   "the prompt pre-opens it (taken out of the header)")
        else:
            self.note("reasoning", f"'reasoning + content' writes {opener!r} before the reasoning where 'content only' "
                                   "does not")
        close = self.lexer.leading_marker(mid) or mid.strip()
        if not close:
            self.notes.append("reasoning is rendered, but nothing separates it from the content; reasoning is not "
                              "parsed")
            return None, lead
        self.note("reasoning", f"{close!r} follows the reasoning ('reasoning + content' probe)")
        return Reasoning(opener, close), lead

    def _strip_reasoning(self, text: str, reasoning: Reasoning | None) -> str:
        """``text`` without a leading empty reasoning block or lone reasoning close (a template that writes
        an empty block for every message, or the close after a pre-opened prompt)."""
        if reasoning is None:
            return text
        stripped = text.lstrip()
        if stripped.startswith(reasoning.open) and stripped[len(reasoning.open):].lstrip().startswith(reasoning.close):
            stripped = stripped[len(reasoning.open):].lstrip()
        if stripped.startswith(reasoning.close):
            return stripped[len(reasoning.close):]
        return text

    def _reasoning_from_prompts(self, prompts: Sequence[Prompt], body_c: str,
                                base: list[dict[str, Any]]) -> Reasoning | None:
        """Reasoning the template never renders, from what its prompts pre-write: one opens ``<X>``, and
        another prompt or the history writes ``</X>``, or the template cuts a message's content at ``</X>``
        (it strips reasoning the model wrote before it)."""
        texts = [p.prefill for p in prompts] + [body_c]
        for prompt in prompts:
            opener = prompt.prefill.strip()
            if not (self.lexer.is_marker(opener) and opener.startswith("<") and not opener.startswith("</")):
                continue
            close = "</" + opener[1:]
            if any(close in t for t in texts):
                how = f"{close!r} is written elsewhere (other prompts, history)"
            else:
                message = P.assistant(P.Form(), content=P.REASONING + close + P.CONTENT)
                renders = [self.after_user("content with a reasoning close", [*base, message]),
                           self.after_user("content with a reasoning close, in history",
                                           [*base, message, {"role": "user", "content": P.USER_2}])]
                if not any(isinstance(r, str) and P.CONTENT in r and P.REASONING not in r for r in renders):
                    continue
                how = f"the template cuts a message's content at {close!r} (what comes before is reasoning)"
            self.note("reasoning", f"never rendered from a message; the prompt '{prompt.label}' pre-writes {opener!r} "
                                   f"and {how}")
            self.notes.append("reasoning is not rendered by this template (its markers come from the generation "
                              "prompts); reasoning round-trips are not checked")
            return Reasoning(opener, close)
        return None

    # --- calls -------------------------------------------------------------------------------------

    def _section(self, body: str, ref: str, reasoning: Reasoning | None,
                 content_open: str) -> tuple[str, str]:
        """The call section of ``body`` (what it has beyond ``ref``, the empty message) and the text after it."""
        p = self.lexer.prefix_len([body, ref])
        s = self.lexer.suffix_len([body[p:], ref[p:]])
        section = body[p: len(body) - s]
        section = self._strip_reasoning(section, reasoning)
        if content_open and section.lstrip().startswith(content_open):
            section = section.lstrip()[len(content_open):]
        return section.strip(), body[len(body) - s:]

    def _calls(self, lead: str, base: list[dict[str, Any]], ref: str, reasoning: Reasoning | None,
               content_open: str, reasoning_form: str,
               stoppers: Sequence[str]) -> tuple[CallFormat | None, P.Form, str, list[str]]:
        reasons: list[str] = []
        outcomes = set()  # "refused", "dropped" (rendered without the call), "unknown" (rendered, not understood)
        for form in P.FORMS:
            form = P.with_form(form, reasoning=reasoning_form)
            label = form.label()
            one = self.after_user(f"one call ({label})", [*base, P.assistant(form, calls=[P.CALL_A])])
            if isinstance(one, Failure):
                reasons.append(f"{label}: {one.reason[:200]}")
                outcomes.add("refused")
                continue
            if P.CALL_A.name not in one:
                reasons.append(f"{label}: the call's name is not in the render")
                outcomes.add("dropped")
                continue
            body_one = one[len(lead):] if one.startswith(lead) else one
            section_one, post = self._section(body_one, ref, reasoning, content_open)
            bodies = [body_one]
            texts: dict[str, str | None] = {}
            for key, calls in (("two", [P.CALL_A, P.CALL_B]), ("none", [P.CALL_NONE]), ("typed", [P.CALL_TYPED])):
                rendered = self.after_user(f"{key} call(s) ({label})", [*base, P.assistant(form, calls=calls)])
                if isinstance(rendered, Failure) or not rendered.startswith(lead):
                    texts[key] = None
                    continue
                body = rendered[len(lead):]
                bodies.append(body)
                texts[key] = self._section(body, ref, reasoning, content_open)[0]
            two = texts["two"]
            if two is not None and P.CALL_B.name not in two:
                self.notes.append("the template renders only the first of several tool calls")
                two = None
            sections = Sections(section_one, two, texts["none"], texts["typed"])
            try:
                found = CallInference(self.lexer, sections).infer(P.CALL_A, [P.CALL_A, P.CALL_B])
            except CallSyntaxError as exc:
                reasons.append(f"{label}: {exc}")
                outcomes.add("unknown")
                continue
            found, post = _cut_at_end(found, post, stoppers)
            found = replace(self._written(found, sections), lead=body_one[: len(body_one) - len(body_one.lstrip())])
            self.section_one = section_one
            self.note("calls", f"probe form: {label}")
            for line in found.evidence:
                self.note("calls", line)
            return found, form, post, [self._section(b, ref, reasoning, content_open)[0] for b in bodies]
        detail = "; ".join(dict.fromkeys(r.split(": ", 1)[1] for r in reasons))
        if outcomes == {"dropped"} or outcomes == {"dropped", "refused"}:
            raise NotInferableError(f"tool calls are not rendered by this template (a message with calls renders "
                                    f"without them in every form tried: {detail[:600]})", code="calls_not_rendered",
                                    probe="one call")
        if outcomes == {"refused"}:
            raise NotInferableError(f"the template refuses every message with tool calls ({detail[:600]})",
                                    code="calls_refused", probe="one call")
        raise NotInferableError(f"the tool-call syntax could not be inferred: {detail}", code="unknown_call_syntax",
                                probe="one call")

    def _written(self, calls: CallFormat, sections: Sections) -> CallFormat:
        """``calls`` with the form a grammar writes them in (``chatparse.write``), when the renders give one."""
        try:
            form = written_form(calls, sections, self.lexer)
        except NoWrittenForm as exc:
            self.note("calls", f"no written form (tool_grammar needs one): {exc}")
            return calls
        self.note("calls", f"written form: {form['call']!r}" + (f" inside {form['group']}" if "group" in form else ""))
        return replace(calls, write=form)

    # --- the end of the turn -------------------------------------------------------------------------

    def _end(self, post_c: str, post_call: str, content_open: str, calls: CallFormat | None,
             base: list[dict[str, Any]], form: P.Form, inner: Sequence[str]) -> tuple[list[str], str, bool]:
        markers_c = self.lexer.markers(post_c)
        markers_k = self.lexer.markers(post_call) if calls is not None else []
        content_close = ""
        if content_open and len(markers_c) > 1 and markers_c[0] not in markers_k:
            content_close = markers_c.pop(0)
            self.note("content", f"content is followed by {content_close!r} before the end of the turn (dropped)")
        end: list[str] = []
        for found, probe in ((markers_c, "content only"), (markers_k, "one call")):
            if found and found[0] not in end:
                end.append(found[0])
                self.note("end", f"{found[0]!r} ends the turn (first marker after the message, probe '{probe}')")
        calls_end = False
        if calls is not None and not post_call.strip() and calls.section_close.strip():
            calls_end = True
            end.append(calls.section_close.strip())
            self.note("end", f"{calls.section_close.strip()!r} closes the calls and nothing follows it: the turn "
                             "ends there")
        if not end:
            end = self._end_from_next_turns(base, form, calls, inner)
        if not end:
            self.notes.append("no end-of-turn marker: the template writes nothing after the last message and "
                              "nothing distinctive before the next one; the turn ends with the text")
        return end, content_close, calls_end

    def _following(self, base: list[dict[str, Any]], form: P.Form, calls: CallFormat | None,
                   system: bool = False) -> list[tuple[str, str]]:
        """(text between the assistant message and the next message's own text, probe) for a next user
        message, with calls a tool result, and with ``system`` a system message (a header the model does
        not write to end its turn, so a next-turn header, never an end marker)."""
        out = []
        rendered = self.s.render("content, then a user message",
                                 [*base, P.assistant(form, content=P.CONTENT), {"role": "user", "content": P.USER_2}])
        if isinstance(rendered, str) and P.USER_2 in rendered:
            between = rendered[rendered.rfind(P.CONTENT) + len(P.CONTENT): rendered.rfind(P.USER_2)]
            out.append((between, "content, then a user message"))
        rendered = self.s.render("content, then a system message", [
            *base, P.assistant(form, content=P.CONTENT), {"role": "system", "content": P.SYSTEM_2}])
        if system and isinstance(rendered, str) and P.SYSTEM_2 in rendered and P.CONTENT in rendered:
            between = rendered[rendered.rfind(P.CONTENT) + len(P.CONTENT): rendered.rfind(P.SYSTEM_2)]
            out.append((between, "content, then a system message"))
        if calls is not None:
            rendered = self.s.render("one call, then its result", [*base, P.assistant(form, calls=[P.CALL_A]), P.tool_result(form, P.CALL_A)])
            if isinstance(rendered, str) and P.TOOL_RESULT in rendered:
                head = rendered[: rendered.rfind(P.TOOL_RESULT)]
                at = head.rfind(self.section_one) if self.section_one else -1
                if at >= 0:
                    out.append((head[at + len(self.section_one):], "one call, then its result"))
        return out

    def _end_from_next_turns(self, base: list[dict[str, Any]], form: P.Form, calls: CallFormat | None,
                             inner: Sequence[str]) -> list[str]:
        end: list[str] = []
        for between, probe in self._following(base, form, calls):
            marker = self.lexer.leading_marker(between)
            if marker and marker not in end and not any(marker in t for t in inner):
                end.append(marker)
                self.header_ends.append(marker)
                self.note("end", f"nothing is written after the last message; {marker!r} starts what follows it "
                                 f"(probe '{probe}') and ends the turn")
        return end

    def _next_turn(self, base: list[dict[str, Any]], form: P.Form, end: Sequence[str], skip: Sequence[str],
                   calls: CallFormat | None, inner: Sequence[str]) -> list[str]:
        closers = [m for m in (*end, *skip) if m]
        if calls is not None:
            closers += [m.strip() for m in (calls.section_close, calls.item_close) if m.strip()]
        headers: list[str] = []
        for between, probe in self._following(base, form, calls, system=True):
            rest = between.lstrip()
            if any(rest.startswith(h) for h in self.header_ends):
                continue  # the next message's header already ends the turn
            while True:
                closer = next((c for c in closers if rest.startswith(c)), None)
                if closer is None:
                    break
                rest = rest[len(closer):].lstrip()
            marker = self.lexer.leading_marker(rest)
            if not marker or marker in end:
                continue
            if any(marker in t for t in inner):
                longer = rest[: len(marker) + len(_word_after(rest[len(marker):]))]
                if calls is not None and P.CALL_A.name in longer:
                    longer = longer[: longer.find(P.CALL_A.name)]
                if longer == marker or any(longer in t for t in inner):
                    continue
                marker = longer
            if marker not in headers:
                headers.append(marker)
                self.note("next turn", f"{marker!r} starts the next turn (probe '{probe}')")
        return headers

    # --- the assistant header and the prompts ----------------------------------------------------------

    def _shortest_anchor(self, lead: str, before: str) -> str | None:
        """The shortest end of ``lead`` that starts at a marker and does not occur in ``before`` (the prompt
        up to the message before the assistant): the assistant header, without the previous turn's end."""
        tokens = self.lexer.tokens(lead)
        for kinds in ("m", "w"):  # from a marker; failing that, from a word (plain-text headers)
            for start in reversed([a for a, _, kind in tokens if kind in kinds]):
                candidate = lead[start:]
                if candidate.strip() and candidate not in before:
                    return candidate
        return lead if lead.strip() and lead not in before else None

    def _anchors(self, lead: str, base: list[dict[str, Any]], form: P.Form,
                 reasoning: Reasoning | None) -> list[str]:
        default = self._required(self.s.render("prompt", base, True), "prompt")
        anchor = self._shortest_anchor(lead, default[: default.rfind(P.USER)])
        if anchor is None:
            raise NotInferableError(f"expected an assistant header between the user message and the assistant's "
                                    f"text, found {lead!r}", code="no_assistant_header", probe="prompt")
        self.note("header", f"start anchor {anchor!r}: the shortest end of the header that starts at a marker and "
                            "is not in the prompt before it")
        anchors = [anchor]
        history = [*base, P.assistant(form, calls=[P.CALL_A]), P.tool_result(form, P.CALL_A)]
        after_tool = self.s.render("prompt after a tool result", history, True)
        if isinstance(after_tool, Failure) or P.TOOL_RESULT not in after_tool:
            self.notes.append("a tool result could not be rendered; prompts after tool results are not checked")
            return anchors
        if after_tool.rfind(anchor) > after_tool.rfind(P.TOOL_RESULT):
            return anchors
        answer = self.s.render("content after a tool result", [*history, P.assistant(form, content=P.CONTENT)])
        tails = [_after(after_tool, P.TOOL_RESULT) or ""]
        if isinstance(answer, str) and P.TOOL_RESULT in answer:
            tails.append(_after(answer, P.TOOL_RESULT) or "")
        tool_lead = tails[0][: self.lexer.prefix_len(tails)]
        if reasoning is not None and tool_lead.rstrip().endswith(reasoning.open):
            tool_lead = tool_lead[: tool_lead.rstrip().rfind(reasoning.open)]
        second = self._shortest_anchor(tool_lead, after_tool[: after_tool.rfind(P.TOOL_RESULT)])
        if second is None:
            self.notes.append(f"after a tool result the template writes {tool_lead!r} and no assistant header; "
                              "prompts after tool results are not anchored")
            return anchors
        self.note("header", f"after a tool result no new header is written; the prompt ends {second!r} "
                            "(a second start anchor)")
        return [*anchors, second]

    def _prompts(self, switches: Sequence[tuple[str, dict[str, Any]]], anchors: Sequence[str],
                 base: list[dict[str, Any]], form: P.Form, with_calls: bool) -> list[Prompt]:
        out = []
        contexts: list[tuple[str, list[dict[str, Any]], bool]] = [("", base, False)]
        if with_calls:
            contexts.append(("after a tool result, ", [*base, P.assistant(form, calls=[P.CALL_A]), P.tool_result(form, P.CALL_A)], True))
        for prefix, messages, after_tool in contexts:
            for label, sw in switches:
                rendered = self.s.render(f"prompt ({prefix}{label})", messages, True, sw)
                if isinstance(rendered, Failure):
                    continue
                at = max((rendered.rfind(a) + len(a) if rendered.rfind(a) >= 0 else -1) for a in anchors)
                prefill = rendered[at:] if at >= 0 else ""
                out.append(Prompt(prefix + label, sw, after_tool, rendered, prefill))
        return out


def _cut_at_end(calls: CallFormat, post: str, stoppers: Sequence[str]) -> tuple[CallFormat, str]:
    """A close that runs into the end of the turn (``</TOOLCALL><SPECIAL_12>`` when the empty message's
    render does not line up) is cut before the end marker; the rest belongs after the calls."""
    for attribute in ("section_close", "item_close"):
        text = getattr(calls, attribute)
        hits = [text.find(s) for s in stoppers if s and text.find(s) > 0]
        if hits:
            at = min(hits)
            rest = text[at:] + (calls.section_close if attribute == "item_close" else "")
            changes = {attribute: text[:at]}
            if attribute == "item_close":
                changes["section_close"] = ""
            return replace(calls, **changes), rest + post
    return calls, post


def _word_after(text: str) -> str:
    """The run of characters after a marker up to whitespace or the next marker (``user`` in
    ``<|start|>user<|message|>``)."""
    out = []
    for ch in text:
        if ch.isspace() or ch in "<[":
            break
        out.append(ch)
    return "".join(out)
