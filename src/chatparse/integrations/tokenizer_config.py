"""Response templates stored with a tokenizer: read the ``response_template`` key of a tokenizer_config.json
(or of a model directory's), write a template into one (what transformers' ``tokenizer.parse_response`` and
``AutoTokenizer.from_pretrained`` read), and detect the built-in template that fits a model directory.

Plain JSON files: nothing here imports transformers.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chatparse.errors import TemplateError
from chatparse.template.compile import load_template

CONFIG_NAME = "tokenizer_config.json"
TEMPLATE_KEY = "response_template"
CHAT_TEMPLATE_FILE = "chat_template.jinja"  # where transformers 5 saves the chat template
MODEL_CONFIG_NAME = "config.json"


class MissingResponseTemplateError(TemplateError, AttributeError):
    """A template was expected from a tokenizer, a tokenizer_config.json or a model directory that has none
    (an AttributeError too, as transformers raises for a tokenizer without ``response_template``)."""

    code = "no_response_template"


class TokenizerConfigError(TemplateError):
    """The tokenizer_config.json is missing, not JSON, or not a JSON object."""

    code = "bad_tokenizer_config"


class ChatTemplateFileError(TemplateError):
    """The model directory's chat_template.jinja cannot be read as a chat template (not UTF-8 text)."""

    code = "bad_chat_template"


class ResponseTemplateExistsError(TemplateError):
    """``install_response_template`` would replace a different template already in the file."""

    code = "response_template_exists"


def config_path(target: str | os.PathLike[str]) -> Path:
    """The tokenizer_config.json of ``target``: the file itself, or the one in a model directory."""
    path = Path(target)
    if path.is_dir():
        config = path / CONFIG_NAME
        if not config.is_file():
            raise TokenizerConfigError(
                f"expected a tokenizer directory with {CONFIG_NAME}, found none in {path}. Save the tokenizer "
                f"there first (tokenizer.save_pretrained({str(path)!r})).",
                code="no_tokenizer_config", path=str(path))
        return config
    if not path.is_file():
        raise TokenizerConfigError(f"expected a model directory or a {CONFIG_NAME}, found nothing at {path}",
                                   code="no_tokenizer_config", path=str(path))
    return path


