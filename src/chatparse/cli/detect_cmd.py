"""``chatparse detect MODEL_ID_OR_DIR``: the built-in template that fits a model directory (its tokenizer's
chat template, name and ``model_type``) or a Hugging Face model id."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from chatparse.cli.io import EXIT_FAILED, EXIT_OK, EXIT_USAGE, eprint, looks_like_path, report
from chatparse.errors import ChatparseError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("detect", help="name the built-in template for a model id or a model directory",
                       description="Prints the name of the built-in template that fits, for --template. A "
                                   "directory is read (tokenizer_config.json, chat_template.jinja, config.json); "
                                   "anything else is taken as a model id such as Qwen/Qwen3-8B.")
    p.add_argument("model", metavar="MODEL_ID_OR_DIR", help="a Hugging Face model id, or a model directory")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from chatparse.integrations.tokenizer_config import detect_directory
    from chatparse.templates import detect_template

    path = Path(args.model)
    if looks_like_path(args.model) and not path.expanduser().exists():
        eprint(f"chatparse detect: error [file_not_found] (path={args.model}): expected a model directory or a chat "
               "template file there, found no such file or directory; check the path, or pass a model id "
               "(`org/model`)")
        return EXIT_USAGE
    try:
        name = detect_directory(path) if path.exists() else detect_template(model_id=args.model)
    except ChatparseError as exc:
        return report("detect", exc)
    if name is None:
        what = "the model directory" if path.exists() else "the model id"
        hint = (f"`chatparse templates synthesize {args.model}` infers one from its chat template and proves it"
                if path.exists() else "`chatparse templates synthesize MODEL_DIR` infers one from the model's chat "
                "template")
        eprint(f"chatparse detect: no built-in template fits {what} {args.model!r}; {hint} "
               "(`chatparse templates list` shows the built-ins)")
        return EXIT_FAILED
    print(name)
    return EXIT_OK
