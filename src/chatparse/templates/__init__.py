"""Built-in response templates for the major open-weight model families, and their detection."""

from chatparse.templates.registry import (
    UnknownTemplateError,
    detect_template,
    get_template,
    list_templates,
    template_info,
)

__all__ = ["UnknownTemplateError", "detect_template", "get_template", "list_templates", "template_info"]
