"""Streaming an XML tool call whose values quote the format's own markers stays linear.

A Qwen3-Coder call (`<tool_call>\\n<function=edit_file>\\n<parameter=body>\\n...`) whose `body` value is
up to 1 MB of text dense with `</parameter>`, `<parameter=path>`, `</function>\\n</tool_call>`,
`<|im_end|>` and `<|im_start|>assistant` (docs about the format, a prompt quoting a prompt), newlines,
indentation and non-ASCII text, fed in 4-character chunks. Every quoted close makes the parser look
ahead for the call's structure (the structural value rule); this measures that the look-ahead stays
bounded: the growth exponent (log-log slope of time against size; 1.0 is linear) and throughput.

Peer, measured in the same run: the per-token re-parse pattern (parse the accumulated text again on
every chunk, as llama-server does), at the sizes where it finishes. Times are process CPU time, best of
several runs. Prints a table, then one JSON document.

    python benchmarks/bench_xml_values.py [--sizes 16,64,256,1024] [--chunk 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from typing import Any

import chatparse
from chatparse.bench.engine import growth_exponent

TARGET_EXPONENT = 1.1
PREFIX = ("<|im_start|>system\nYou are a coding assistant.<|im_end|>\n<|im_start|>user\nDocument the call "
          "format.<|im_end|>\n<|im_start|>assistant\n")
TOOLS = [{"type": "function", "function": {"name": "edit_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}, "body": {"type": "string"}},
    "required": ["path", "body"]}}}]
LINES = (
    "Close a value with </parameter> and open the next with <parameter=path> on its own line.\n",
    "    A call ends with </function>\n</tool_call> — then the turn ends: <|im_end|>\n",
    "인용: <|im_start|>assistant\n<tool_call>\n<function=get_time>\n</function>\n</tool_call> 끝 ✓\n",
    "\tplain text between the markers, indented, with \"quotes\" & <b>tags</b>\n",
)


def make_output(size: int) -> tuple[str, str]:
    """One call whose body value is ``size`` characters of marker-dense text; (output, body)."""
    parts, total, i = [], 0, 0
    while total < size:
        line = LINES[i % len(LINES)]
        parts.append(line)
        total += len(line)
        i += 1
    body = "".join(parts)[:size].rstrip("\n")
    output = (f"<tool_call>\n<function=edit_file>\n<parameter=body>\n{body}\n</parameter>\n<parameter=path>\n"
              f"docs/format.md\n</parameter>\n</function>\n</tool_call><|im_end|>")
    return output, body


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def stream(output: str, chunk: int) -> dict[str, Any]:
    parser = chatparse.ResponseParser("qwen3_coder", PREFIX, tools=TOOLS)
    for i in range(0, len(output), chunk):
        parser.feed(output[i : i + chunk])
    message, _ = parser.finalize()
    return message


def reparse(output: str, chunk: int) -> dict[str, Any]:
    message: dict[str, Any] = {}
    for i in range(chunk, len(output) + chunk, chunk):
        message = chatparse.parse_response(output[:i], "qwen3_coder", prefix=PREFIX, tools=TOOLS)
    return message


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--sizes", default="16,64,256,1024", help="value sizes in KB")
    args.add_argument("--chunk", type=int, default=4)
    args.add_argument("--repeat", type=int, default=3)
    args.add_argument("--peer-limit-kb", type=int, default=16, help="largest size the re-parse peer runs at")
    opts = args.parse_args()
    sizes = [int(s) * 1024 for s in opts.sizes.split(",")]
    rows = []
    for size in sizes:
        output, body = make_output(size)
        message = stream(output, opts.chunk)
        args_out = message["tool_calls"][0]["function"]["arguments"]
        assert args_out == {"body": body, "path": "docs/format.md"}, "the streamed value is not the one written"
        ours = best(lambda output=output: stream(output, opts.chunk), opts.repeat)
        row: dict[str, Any] = {"value_kb": size // 1024, "chunks": len(output) // opts.chunk, "ours_s": round(ours, 4),
                               "mb_per_s": round(len(output) / ours / 1e6, 2)}
        if size <= opts.peer_limit_kb * 1024:
            peer = best(lambda output=output: reparse(output, opts.chunk), 1)
            row["reparse_s"] = round(peer, 4)
            row["ratio"] = round(peer / ours, 1)
        rows.append(row)
        print(f"{row['value_kb']:>6} KB  ours {row['ours_s']:>8.4f} s  {row['mb_per_s']:>6} MB/s"
              + (f"  re-parse {row['reparse_s']:>8.3f} s  ({row['ratio']}x)" if "ratio" in row else ""))
    exponent = growth_exponent(sizes, [r["ours_s"] for r in rows])
    summary = {"bench": "xml-values-stream", "python": platform.python_version(), "chunk": opts.chunk,
               "rows": rows, "growth_exponent": round(exponent, 3),
               f"growth_exponent<={TARGET_EXPONENT}": exponent <= TARGET_EXPONENT}
    print(f"growth exponent: {summary['growth_exponent']} (target <= {TARGET_EXPONENT})")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
