"""``chatparse templates``: list the built-in templates, show one, or check a template file (``install`` and
``detect``, for tokenizer directories, live in ``tokenizer_cmd``)."""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any

from chatparse.cli.tokenizer_cmd import add_parsers as add_tokenizer_parsers
from chatparse.errors import ChatparseError, TemplateWarning
from chatparse.template.compile import load_template


def add_parser(sub: Any) -> None:
    p = sub.add_parser("templates", help="built-in templates: list, show, check, install, detect")
    tsub = p.add_subparsers(dest="templates_command", metavar="ACTION")
    tsub.add_parser("list", help="one line per built-in template").set_defaults(func=run_list)
    show = tsub.add_parser("show", help="print a built-in template with its metadata")
    show.add_argument("name")
    show.set_defaults(func=run_show)
    check = tsub.add_parser("check", help="load and validate a template file; report problems with locations")
    check.add_argument("file", help="template JSON, tokenizer_config.json, or a built-in name")
    check.set_defaults(func=run_check)
    add_tokenizer_parsers(tsub)  # install, detect
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def run_list(args: argparse.Namespace) -> int:
    from chatparse.templates import list_templates, template_info

    for name in list_templates():
        info = template_info(name)
        models = ", ".join(info.get("models", [])[:3])
        flag = " [chatparse-only]" if info.get("chatparse_only") else ""
        print(f"{name:<22} {models}{flag}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from chatparse.templates import template_info

    try:
        print(json.dumps(template_info(args.name), indent=2, ensure_ascii=False))
    except ChatparseError as exc:
        print(f"chatparse templates show: [{exc.code}] {exc}")
        return 2
    return 0


def run_check(args: argparse.Namespace) -> int:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TemplateWarning)
        try:
            compiled = load_template(args.file)
        except ChatparseError as exc:
            where = ", ".join(f"{k}={v}" for k, v in exc.location.items())
            print(f"error [{exc.code}]{' (' + where + ')' if where else ''}: {exc}")
            return 1
    for warning in caught:
        print(f"warning: {warning.message}")
    kind = "chatparse-only (uses extension parsers)" if compiled.chatparse_only else "transformers-compatible"
    print(f"ok: {len(compiled.fields)} fields ({', '.join(compiled.fields)}), implicit field: "
          f"{compiled.implicit or 'none'}; {kind}")
    return 0
