"""Edges between chatparse and the systems around it: tokenizers (``chatparse.integrations.transformers``),
tokenizer files (``tokenizer_config``), incremental detokenization (``detokenize``), serving engines.

Nothing here is imported by ``import chatparse``; each module imports its third-party library lazily.
"""
