"""Static facts about a delimiter regex, kept at this path for callers that import it: they live in
``chatparse.regex_info`` (below the content parsers and the template compiler, which both use them)."""

from chatparse.regex_info import (
    REGEX_SPACE,
    UNKNOWN,
    WIDE_CONTEXT,
    CharTest,
    PatternInfo,
    QuantifierFacts,
    analyze,
    fuzzy_braces,
    literal_strings,
    quantifier_facts,
)

__all__ = ["REGEX_SPACE", "UNKNOWN", "WIDE_CONTEXT", "CharTest", "PatternInfo", "QuantifierFacts", "analyze",
           "fuzzy_braces", "literal_strings", "quantifier_facts"]
