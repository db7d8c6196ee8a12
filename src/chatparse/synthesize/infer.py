"""Infer a response format from the differences between renders of one chat template: the assistant
header (the start anchor), what each generation prompt pre-writes, the reasoning markers, a content wrapper,
the end-of-turn markers, the next-turn headers and (in ``calls``) how tool calls are written. Every fact is
recorded with the probe pair that showed it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from chatparse.synthesize import probes as P
from chatparse.synthesize.calls import CallFormat, CallInference, CallSyntaxError, Sections
from chatparse.synthesize.errors import NotInferableError
from chatparse.synthesize.infer_turns import _TurnInference
from chatparse.synthesize.layout import THINKING_SWITCHES, Format, Prompt, Reasoning, Session
from chatparse.synthesize.render import Failure
from chatparse.synthesize.write import NoWrittenForm, written_form


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


class LayoutInference(_TurnInference):
    """The assistant turn's layout, step by step (see the module docstring)."""

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


__all__ = ["THINKING_SWITCHES", "Format", "LayoutInference", "Prompt", "Reasoning", "Session"]
