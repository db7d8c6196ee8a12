"""The engine's limits, kept at this path for callers that import it: they live in ``chatparse.limits``
(below every layer, so content parsers and the template compiler can use them)."""

from chatparse.limits import (
    DEFAULT_LIMITS,
    MAX_RETRIES,
    Limits,
    RegexBudget,
    own_cpu,
    stalled,
)

__all__ = ["DEFAULT_LIMITS", "MAX_RETRIES", "Limits", "RegexBudget", "own_cpu", "stalled"]
