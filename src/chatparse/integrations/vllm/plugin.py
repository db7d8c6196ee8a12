"""The file vLLM imports for ``--tool-parser-plugin`` / ``--reasoning-parser-plugin``: registers the
``chatparse`` parsers (``chatparse.integrations.vllm.parsers.register``)."""

from chatparse.integrations.vllm.parsers import register

register()
