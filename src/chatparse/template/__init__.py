"""Response templates: load, validate and compile the v1 JSON format into an immutable form."""

from chatparse.template.compile import CompiledField, CompiledTemplate, Delimiter, load_template

__all__ = ["CompiledField", "CompiledTemplate", "Delimiter", "load_template"]
