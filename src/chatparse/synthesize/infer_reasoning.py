"""Inferring reasoning: how the chat template writes a reasoning block, from renders with and without
``reasoning_content`` and from what each generation prompt pre-writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chatparse.synthesize import probes as P
from chatparse.synthesize.layout import Prompt, Reasoning, _Probing


class _ReasoningInference(_Probing):
    """The reasoning steps of ``LayoutInference``."""

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
