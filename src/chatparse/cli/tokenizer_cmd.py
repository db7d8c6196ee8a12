"""``chatparse templates install NAME DIR`` writes a template into a tokenizer's tokenizer_config.json
(where transformers' ``tokenizer.parse_response`` finds it); ``chatparse templates detect DIR`` names the
built-in template that fits a model directory."""

from __future__ import annotations

import argparse
from typing import Any

from chatparse.cli.io import EXIT_OK, EXIT_USAGE, eprint, report, resolve_template
from chatparse.errors import ChatparseError

AUTO = "auto"


def add_parsers(tsub: Any) -> None:
    install = tsub.add_parser(
        "install", help="write a template into a tokenizer's tokenizer_config.json (response_template)")
    install.add_argument("name", help=f"a built-in name, a template file, or '{AUTO}' (detect from DIR)")
    install.add_argument("dir", help="a model or tokenizer directory, or its tokenizer_config.json")
    install.add_argument("--force", action="store_true", help="replace a different response_template")
    install.add_argument("--v1", action="store_true",
                         help="write the built-in's transformers (v1) form, which AutoTokenizer's parse_response "
                              "reads; prints what it parses differently, or why the built-in has none")
    install.set_defaults(func=run_install)
    detect = tsub.add_parser("detect", help="name the built-in template that fits a model directory")
    detect.add_argument("dir", help="a model or tokenizer directory, or its tokenizer_config.json")
    detect.set_defaults(func=run_detect)


def _error(command: str, exc: ChatparseError) -> int:
    return report(f"templates {command}", exc)


def run_install(args: argparse.Namespace) -> int:
    from chatparse.integrations.tokenizer_config import detect_directory, install_response_template

    try:
        name = args.name
        if name == AUTO:
            name = detect_directory(args.dir)
            if name is None:
                eprint(f"chatparse templates install: no built-in template fits {args.dir}; name one "
                       f"(`chatparse templates list`), or infer one from its chat template with `chatparse "
                       f"templates synthesize {args.dir}`")
                return EXIT_USAGE
        if args.v1:
            return _install_v1(name, args)
        name, compiled = resolve_template(name)
        path = install_response_template(args.dir, name, force=args.force)
    except ChatparseError as exc:
        return _error("install", exc)
    print(f"wrote the response_template {name!r} to {path}")
    if compiled.chatparse_only:
        print("chatparse-only (extension keys): transformers' tokenizer.parse_response rejects it; parse with "
              "chatparse.integrations.transformers.parse_response(ids, tokenizer=tok, prefix=...)")
    else:
        print("transformers-compatible: AutoTokenizer.from_pretrained(DIR).parse_response(...) uses it, and so "
              "does chatparse.integrations.transformers.parse_response(ids, tokenizer=tok, prefix=...)")
    return EXIT_OK


def _install_v1(name: str, args: argparse.Namespace) -> int:
    """``install --v1``: the built-in's v1 form, then what it loses. Raises the ``ChatparseError`` to report
    (``unknown_template`` for a name that is not a built-in, ``not_v1_expressible`` with the reason)."""
    from chatparse.integrations.tokenizer_config import install_response_template
    from chatparse.templates import v1_form

    form = v1_form(name)
    path = install_response_template(args.dir, form.template, force=args.force)
    print(f"wrote the v1 (transformers) form of {name!r} to {path}: AutoTokenizer.from_pretrained(DIR)."
          "parse_response(...) reads it. It parses differently from the built-in where:")
    for loss in form.losses:
        print(f"  - {loss}")
    return EXIT_OK


def run_detect(args: argparse.Namespace) -> int:
    """The same as ``chatparse detect DIR``."""
    from chatparse.cli.detect_cmd import run

    return run(argparse.Namespace(model=args.dir))
