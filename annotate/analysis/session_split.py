"""`annotate split-sessions`: a session-level train/test split matched on distributions.

Every session is described by a feature vector: per role block (Guide, then Follower, then
any other role; one block when the data have no roles), the share of each action type among
that role's actions in the session, and for each chosen codebook and question the share of
that role's labelled actions given each code (every code of the codebook, plus any other
code seen; a code the session never used is 0): for a single-choice question each value;
for a multi-select question each option (the share of answers that include it); for a
yes/no question with reasons (Q4) both: the share of yes and of no, and the share of
answers that give each reason (columns ``role:cb.Q4.reason:code``).

Within each group (each condition with ``--per condition``, otherwise all sessions) the test
subset T of the requested size k is the one minimising

    objective(T) = sum_f |mean_T(f) - mean_R(f)| + sum_f |sd_T(f) - sd_R(f)|

over the features f, where R is the rest of the group (train) and sd is the population
standard deviation (ddof = 0, so a side of one session is defined: its sd is 0). The
objective of a split is the sum over groups.

Search: when a group has at most ``max_exhaustive`` (default 10^6) subsets, all of them are
scored (vectorised with numpy over chunks of combinations, in lexicographic order).
Otherwise a seeded local search: ``restarts`` random test subsets, each improved by
steepest descent over single swaps (one test session for one train session; all
k * (n - k) swaps scored at once; the first best swap is made) until no swap lowers the
objective by more than 1e-12; the best local optimum wins. It usually finds the exhaustive
optimum on small cases (tested) but is not guaranteed to. For comparison a seeded random
split of the same sizes is scored too.

Groups that cannot be split (``k`` or fewer sessions, e.g. the sessions without a
condition, shown as ``-``) are refused with their names, or with ``small_groups="train"``
put in train whole, and listed. A group whose sessions do not differ in any feature has
nothing to match (every subset scores 0, and the scan would return the first sessions by
name): it gets the seeded random split instead, with method ``random`` and a note.

Ties: both searches score subsets from running sums and sums of squares, so subsets whose
objectives are equal in exact arithmetic can differ by rounding (about 1e-16). Both treat
values within ``TIE`` (1e-12) of each other as equal: the exhaustive scan keeps the first
subset in lexicographic order among those within 1e-12 of the best, and a later subset
replaces it only when lower by more than that; the local search keeps the lexicographically
smallest (sorted indices) of local optima within 1e-12. The reported objective of the chosen
subset is recomputed directly.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from annotate.analysis import MAX_EXHAUSTIVE
from annotate.analysis.code_shares import question_codes
from annotate.analysis.coders import label_source
from annotate.analysis.stats import NO_VALUE, role_key
from annotate.codebook import Codebook
from annotate.errors import UsageError
from annotate.store import Store
from annotate.store.analysis import SessionSplitWrite

RESTARTS = 256
PER_CHOICES = ("condition",)
SMALL_GROUPS = ("refuse", "train")
CHUNK_FLOATS = 4_000_000  # floats per scoring chunk (about 32 MB)
TIE = 1e-12  # objectives closer than this are equal (they differ by rounding only)


# -- the objective ------------------------------------------------------------------------


def objective(features: np.ndarray, test: Sequence[int]) -> float:
    """The objective of one test subset (rows of ``features``), computed directly."""
    x = np.asarray(features, dtype=float)
    mask = np.zeros(len(x), dtype=bool)
    mask[list(test)] = True
    if mask.all() or not mask.any():
        raise ValueError("the test subset must leave at least one session on each side")
    t, r = x[mask], x[~mask]
    return float(
        np.abs(t.mean(0) - r.mean(0)).sum() + np.abs(t.std(0, ddof=0) - r.std(0, ddof=0)).sum()
    )


class _Scorer:
    """Scores many test subsets at once from their feature sums and sums of squares."""

    def __init__(self, features: np.ndarray, k: int):
        self.x = np.asarray(features, dtype=float)
        self.q = self.x**2
        self.n, self.k = len(self.x), k
        self.s1, self.s2 = self.x.sum(0), self.q.sum(0)

    def from_sums(self, t1: np.ndarray, t2: np.ndarray) -> np.ndarray:
        k, rest = self.k, self.n - self.k
        mt, mr = t1 / k, (self.s1 - t1) / rest
        vt = np.maximum(t2 / k - mt**2, 0.0)
        vr = np.maximum((self.s2 - t2) / rest - mr**2, 0.0)
        return np.abs(mt - mr).sum(-1) + np.abs(np.sqrt(vt) - np.sqrt(vr)).sum(-1)

    def subsets(self, idx: np.ndarray) -> np.ndarray:
        """Objectives of the subsets in ``idx`` (m x k indices)."""
        return self.from_sums(self.x[idx].sum(1), self.q[idx].sum(1))


@dataclass(frozen=True)
class Choice:
    """The chosen test subset of one group (indices into the group's rows)."""

    test: tuple[int, ...]
    objective: float
    method: str
    n_subsets: int
    evaluated: int


def _check_sizes(n: int, k: int) -> None:
    if k < 1 or k >= n:
        raise ValueError(f"a test subset of {k} of {n} sessions leaves a side empty")


def exhaustive_search(features: np.ndarray, k: int) -> Choice:
    """Score every subset of size ``k`` in lexicographic order; keep the first one whose
    value is within ``TIE`` of the smallest (see the module docs)."""
    n = len(features)
    _check_sizes(n, k)
    scorer = _Scorer(features, k)
    width = max(1, scorer.x.shape[1])
    chunk = max(1024, CHUNK_FLOATS // (k * width))
    combos = itertools.combinations(range(n), k)
    best_value, best_idx, offset = math.inf, (), 0
    while True:
        flat = np.fromiter(
            itertools.chain.from_iterable(itertools.islice(combos, chunk)), dtype=np.intp
        )
        if flat.size == 0:
            break
        idx = flat.reshape(-1, k)
        values = scorer.subsets(idx)
        i = int(np.argmax(values <= values.min() + TIE))  # the first of the chunk's best
        if values[i] < best_value - TIE:
            best_value, best_idx = float(values[i]), tuple(int(v) for v in idx[i])
        offset += len(idx)
    return Choice(best_idx, objective(features, best_idx), "exhaustive", offset, offset)


def local_search(features: np.ndarray, k: int, *, seed: int, restarts: int = RESTARTS) -> Choice:
    """Random restarts + steepest-descent single-swap local search (see module docs)."""
    n = len(features)
    _check_sizes(n, k)
    scorer = _Scorer(features, k)
    rng = np.random.default_rng([seed, 1])
    best_value, best_idx, evaluated = math.inf, (), 0
    for _ in range(restarts):
        in_test = np.zeros(n, dtype=bool)
        in_test[rng.choice(n, size=k, replace=False)] = True
        test, train = np.flatnonzero(in_test), np.flatnonzero(~in_test)
        t1, t2 = scorer.x[test].sum(0), scorer.q[test].sum(0)
        current = float(scorer.from_sums(t1, t2))
        evaluated += 1
        while True:
            # every swap (test[i] out, train[j] in) at once: shape (k, n - k, features)
            d1 = scorer.x[train][None, :, :] - scorer.x[test][:, None, :]
            d2 = scorer.q[train][None, :, :] - scorer.q[test][:, None, :]
            values = scorer.from_sums(t1 + d1, t2 + d2)
            evaluated += values.size
            i, j = np.unravel_index(int(np.argmin(values)), values.shape)
            if values[i, j] >= current - TIE:
                break
            current = float(values[i, j])
            t1, t2 = t1 + d1[i, j], t2 + d2[i, j]
            test[i], train[j] = train[j], test[i]
        candidate = tuple(sorted(int(v) for v in test))
        if current < best_value - TIE or (
            abs(current - best_value) <= TIE and candidate < best_idx
        ):
            best_value, best_idx = current, candidate
    return Choice(best_idx, objective(features, best_idx), "search", math.comb(n, k), evaluated)


def best_subset(
    features: np.ndarray,
    k: int,
    *,
    seed: int = 0,
    max_exhaustive: int = MAX_EXHAUSTIVE,
    restarts: int = RESTARTS,
) -> Choice:
    """Exhaustive when C(n, k) <= ``max_exhaustive``, otherwise :func:`local_search`."""
    if math.comb(len(features), k) <= max_exhaustive:
        return exhaustive_search(features, k)
    return local_search(features, k, seed=seed, restarts=restarts)


# -- features -----------------------------------------------------------------------------


def _guessed_kind(answers: pd.DataFrame) -> str:
    """The kind of a question the codebook does not have (an older version), from the
    answers: no values is multi, values with reasons is yes_no_reasons."""
    if answers["value"].isna().all():
        return "multi"
    return "yes_no_reasons" if any(len(cs) for cs in answers["codes"]) else "single"


def _value_is(frame: pd.DataFrame, code: str) -> pd.Series:
    return frame["value"] == code


def _codes_include(frame: pd.DataFrame, code: str) -> pd.Series:
    return frame["codes"].map(lambda cs: code in cs).astype(bool)


def _share_blocks(
    answers: pd.DataFrame,
    sessions: Sequence[str],
    roles: Sequence[str],
    prefix: str,
    codes: Sequence[str],
    hit: Callable[[pd.DataFrame, str], pd.Series],
) -> list[pd.DataFrame]:
    """Per role, the share of the role's answered actions in each session that ``hit`` the
    code (0 where the role answered nothing)."""
    blocks = []
    for role in roles:
        mine = answers[answers["role"] == role]
        total = mine.groupby("session").size().reindex(sessions, fill_value=0)
        block = {}
        for code in codes:
            n = mine[hit(mine, code)].groupby("session").size().reindex(sessions, fill_value=0)
            block[f"{role}:{prefix}:{code}"] = n / total.replace(0, 1)
        blocks.append(pd.DataFrame(block, index=sessions))
    return blocks


def session_features(
    actions: pd.DataFrame,
    labels: Mapping[str, pd.DataFrame] | None = None,
    codebooks: Mapping[str, Codebook] | None = None,
) -> pd.DataFrame:
    """Sessions x features (see the module docs); columns ``role:type:T``, ``role:cb.q:code``.

    ``actions``: action_id, session, role, action_type. ``labels``: per codebook, one row
    per (action_id, question) with value and codes (see :mod:`annotate.analysis.coders`).
    """
    acts = actions[["action_id", "session", "role", "action_type"]].copy()
    acts["role"] = acts["role"].fillna(NO_VALUE)
    roles = sorted(acts["role"].unique(), key=role_key)
    if roles == [NO_VALUE]:
        roles = ["all"]
        acts["role"] = "all"
    sessions = sorted(acts["session"].unique())
    blocks: list[pd.DataFrame] = []
    types = sorted(acts["action_type"].unique())
    for role in roles:
        mine = acts[acts["role"] == role]
        counts = pd.crosstab(mine["session"], mine["action_type"]).reindex(
            index=sessions, columns=types, fill_value=0
        )
        shares = counts.div(counts.sum(axis=1).replace(0, 1), axis=0)
        shares.columns = [f"{role}:type:{t}" for t in types]
        blocks.append(shares)
    for name, frame in (labels or {}).items():
        if frame.empty:
            continue
        joined = frame.merge(acts, on="action_id", how="inner")
        cb = (codebooks or {}).get(name)
        known = {q.id: q for q in cb.questions} if cb else {}
        for question in sorted(joined["question"].unique()):
            answers = joined[joined["question"] == question]
            q = known.get(question)
            kind = q.kind if q else _guessed_kind(answers)
            if kind != "multi":  # single, yes/no: the share of each value
                seen = sorted(answers["value"].dropna().unique())
                codes = question_codes(q, seen)
                prefix = f"{name}.{question}"
                blocks += _share_blocks(answers, sessions, roles, prefix, codes, _value_is)
            if kind != "single":  # multi-select options, yes/no reasons: share including each
                seen = sorted({c for cs in answers["codes"] for c in cs})
                codes = question_codes(q, seen, sets=True)
                prefix = f"{name}.{question}" + (".reason" if kind == "yes_no_reasons" else "")
                blocks += _share_blocks(answers, sessions, roles, prefix, codes, _codes_include)
    out = pd.concat(blocks, axis=1).fillna(0.0)
    out.index.name = "session"
    return out


# -- the command's library call -----------------------------------------------------------


@dataclass(frozen=True)
class GroupResult:
    group: str | None
    sessions: tuple[str, ...]
    test: tuple[str, ...]
    method: str
    n_subsets: int
    evaluated: int
    objective: float
    random_test: tuple[str, ...]
    random_objective: float
    seconds: float
    note: str | None = None
    """Why the split is not a matched one (method ``random``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "sessions": len(self.sessions),
            "test": list(self.test),
            "method": self.method,
            "n_subsets": self.n_subsets,
            "evaluated": self.evaluated,
            "objective": self.objective,
            "random_test": list(self.random_test),
            "random_objective": self.random_objective,
            "seconds": round(self.seconds, 3),
            "note": self.note,
        }


@dataclass(frozen=True)
class UnsplitGroup:
    """A group with too few sessions to split: all of them go to train."""

    group: str | None
    sessions: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "sessions": list(self.sessions), "part": "train"}


@dataclass(frozen=True)
class SessionSplitResult:
    name: str
    per: str | None
    n_test: int
    seed: int
    codebooks: tuple[str, ...]
    coders: tuple[str, ...]
    features: tuple[str, ...]
    groups: tuple[GroupResult, ...] = field(default_factory=tuple)
    unsplit: tuple[UnsplitGroup, ...] = field(default_factory=tuple)

    @property
    def objective(self) -> float:
        return sum(g.objective for g in self.groups)

    @property
    def random_objective(self) -> float:
        return sum(g.random_objective for g in self.groups)

    @property
    def method(self) -> str:
        methods = {g.method for g in self.groups}
        return methods.pop() if len(methods) == 1 else "mixed"

    def parts(self) -> dict[str, tuple[str, str | None]]:
        out: dict[str, tuple[str, str | None]] = {}
        for g in self.groups:
            for s in g.sessions:
                out[s] = ("test" if s in g.test else "train", g.group)
        for u in self.unsplit:
            for s in u.sessions:
                out[s] = ("train", u.group)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "per": self.per,
            "n_test": self.n_test,
            "seed": self.seed,
            "codebooks": list(self.codebooks),
            "coders": list(self.coders),
            "n_features": len(self.features),
            "method": self.method,
            "objective": self.objective,
            "random_objective": self.random_objective,
            "groups": [g.to_dict() for g in self.groups],
            "unsplit": [u.to_dict() for u in self.unsplit],
        }


def group_name(group: str | None) -> str:
    if group is None:
        return "the data"
    if group == NO_VALUE:
        return f"condition '{NO_VALUE}' (no condition)"
    return f"condition '{group}'"


def sessions_text(n: int) -> str:
    return f"{n} session" + ("" if n == 1 else "s")


def group_size(group: str | None, n: int) -> str:
    """``condition 'ec' (48 sessions)``, ``condition '-' (no condition, 1 session)``."""
    name = group_name(group)
    if name.endswith(")"):
        return f"{name[:-1]}, {sessions_text(n)})"
    return f"{name} ({sessions_text(n)})"


def _too_small(sizes: Mapping[str | None, int], n_test: int, small_groups: str) -> list[str | None]:
    """The groups that cannot be split; an error naming them unless they may go to train."""
    small = [g for g, n in sizes.items() if n <= n_test]
    if not small:
        return []
    if small_groups == "train" and len(small) < len(sizes):
        return small
    named = ", ".join(group_size(g, sizes[g]) for g in small)
    fixes = []
    if len(small) < len(sizes):
        fixes.append("--small-groups train to put their sessions in train")
    widest = min(sizes.values()) - 1
    if widest >= 1:
        every = "" if None in sizes else " to split every group"
        fixes.append(f"--test {widest} or less{every}")
    if fixes:
        hint = "pass " + ", or ".join(fixes)
    elif None in sizes:
        hint = "a split needs 2 or more sessions"
    else:
        hint = "leave out --per to split the sessions across conditions"
    raise UsageError(
        f"--test {n_test} needs {n_test + 1} sessions in a group; too few in {named}",
        hint=hint,
    )


def _nothing_to_match(x: np.ndarray) -> bool:
    """No feature differs between the sessions: every subset scores 0."""
    return x.shape[1] == 0 or bool(np.all(np.ptp(x, axis=0) == 0))


def split_groups(
    features: pd.DataFrame,
    groups: Mapping[str, str | None],
    n_test: int,
    *,
    seed: int,
    small_groups: str = "refuse",
    max_exhaustive: int = MAX_EXHAUSTIVE,
    restarts: int = RESTARTS,
) -> tuple[list[GroupResult], list[UnsplitGroup]]:
    """Choose the test sessions of every group (``groups`` maps session -> group); the
    groups too small to split go to train when ``small_groups`` is ``train``."""
    rng = np.random.default_rng([seed, 0])
    names = sorted(set(groups.values()), key=lambda g: (g is None, str(g)))
    members = {g: sorted(s for s, h in groups.items() if h == g) for g in names}
    small = _too_small({g: len(members[g]) for g in names}, n_test, small_groups)
    out = []
    for group in names:
        if group in small:
            continue
        sessions = members[group]
        n = len(sessions)
        x = features.loc[sessions].to_numpy(dtype=float)
        random_idx = tuple(sorted(int(i) for i in rng.choice(n, size=n_test, replace=False)))
        started = time.perf_counter()
        if _nothing_to_match(x):
            choice = Choice(random_idx, objective(x, random_idx), "random", math.comb(n, n_test), 1)
            note = (
                f"its {n} sessions do not differ in any of the {x.shape[1]} features, so every "
                f"split scores 0: this is a seeded random split (seed {seed}), not a matched one"
            )
        else:
            choice = best_subset(
                x, n_test, seed=seed, max_exhaustive=max_exhaustive, restarts=restarts
            )
            note = None
        out.append(
            GroupResult(
                group=group,
                sessions=tuple(sessions),
                test=tuple(sessions[i] for i in choice.test),
                method=choice.method,
                n_subsets=choice.n_subsets,
                evaluated=choice.evaluated,
                objective=choice.objective,
                random_test=tuple(sessions[i] for i in random_idx),
                random_objective=objective(x, random_idx),
                seconds=time.perf_counter() - started,
                note=note,
            )
        )
    return out, [UnsplitGroup(g, tuple(members[g])) for g in small]


def split_sessions(
    store: Store,
    *,
    n_test: int,
    per: str | None = None,
    seed: int = 0,
    name: str = "main",
    codebooks: Sequence[str] = (),
    coders: Sequence[str] | None = None,
    replace: bool = False,
    small_groups: str = "refuse",
    max_exhaustive: int = MAX_EXHAUSTIVE,
    restarts: int = RESTARTS,
) -> SessionSplitResult:
    """Compute the distribution-matched split and store it under ``name``."""
    if n_test < 1:
        raise UsageError(f"--test must be at least 1; got {n_test}")
    if per is not None and per not in PER_CHOICES:
        raise UsageError(f"--per: unknown grouping '{per}'", hint="choices: condition")
    if small_groups not in SMALL_GROUPS:
        raise UsageError(
            f"--small-groups: unknown choice '{small_groups}'", hint="choices: refuse, train"
        )
    actions = pd.DataFrame(store.analysis.action_positions())
    if actions.empty:
        raise UsageError("no actions to split", hint="run `annotate import PATH` first")
    labels, books, used_coders = {}, {}, []
    for book in codebooks:
        source = label_source(store, book, coders)
        labels[book] = source.labels
        books[book] = store.codebooks.stored_codebook(book)
        used_coders += [c for c in source.priority if c not in used_coders]
    features = session_features(actions, labels, books)
    if per == "condition":
        first = actions.groupby("session")["condition"].first()
        groups = {s: (NO_VALUE if pd.isna(c) else str(c)) for s, c in first.items()}
    else:
        groups = dict.fromkeys(features.index)
    chosen, unsplit = split_groups(
        features,
        groups,
        n_test,
        seed=seed,
        small_groups=small_groups,
        max_exhaustive=max_exhaustive,
        restarts=restarts,
    )
    result = SessionSplitResult(
        name=name,
        per=per,
        n_test=n_test,
        seed=seed,
        codebooks=tuple(codebooks),
        coders=tuple(used_coders),
        features=tuple(features.columns),
        groups=tuple(chosen),
        unsplit=tuple(unsplit),
    )
    store.analysis.create_session_split(
        SessionSplitWrite(
            name=name,
            per=per,
            n_test=n_test,
            seed=seed,
            codebooks=result.codebooks,
            coders=result.coders,
            method=result.method,
            objective=result.objective,
            random_objective=result.random_objective,
            details={
                "groups": [g.to_dict() for g in result.groups],
                "unsplit": [u.to_dict() for u in result.unsplit],
                "features": list(result.features),
                "max_exhaustive": max_exhaustive,
                "restarts": restarts,
            },
            parts=result.parts(),
        ),
        replace=replace,
    )
    return result
