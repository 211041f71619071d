"""annotate: code collaboration logs, measure agreement, validate an LLM coder."""

__version__ = "0.1.0"
DEFAULT_DB = "annotate.db"  # the project file when neither --db nor ANNOTATE_DB names one
