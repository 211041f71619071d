"""Rule sets that code like a coder: a deterministic labelling function over the stored
actions, whose answers are stored as coder ``rule:NAME`` with the rule's version and
parameters as each label's provenance (``annotate audit --rules NAME``)."""

from __future__ import annotations

RULE_SETS = ("tgco",)
