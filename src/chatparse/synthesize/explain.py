"""The human-readable account of a synthesis: the inferred markers, what each generation prompt pre-writes,
the evidence (which probes showed what), what cannot be inferred, and what round-trips."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chatparse.synthesize import SynthesizedTemplate
    from chatparse.synthesize.verify import Report


def markers(result: SynthesizedTemplate) -> list[str]:
    fmt = result.format
    lines = [f"assistant header (start anchor): {', '.join(map(repr, fmt.anchors))}"]
    if fmt.reasoning is not None:
        lines.append(f"reasoning: {fmt.reasoning.open!r} ... {fmt.reasoning.close!r}")
    else:
        lines.append("reasoning: none rendered")
    if fmt.content_open or fmt.content_close:
        lines.append(f"content wrapper (dropped): {fmt.content_open!r} ... {fmt.content_close!r}")
    calls = fmt.calls
    if calls is not None:
        lines.append(f"tool calls: {calls.syntax}; each call {calls.item_open.strip()!r} NAME "
                     f"{calls.name_after!r} ARGUMENTS {calls.item_close.strip()!r}"
                     + (f"; all calls inside {calls.section_open.strip()!r} ... {calls.section_close.strip()!r}"
                        if calls.section_open.strip() or calls.section_close.strip() else "")
                     + ("" if calls.multiple else "; one call per message"))
    lines.append(f"end of turn: {', '.join(map(repr, fmt.end)) or 'none'}")
    if fmt.discard:
        lines.append(f"dropped after the end: {', '.join(map(repr, fmt.discard))}")
    lines.append(f"next-turn headers: {', '.join(map(repr, fmt.next_turn)) or 'none'}")
    return lines


def report_lines(report: Report) -> list[str]:
    lines = [f"{report.exact}/{report.checks} parses exact ({report.messages} generated messages, each after every "
             "generation prompt it continues)"]
    fields = ", ".join(f"{k} {v.text()}" for k, v in report.fields.items() if v.checked)
    lines.append(f"per field: {fields}")
    types = ", ".join(f"{k} {v.text()}" for k, v in report.value_types.items() if v.checked)
    if types:
        lines.append(f"argument values by type: {types}")
    lines.append("per prompt: " + ", ".join(f"'{k}' {v.text()}" for k, v in report.prompts.items()))
    lines.append("per kind: " + ", ".join(f"{k} {v.text()}" for k, v in report.kinds.items()))
    lines += [f"typing: {t}" for t in report.typing]
    lines += [f"not rendered by the template: {t}" for t in report.not_rendered]
    lines += [f"rendered as another field: {t}" for t in report.rendered_as]
    lines += [f"not compared ({n}x): {reason}" for reason, n in sorted(report.not_checked.items())]
    for check in report.failures[:20]:
        lines.append(f"FAILED {check.describe()}")
    if len(report.failures) > 20:
        lines.append(f"... and {len(report.failures) - 20} more failures")
    return lines


def explain(result: SynthesizedTemplate) -> str:
    fmt = result.format
    out = ["Inferred markers:"]
    out += [f"  {line}" for line in markers(result)]
    out.append("Generation prompts (what each pre-writes after the header):")
    out += [f"  '{p.label}': {p.prefill!r}" if p.prefill.strip() else f"  '{p.label}': nothing" for p in fmt.prompts]
    out.append("Evidence:")
    out += [f"  [{topic}] {text}" for topic, text in fmt.evidence]
    if fmt.notes:
        out.append("Not inferred / limits:")
        out += [f"  {note}" for note in fmt.notes]
    if result.report is not None:
        out.append("Round trip:")
        out += [f"  {line}" for line in report_lines(result.report)]
    return "\n".join(out)
