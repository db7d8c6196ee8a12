"""Built-in response templates for the major open-weight model families, and their detection."""

from chatparse.templates.registry import (
    UnknownTemplateError,
    detect_template,
    get_template,
    list_templates,
    template_info,
    v1_form,
)
from chatparse.templates.v1 import NotV1Error, V1Form

__all__ = ["NotV1Error", "UnknownTemplateError", "V1Form", "detect_template", "get_template", "list_templates",
           "template_info", "v1_form"]
