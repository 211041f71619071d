"""`annotate agree --verify`: every figure a reference library computes, recomputed by it
from the same item x coder matrix, and the largest difference.

statsmodels gives Fleiss' kappa (over the items every coder answered) and Cohen's kappa of
each pair (weighted, linear or quadratic, at the ordinal, interval and ratio levels); the
``krippendorff`` package gives alpha at the question's level (and nominal alpha beside it).
:mod:`agreement` stays the one computation the outputs print; these two are the check.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from annotate.reliability.agreement_run import AgreementRun, QuestionResult

LIBRARIES = ("statsmodels", "krippendorff")
WEIGHTS = {"ordinal": "linear", "interval": "quadratic", "ratio": "quadratic"}
"""statsmodels' ``wt`` at each level (as :data:`agreement.report.WEIGHTS_OF_LEVEL`)."""


@dataclass(frozen=True)
class Check:
    question: str
    statistic: str
    ours: float | None
    reference: float | None
    library: str

    @property
    def difference(self) -> float | None:
        if self.ours is None or self.reference is None:
            return None
        return abs(self.ours - self.reference)

    @property
    def agrees(self) -> bool:
        """Both give a number and they match, or neither gives one."""
        if self.ours is None or self.reference is None:
            return self.ours is None and (self.reference is None or np.isnan(self.reference))
        return self.difference is not None and self.difference < 1e-9

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "statistic": self.statistic,
            "annotate": self.ours,
            "reference": self.reference,
            "library": self.library,
            "difference": self.difference,
        }


@dataclass(frozen=True)
class Verification:
    versions: dict[str, str]
    checks: tuple[Check, ...]

    @property
    def max_difference(self) -> float:
        found = [c.difference for c in self.checks if c.difference is not None]
        return max(found, default=0.0)

    @property
    def ok(self) -> bool:
        return all(c.agrees for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "versions": self.versions,
            "max_difference": self.max_difference,
            "ok": self.ok,
            "checks": [c.to_dict() for c in self.checks],
        }


def _number(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if np.isnan(value) else value


def _fleiss(codes: np.ndarray, k: int) -> float | None:
    from statsmodels.stats.inter_rater import fleiss_kappa

    complete = codes[(codes >= 0).all(axis=1)]
    if len(complete) == 0:
        return None
    table = np.stack([(complete == j).sum(axis=1) for j in range(k)], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _number(fleiss_kappa(table, method="fleiss"))


def _cohen(a: np.ndarray, b: np.ndarray, k: int, wt: str | None) -> float | None:
    from statsmodels.stats.inter_rater import cohens_kappa

    both = (a >= 0) & (b >= 0)
    if not both.any():
        return None
    table = np.zeros((k, k))
    np.add.at(table, (a[both], b[both]), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _number(cohens_kappa(table, wt=wt, return_results=False))


def _alpha(codes: np.ndarray, k: int, level: str) -> float | None:
    import krippendorff

    data = np.where(codes >= 0, codes, np.nan).astype(float).T  # coders x items
    if np.isnan(data).all():
        return None
    try:
        value = krippendorff.alpha(
            reliability_data=data, level_of_measurement=level, value_domain=list(range(k))
        )
    except (ValueError, ZeroDivisionError):  # one value in the data: alpha is undefined
        return None
    return _number(value)


def _pair_kappas(results: dict[str, Any], key: str) -> dict[tuple[str, str], float | None]:
    return {(p["coder_a"], p["coder_b"]): p["kappa"] for p in results.get(key) or ()}


def verify_question(result: QuestionResult) -> list[Check]:
    """The checks of one question's value figures (kappa, alpha): none for set answers."""
    from annotate.reliability.matrices import value_matrix

    if result.report is None:
        return []
    matrix = value_matrix(result.data)
    codes = np.asarray(matrix.codes, dtype=np.int64)
    k = len(matrix.categories)
    q = result.question.id
    level = result.question.level or "nominal"
    ours = result.report.to_dict()
    checks = [
        Check(q, "Fleiss' kappa", ours["fleiss"]["kappa"], _fleiss(codes, k), "statsmodels"),
        Check(q, f"Krippendorff's alpha ({level})", ours["alpha"]["alpha"],
              _alpha(codes, k, level), "krippendorff"),
    ]  # fmt: skip
    if level != "nominal" and ours.get("alpha_nominal"):
        checks.append(
            Check(q, "Krippendorff's alpha (nominal)", ours["alpha_nominal"]["alpha"],
                  _alpha(codes, k, "nominal"), "krippendorff")
        )  # fmt: skip
    column = {c: j for j, c in enumerate(matrix.coders)}
    for key, wt in (("pairwise", None), ("pairwise_weighted", WEIGHTS.get(level))):
        if key == "pairwise_weighted" and wt is None:
            continue
        for (a, b), kappa in _pair_kappas(ours, key).items():
            name = "Cohen's kappa" if wt is None else f"Cohen's kappa ({wt} weights)"
            reference = _cohen(codes[:, column[a]], codes[:, column[b]], k, wt)
            checks.append(Check(q, f"{name} {a}/{b}", kappa, reference, "statsmodels"))
    return checks


def verify(run: AgreementRun) -> Verification:
    checks = [c for r in run.questions for c in verify_question(r)]
    return Verification({name: version(name) for name in LIBRARIES}, tuple(checks))
