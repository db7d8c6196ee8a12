"""Inferring where a turn ends and the next one starts: end markers, next-turn headers, the assistant
anchors and what each generation prompt pre-writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chatparse.synthesize import probes as P
from chatparse.synthesize.calls import CallFormat
from chatparse.synthesize.errors import NotInferableError
from chatparse.synthesize.infer_reasoning import _ReasoningInference
from chatparse.synthesize.layout import Prompt, Reasoning, _after
from chatparse.synthesize.render import Failure


def _word_after(text: str) -> str:
    """The run of characters after a marker up to whitespace or the next marker (``user`` in
    ``<|start|>user<|message|>``)."""
    out = []
    for ch in text:
        if ch.isspace() or ch in "<[":
            break
        out.append(ch)
    return "".join(out)


class _TurnInference(_ReasoningInference):
    """The end-of-turn, next-turn and anchor steps of ``LayoutInference``."""

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
