"""The streaming engine: ``ResponseParser`` (feed/finalize) and the one-shot ``parse_response``."""

from chatparse.engine.api import parse_response
from chatparse.engine.parser import ResponseParser

__all__ = ["ResponseParser", "parse_response"]
