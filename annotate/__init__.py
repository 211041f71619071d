"""annotate: code collaboration logs, measure agreement, validate an LLM coder."""

__version__ = "0.1.0"
