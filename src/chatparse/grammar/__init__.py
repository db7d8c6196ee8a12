"""Grammars that make a model write only what chatparse reads: ``tool_grammar(template, tools, ...)``."""

from chatparse.grammar.api import ToolGrammar, tool_grammar
from chatparse.grammar.jsonschema import GrammarError

__all__ = ["GrammarError", "ToolGrammar", "tool_grammar"]
