"""``chatparse templates``: list the built-in templates, show one, or check a template file (``install`` and
``detect``, for tokenizer directories, live in ``tokenizer_cmd``)."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

from chatparse.cli.io import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, report, resolve_template, write_json
from chatparse.cli.synthesize_cmd import add_parser as add_synthesize_parser
from chatparse.cli.tokenizer_cmd import add_parsers as add_tokenizer_parsers
from chatparse.errors import ChatparseError, TemplateError, TemplateWarning


def add_parser(sub: Any) -> None:
    p = sub.add_parser("templates", help="built-in templates: list, show, check, install, detect, synthesize")
    tsub = p.add_subparsers(dest="templates_command", metavar="ACTION")
    tsub.add_parser("list", help="one line per built-in template").set_defaults(func=run_list)
    show = tsub.add_parser("show", help="print a built-in template (anchors, fields) with its metadata",
                           description="Prints the family's record as JSON: name, models, sources, notes, ..., "
                                       "and 'template', the response template itself.")
    show.add_argument("name", help="a built-in name (any case, . or _), e.g. qwen3.5")
    show.add_argument("--v1", action="store_true",
                      help="show the transformers (v1) form as 'template' and what it loses as 'v1_losses'")
    show.set_defaults(func=run_show)
    check = tsub.add_parser("check", help="load and validate a template file; report problems with locations")
    check.add_argument("file", help="template JSON, tokenizer_config.json, or a built-in name")
    check.set_defaults(func=run_check)
    add_tokenizer_parsers(tsub)  # install, detect
    add_synthesize_parser(tsub)
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), EXIT_USAGE)[1])


def run_list(args: argparse.Namespace) -> int:
    """One line per built-in: its name, the first models it serves and, for the ones transformers' own
    ``parse_response`` can read after ``templates install --v1``, a ``[v1]`` tag (every built-in is
    chatparse-only as it stands, so that tag is the one that tells them apart)."""
    from chatparse.templates import list_templates, template_info, v1_form
    from chatparse.templates.v1 import NotV1Error

    for name in list_templates():
        info = template_info(name)
        try:
            v1_form(name)
            flag = "  [v1]"
        except NotV1Error:
            flag = ""
        models = ", ".join(info.get("models", [])[:3])
        room = 96 - 23 - len(flag)
        if len(models) > room:
            models = models[: room - 1].rstrip(", ") + "…"
        print(f"{name:<22} {models}{flag}")
    return 0


def run_show(args: argparse.Namespace) -> int:
    from chatparse.templates import get_template, list_templates, template_info, v1_form

    try:
        name, _ = resolve_template(args.name)
        if name not in list_templates():
            raise CliError(f"Expected a built-in template name, found {args.name!r} (a file or a template); "
                           "`chatparse templates list` lists the names", code="unknown_template", key=args.name)
        record = {"name": name, **template_info(name), "template": get_template(name)}
        if args.v1:
            form = v1_form(name)
            record.update(template=form.template, v1_losses=list(form.losses))
    except ChatparseError as exc:
        return report("templates show", exc)
    write_json(record)
    return EXIT_OK


def run_check(args: argparse.Namespace) -> int:
    """Findings go to stdout (exit 1 for an error); a name or file that is not there is exit 2."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TemplateWarning)
        try:
            _, compiled = resolve_template(args.file)
        except TemplateError as exc:
            where = ", ".join(f"{k}={v}" for k, v in exc.location.items())
            print(f"error [{exc.code}]{' (' + where + ')' if where else ''}: {exc}")
            return EXIT_FAILED
        except ChatparseError as exc:
            return report("templates check", exc)
    for warning in caught:
        print(f"warning: {warning.message}")
    kind = "chatparse-only (uses extension parsers)" if compiled.chatparse_only else "transformers-compatible"
    print(f"ok: {len(compiled.fields)} fields ({', '.join(compiled.fields)}), implicit field: "
          f"{compiled.implicit or 'none'}; {kind}")
    return EXIT_OK