def read_config(target: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON object of ``target``'s tokenizer_config.json."""
    path = config_path(target)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TokenizerConfigError(f"{path}: expected JSON, found a syntax error at line {exc.lineno} column "
                                   f"{exc.colno} ({exc.msg})", path=str(path)) from None
    except UnicodeDecodeError as exc:
        raise TokenizerConfigError(f"{path}: expected UTF-8 JSON text, found byte {exc.object[exc.start]:#04x} at "
                                   f"offset {exc.start} (not a text file?)", path=str(path)) from None
    except ValueError as exc:  # a number past Python's integer-string limit (4,300 digits)
        raise TokenizerConfigError(f"{path}: expected JSON that Python can read, found a number it refuses: {exc}",
                                   path=str(path)) from None
    except RecursionError:
        raise TokenizerConfigError(f"{path}: expected a tokenizer config, found JSON nested too deeply to read "
                                   "(thousands of levels)", path=str(path)) from None
    if not isinstance(data, dict):
        raise TokenizerConfigError(f"{path}: expected a JSON object, found {type(data).__name__}", path=str(path))
    return data


def read_response_template(target: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``response_template`` of a tokenizer_config.json or a model directory, as a dict (not yet
    validated: pass it to ``load_template``). ``MissingResponseTemplateError`` says what to do when absent."""
    data = read_config(target)
    template = data.get(TEMPLATE_KEY)
    path = config_path(target)
    if template is None:
        raise missing_template_error(f"{path} has no {TEMPLATE_KEY!r} key", detect_directory(target), str(path))
    if not isinstance(template, dict):
        raise TokenizerConfigError(f"{path}: expected {TEMPLATE_KEY!r} to be a JSON object, found "
                                   f"{type(template).__name__}", path=str(path), key=TEMPLATE_KEY)
    return template


def missing_template_error(found: str, suggestion: str | None, where: str) -> MissingResponseTemplateError:
    """The one message for "a template was expected here and there is none", with the fix."""
    name = suggestion or "NAME"
    hint = (f" ({suggestion!r} fits this model)" if suggestion
            else "; `chatparse templates list` shows the built-in names, and `chatparse templates synthesize "
                 "MODEL_DIR` infers one from the model's chat template when none fits")
    return MissingResponseTemplateError(
        f"expected a response template, found none: {found}. Pass a template (a built-in name, a dict or a "
        f"template file), or write a built-in one into the tokenizer with "
        f"`chatparse templates install {name} MODEL_DIR`{hint}.",
        path=where, key=TEMPLATE_KEY, suggestion=suggestion,
    )


def install_response_template(target: str | os.PathLike[str], template: Any, *, force: bool = False) -> Path:
    """Write ``template`` (a built-in name, a dict, JSON text or a template file; validated first) as the
    ``response_template`` of ``target``'s tokenizer_config.json, keeping every other key. A different
    template already there is replaced only with ``force``. Returns the file written."""
    spec = load_template(template).to_dict()
    path = config_path(target)
    data = read_config(path)
    current = data.get(TEMPLATE_KEY)
    if current == spec:
        return path
    if current is not None and not force:
        raise ResponseTemplateExistsError(
            f"{path} already has a different {TEMPLATE_KEY!r}; expected none. Pass force=True (the CLI's "
            "--force) to replace it.", path=str(path), key=TEMPLATE_KEY)
    data[TEMPLATE_KEY] = spec
    _write_json(path, data)
    return path


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Replace ``path`` atomically (a reader never sees half a file), keeping its permission bits: a server
    running as another user must still read it (``mkstemp`` makes the file 0600)."""
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def chat_template_text(chat_template: Any) -> str | None:
    """One string from a chat template as tokenizers store it: a string, a dict of named templates, or the
    legacy list of ``{"name", "template"}`` (all named templates joined: every one is evidence)."""
    if isinstance(chat_template, str):
        return chat_template
    if isinstance(chat_template, Mapping):
        return "\n".join(v for v in chat_template.values() if isinstance(v, str)) or None
    if isinstance(chat_template, list):
        return "\n".join(t["template"] for t in chat_template
                         if isinstance(t, Mapping) and isinstance(t.get("template"), str)) or None
    return None


def detect_directory(target: str | os.PathLike[str]) -> str | None:
    """The built-in template for a model directory (or the one holding a tokenizer_config.json): from its
    chat template, its name and its config.json's ``model_type``."""
    from chatparse.templates import detect_template

    path = Path(target)
    directory = path if path.is_dir() else path.parent
    data = _json_object(directory / CONFIG_NAME)
    chat = chat_template_text(data.get("chat_template"))
    jinja = directory / CHAT_TEMPLATE_FILE
    if chat is None and jinja.is_file():
        chat = read_chat_template_file(jinja)
    model_id = _json_object(directory / MODEL_CONFIG_NAME).get("_name_or_path") or directory.resolve().name
    return detect_template(model_id=str(model_id), model_type=model_type(directory), chat_template=chat)


def read_chat_template_file(path: Path) -> str:
    """A chat_template.jinja's text; bytes that are not UTF-8 are the template's fault, named with the offset."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ChatTemplateFileError(f"{path}: expected a chat template (UTF-8 Jinja text), found byte "
                                    f"{exc.object[exc.start]:#04x} at offset {exc.start}: not a text file",
                                    path=str(path), offset=exc.start) from None


def model_type(directory: str | os.PathLike[str]) -> str | None:
    """The ``model_type`` of a model directory's config.json (None when there is none)."""
    value = _json_object(Path(directory) / MODEL_CONFIG_NAME).get("model_type")
    return value if isinstance(value, str) else None


def _json_object(path: Path) -> dict[str, Any]:
    """A JSON object file, or {} when it is missing or not an object (detection only looks for clues)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}
