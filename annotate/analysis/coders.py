"""Which coder's label counts for an action: gold where present, then a corpus coding, then
an LLM coder that passed its validation gate, then the rule sets (``rule:*``, `annotate
audit`); any other coder only when named (--coders).

An LLM coder that did not pass its gate (failed, or labelled with --force) is never a
default source; named, it is used and flagged: every table and chart that rests on its
labels says so, with its kappa (:attr:`LabelSource.flags`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from annotate.coders import GOLD, SELF_PREFIX, is_llm, is_rule
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
    gates: dict[str, Gate] = field(default_factory=dict)
    """The validation gate of each LLM coder in ``priority``."""
    left_out: tuple[str, ...] = ()
    """LLM coders with labels that the default leaves out (gate not passed)."""
    own_reports: bool = False
    """Each action's label is its own actor's report (the coder ``self:<participant>``)."""

    def describe(self) -> str:
        if self.own_reports:
            parts = [f"{c} ({n} actions)" for c, n in sorted(self.used.items())]
            why = "--source own-reports" if not self.default else "its only labels are own reports"
            return (
                f"{self.codebook}: each action's own report, by the coder self:<its actor> "
                f"({', '.join(parts) or 'none'}) [{why}]"
            )
        if not self.priority:  # nobody's labels count by default: say so, name no one
            return f"{self.codebook}: no gold or LLM labels (--coders names the coders to use)"
        parts = [f"{c} ({self.used.get(c, 0)} actions)" for c in self.priority]
        how = DEFAULT_ORDER if self.default else "--coders"
        if self.per_action:
            how += "; all answers of an action from one coder"
        text = f"{self.codebook}: labels by " + ", then ".join(parts or ["nobody"]) + f" [{how}]"
        text += "".join(f" {flag}" for flag in self.flags)
        if self.left_out:
            text += (
                f" Not used: {', '.join(self.left_out)} (did not pass the validation gate; "
                "name it with --coders to use it, marked)."
            )
        return text

    @property
    def flags(self) -> tuple[str, ...]:
        """One warning per used coder that did not pass its gate, e.g. "llm:x FAILED its
        validation gate (Fleiss' kappa -0.323 < 0.6, labelled with --force)"."""
        return tuple(
            self.gates[c].warning()
            for c in self.priority
            if c in self.gates and not self.gates[c].passed and self.used.get(c)
        )

    def mark(self) -> str:
        """A short mark for chart and table titles ("" when every coder used passed)."""
        failed = [c for c in self.priority if c in self.gates and not self.gates[c].passed
                  and self.used.get(c)]  # fmt: skip
        return "".join(f" [{self.gates[c].short()}]" for c in failed)

    def rests_on(self, labels: pd.DataFrame) -> str:
        """Which coders gave these labels and how many actions each, e.g. "gold (112
        actions), hcrc (231 actions)": what a figure over them rests on."""
        used = _used(labels)
        return ", ".join(f"{c} ({used[c]} actions)" for c in self.priority if used.get(c)) or (
            "nobody"
        )

    def restricted(self, action_ids: Collection[str]) -> LabelSource:
        """The same source over these actions only (``used`` counted again)."""
        labels = self.labels[self.labels["action_id"].isin(set(action_ids))]
        return replace(self, labels=labels.reset_index(drop=True), used=_used(labels))


def _used(frame: pd.DataFrame) -> dict[str, int]:
    if frame.empty:
        return {}
    used = frame.groupby("coder")["action_id"].nunique().to_dict()
    return {str(k): int(v) for k, v in used.items()}


DEFAULT_ORDER = (
    "gold, then the corpus coding, then LLM coders that passed their gate, then rule sets"
)


@dataclass(frozen=True)
class Gate:
    """The newest validation of an LLM coder (`llm-label`)."""

    coder: str
    gate: str | None
    """``pass``, ``fail`` or ``forced``; None: never validated."""
    kappa: float | None = None
    min_kappa: float | None = None
    run_id: int | None = None

    @property
    def passed(self) -> bool:
        return self.gate == "pass"

    def _kappa(self) -> str:
        return "no kappa" if self.kappa is None else f"Fleiss' kappa {self.kappa:.3f}"

    def short(self) -> str:
        if self.gate is None:
            return f"{self.coder}: never validated"
        return f"{self.coder}: FAILED validation, {self._kappa()}"

    def warning(self) -> str:
        if self.gate is None:
            return f"{self.coder} was never validated against gold (no llm-label gate)."
        below = f" < {self.min_kappa:g}" if self.min_kappa is not None else ""
        forced = ", labelled with --force" if self.gate == "forced" else ""
        return (
            f"{self.coder} FAILED its validation gate ({self._kappa()}{below}{forced}; "
            f"run {self.run_id}): its labels are not validated data."
        )


def llm_gates(store: Store) -> dict[str, Gate]:
    """Each LLM coder's newest validation gate."""
    gates: dict[str, Gate] = {}
    for run in store.analysis.llm_validation_runs():  # newest first
        coder = run.get("coder")
        if coder and coder not in gates:
            gates[coder] = Gate(
                coder, run.get("gate"), run.get("kappa"), run.get("min_kappa"), run.get("id")
            )
    return gates


def default_priority(
    available: Sequence[str], corpus: Collection[str], gates: dict[str, Gate]
) -> list[str]:
    """The sources of a label when none is named, in order: gold, then the corpus coding(s),
    then each LLM coder that passed its gate, then each rule set (``rule:*``, deterministic:
    no gate) (a new kind of source is one more line)."""
    order = [GOLD] if GOLD in available else []
    order += sorted(c for c in available if c in corpus and c != GOLD)
    order += sorted(c for c in available if is_llm(c) and c in gates and gates[c].passed)
    order += sorted(c for c in available if is_rule(c) and c not in order)
    return order


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

    Without ``coders``: :func:`default_priority`; each action's own report when every
    coder of the codebook is a participant (``self:*``). ``source`` = :data:`OWN_REPORTS`:
    each action's own report. With ``required`` an empty result is a :class:`UsageError`
    naming the coders that do exist.
    """
    available = store.labels.coders(codebook)
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
    gates = llm_gates(store) if any(is_llm(c) for c in available) else {}
    for c in available:  # an LLM coder's labels without a validation run: never validated
        if is_llm(c) and c not in gates:
            gates[c] = Gate(c, None)
    corpus = store.labels.corpus_coders() if default else ()
    priority = list(coders) if coders else default_priority(available, corpus, gates)
    unknown = [c for c in priority if c not in available]
    if coders and unknown and required:
        raise UsageError(
            f"--coders: '{unknown[0]}' has no labels for codebook '{codebook}'",
            hint="coders: " + (", ".join(available) or "none yet"),
        )
    frame = pick_first(
        store.analysis.answered_labels(codebook, priority), priority, per_action=per_action
    )
    only_self = available and all(c.startswith(SELF_PREFIX) for c in available)
    if frame.empty and default and only_self:
        # a probe log's codebook: each action carries its own agent's answers, nobody else's
        priority = list(available)
        rows = store.analysis.answered_labels(codebook, priority)
        frame = pick_first(rows, priority, per_action=per_action)
    if frame.empty and required:
        if not available:
            raise UsageError(
                f"codebook '{codebook}' has no labels in this database",
                hint="import or code some first (annotate import-labels, annotate code)",
            )
        raise UsageError(
            f"codebook '{codebook}' has no gold, corpus, validated LLM or rule labels "
            f"(coders: {', '.join(available)})",
            hint=f"pass --coders {available[0]} (comma-separated, first one that answered wins)",
        )
    left_out = tuple(c for c in available if is_llm(c) and c not in priority) if default else ()
    return LabelSource(
        codebook,
        tuple(priority),
        frame,
        _used(frame),
        default,
        per_action,
        {c: gates[c] for c in priority if c in gates},
        left_out,
    )


def own_report_source(
    store: Store, codebook: str, *, required: bool = True, named: bool = False
) -> LabelSource:
    """Each action's labels from its own actor's report (``self:<participant>``)."""
    frame = pd.DataFrame(store.analysis.own_report_labels(codebook), columns=LABEL_COLUMNS)
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
