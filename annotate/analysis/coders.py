"""Which coder's label counts for an action: gold where present, else the LLM coder(s); or
each action's own report (the coder ``self:<its actor>``), by ``--source own-reports`` or
when a codebook's only labels are participants' own reports."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from annotate.coders import GOLD, SELF_PREFIX, is_llm
from annotate.errors import UsageError
from annotate.store import Store

LABEL_COLUMNS = ["action_id", "question", "coder", "value", "codes"]
OWN_REPORTS = "own-reports"
SOURCES = (OWN_REPORTS,)


@dataclass(frozen=True)
class LabelSource:
    """The labels of one codebook that count, one per (action, question).

    ``priority`` lists the coders in order: for each action and question the first of them
    who answered it wins; with ``per_action``, for each action the first of them who
    answered any of its questions gives all its answers (no mixing of coders within an
    action). ``used`` says how many labelled actions each coder supplied.
    """

    codebook: str
    priority: tuple[str, ...]
    labels: pd.DataFrame
    used: dict[str, int] = field(default_factory=dict)
    default: bool = True
    per_action: bool = False
    own_reports: bool = False

    def describe(self) -> str:
        if self.own_reports:
            parts = [f"{c} ({n} actions)" for c, n in sorted(self.used.items())]
            why = "--source own-reports" if not self.default else "its only labels are own reports"
            return (
                f"{self.codebook}: each action's own report, by the coder self:<its actor> "
                f"({', '.join(parts) or 'none'}) [{why}]"
            )
        parts = [f"{c} ({self.used.get(c, 0)} actions)" for c in self.priority]
        how = "gold where present, else the LLM coder(s)" if self.default else "--coders"
        if self.per_action:
            how += "; all answers of an action from one coder"
        return f"{self.codebook}: labels by " + ", then ".join(parts) + f" [{how}]"

    def restricted(self, action_ids: Collection[str]) -> LabelSource:
        """The same source over these actions only (``used`` counted again)."""
        labels = self.labels[self.labels["action_id"].isin(set(action_ids))]
        return replace(self, labels=labels.reset_index(drop=True), used=_used(labels))


def _used(frame: pd.DataFrame) -> dict[str, int]:
    if frame.empty:
        return {}
    used = frame.groupby("coder")["action_id"].nunique().to_dict()
    return {str(k): int(v) for k, v in used.items()}


def default_priority(available: Sequence[str]) -> list[str]:
    """Gold first, then every LLM coder (by name)."""
    return ([GOLD] if GOLD in available else []) + sorted(c for c in available if is_llm(c))


def pick_first(
    rows: Sequence[dict[str, Any]], priority: Sequence[str], *, per_action: bool = False
) -> pd.DataFrame:
    """One row per (action, question): the answer of the first coder in ``priority``.

    With ``per_action``: the answers of the first coder in ``priority`` who answered any
    question of the action, and only theirs (a question they left open stays open).
    """
    frame = pd.DataFrame(list(rows), columns=LABEL_COLUMNS)
    if frame.empty:
        return frame
    rank = {c: i for i, c in enumerate(priority)}
    frame["_rank"] = frame["coder"].map(rank)
    if per_action:
        frame = frame[frame["_rank"] == frame.groupby("action_id")["_rank"].transform("min")]
    frame = frame.sort_values(["action_id", "question", "_rank"], kind="stable")
    frame = frame.drop_duplicates(["action_id", "question"], keep="first")
    return frame.drop(columns="_rank").reset_index(drop=True)


def label_source(
    store: Store,
    codebook: str,
    coders: Sequence[str] | None = None,
    *,
    required: bool = True,
    per_action: bool = False,
    source: str | None = None,
) -> LabelSource:
    """The labels of ``codebook`` that count (see :class:`LabelSource`).

    Without ``coders``: gold where present, else the LLM coder(s); each action's own report
    when every coder of the codebook is a participant (``self:*``). ``source`` =
    :data:`OWN_REPORTS`: each action's own report. With ``required`` an empty result is a
    :class:`UsageError` naming the coders that do exist.
    """
    available = store.coders(codebook)
    if source is not None and source not in SOURCES:
        raise UsageError(
            f"--source: unknown source '{source}'", hint="choices: " + ", ".join(SOURCES)
        )
    if coders and source is not None:
        raise UsageError("--coders and --source are two ways to choose labels: give one")
    only_self = bool(available) and all(c.startswith(SELF_PREFIX) for c in available)
    if source == OWN_REPORTS or (not coders and only_self):
        return own_report_source(store, codebook, required=required, named=source is not None)
    default = not coders
    priority = list(coders) if coders else default_priority(available)
    unknown = [c for c in priority if c not in available]
    if coders and unknown and required:
        raise UsageError(
            f"--coders: '{unknown[0]}' has no labels for codebook '{codebook}'",
            hint="coders: " + (", ".join(available) or "none yet"),
        )
    frame = pick_first(store.answered_labels(codebook, priority), priority, per_action=per_action)
    if frame.empty and required:
        if not available:
            raise UsageError(
                f"codebook '{codebook}' has no labels in this database",
                hint="import or code some first (annotate import-labels, annotate code)",
            )
        raise UsageError(
            f"codebook '{codebook}' has no gold or LLM labels (coders: {', '.join(available)})",
            hint=f"pass --coders {available[0]} (comma-separated, first one that answered wins)",
        )
    return LabelSource(codebook, tuple(priority), frame, _used(frame), default, per_action)


def own_report_source(
    store: Store, codebook: str, *, required: bool = True, named: bool = False
) -> LabelSource:
    """Each action's labels from its own actor's report (``self:<participant>``)."""
    frame = pd.DataFrame(store.own_report_labels(codebook), columns=LABEL_COLUMNS)
    if frame.empty and required:
        raise UsageError(
            f"codebook '{codebook}' has no participant's report on their own actions",
            hint="own reports are labels by the coder self:NAME on NAME's actions "
            "(annotate code --self NAME, or import-labels --mapping)",
        )
    used = _used(frame)
    return LabelSource(
        codebook,
        tuple(sorted(used)),
        frame,
        used,
        default=not named,
        per_action=True,
        own_reports=True,
    )
