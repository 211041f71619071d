"""The share of each code within each group (a table and a chart of the report), and codes as
the report orders and names them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from annotate.analysis.report_model import Table
from annotate.analysis.stats import role_key
from annotate.codebook import Question


def _ordered(values: Sequence[str], column: str) -> list[str]:
    if column == "role":
        return sorted(values, key=role_key)
    return sorted(values)


def question_codes(
    question: Question | None, seen: Sequence[str], *, sets: bool = False
) -> list[str]:
    """The question's codes in codebook order (the codes a value may hold, or with ``sets``
    the codes a set may hold: multi-select options, yes/no reasons), then any other code
    seen in the labels."""
    known = [] if question is None else (question.set_codes if sets else question.codes)
    return list(known) + sorted(set(seen) - set(known))


def option_label(code: str, labels: Mapping[str, str]) -> str:
    """A code as charts show it: its codebook label, with the code when the two differ
    (``Request repair (ReqRepair)``; ``Acknowledge``; a code without a label as is)."""
    label = labels.get(str(code))
    if not label or label == code:
        return str(code)
    if label.lower() == str(code).lower():
        return label
    return f"{label} ({code})"


def with_n(name: Any, n: Any) -> str:
    return f"{name} (n = {int(n)})"


def code_shares(
    answers: pd.DataFrame, by: str, codes: Sequence[str], *, multi: bool = False
) -> tuple[pd.DataFrame, pd.Series]:
    """Share of each code (rows) within each group of ``by`` (columns), and the group sizes.

    Multi-select: the share of answers that include the code (shares may add up past 1).
    """
    groups = _ordered(list(answers[by].unique()), by)
    sizes = answers.groupby(by).size().reindex(groups, fill_value=0)
    if multi:
        counts = pd.DataFrame(
            {
                g: [sum(c in cs for cs in answers.loc[answers[by] == g, "codes"]) for c in codes]
                for g in groups
            },
            index=list(codes),
        )
    else:
        counts = pd.crosstab(answers["value"], answers[by]).reindex(
            index=list(codes), columns=groups, fill_value=0
        )
    shares = counts.div(sizes.replace(0, np.nan), axis=1).fillna(0.0)
    shares.index.name, shares.columns.name = "code", by
    return shares.astype(float), sizes


def share_table(
    key: str,
    title: str,
    shares: pd.DataFrame,
    sizes: pd.Series,
    labels: dict[str, str],
    n_label: str = "labelled actions",
    note: str = "",
) -> Table:
    groups = [str(g) for g in shares.columns]
    rows = [
        {"code": code, "label": labels.get(str(code), ""), **dict(zip(groups, values, strict=True))}
        for code, values in zip(shares.index, shares.to_numpy().tolist(), strict=True)
    ]
    rows.append({"code": "n", "label": n_label, **{str(g): int(n) for g, n in sizes.items()}})
    return Table(key, title, ["code", "label", *groups], rows, note, tuple(groups))


def chart_data(shares: pd.DataFrame, sizes: pd.Series, labels: Mapping[str, str]) -> pd.DataFrame:
    """Drop codes nobody used in any group (the table keeps them); codes are shown with
    their labels and each group (a series) with its n."""
    data = shares[(shares > 0).any(axis=1)].copy()
    data.index = pd.Index([option_label(c, labels) for c in data.index], name="code")
    data.columns = pd.Index(
        [with_n(c, sizes.get(c, 0)) for c in data.columns], name=shares.columns.name
    )
    return data
