"""TGCO's trace-grounded metrics per group (seed paper 001, §3.2 and Appendix C.2).

Over the messages coded with the five TGCO outcomes, per group:

- ParseRate = messages with a request unit / messages (Unstructured counts against it);
- N_req = Effective + Assisted + Redundant + Ineffective (Unstructured left out, as
  Appendix C.2 filters it out before scoring);
- FollowRate = (Effective + Assisted) / N_req;
- DelayedRate = delayed / N_req, where delayed is an Ineffective request the partner
  carried out after the window (known from `annotate audit --rules tgco`, which records it
  with each label; without the audit it is not shown);
- CommCost = message tokens / N_int, with N_int = Effective + Assisted (the requests the
  partner took up: the accepted dependencies); a message's tokens are ``meta.tokens``
  where the trace gives them, else its words.

A rate whose denominator is 0 is None. One function computes them, for the table and the
chart alike.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from annotate.rules.tgco import (
    ASSISTED,
    EFFECTIVE,
    INEFFECTIVE,
    OUTCOMES,
    REDUNDANT,
    UNSTRUCTURED,
)

ALL = "all"
METRICS_KEY = "_metrics_by_"
"""In the key of each metrics table of the report (``tgco_metrics_by_meta.pairing``)."""
METRIC_COLUMNS = [
    "messages",
    "N_req",
    "ParseRate",
    "FollowRate",
    "DelayedRate",
    "CommCost",
    "tokens",
    *OUTCOMES,
]
RATES = ("ParseRate", "FollowRate", "DelayedRate")


def is_tgco(codes: list[str]) -> bool:
    """A question coded with TGCO's outcomes (the tgco codebook, or a copy of it)."""
    return set(OUTCOMES) <= set(codes)


def _ratio(num: float, den: float) -> float | None:
    return None if not den else float(num) / float(den)


def _metrics(part: pd.DataFrame) -> dict[str, Any]:
    counts = part["outcome"].value_counts()
    n = {o: int(counts.get(o, 0)) for o in OUTCOMES}
    messages = len(part)
    n_req = n[EFFECTIVE] + n[ASSISTED] + n[REDUNDANT] + n[INEFFECTIVE]
    n_int = n[EFFECTIVE] + n[ASSISTED]
    tokens = float(part["tokens"].sum())
    known = part["delayed"].notna() & (part["outcome"] != UNSTRUCTURED)
    delayed = None
    if known.any():
        hits = part.loc[known, "delayed"].astype(bool) & (part.loc[known, "outcome"] == INEFFECTIVE)
        delayed = _ratio(int(hits.sum()), n_req)
    return {
        "messages": messages,
        "N_req": n_req,
        "ParseRate": _ratio(messages - n[UNSTRUCTURED], messages),
        "FollowRate": _ratio(n_int, n_req),
        "DelayedRate": delayed,
        "CommCost": _ratio(tokens, n_int),
        "tokens": int(tokens) if tokens.is_integer() else tokens,
        **n,
    }


def metrics_by(frame: pd.DataFrame, by: str) -> list[dict[str, Any]]:
    """A row of metrics per value of ``by`` and one for all messages.

    ``frame``: a row per coded message with ``outcome``, ``tokens``, ``delayed`` (True,
    False, or None where unknown) and the column ``by``."""
    rows = [
        {by: str(group), **_metrics(part)}
        for group, part in frame.groupby(by, sort=True, dropna=False)
    ]
    rows.append({by: ALL, **_metrics(frame)})
    return rows


def composition(rows: list[dict[str, Any]], by: str) -> pd.DataFrame:
    """Share of each outcome among a group's messages (groups as rows, without ``all``)."""
    data = {
        f"{r[by]} (n = {r['messages']})": [
            r[o] / r["messages"] if r["messages"] else 0.0 for o in OUTCOMES
        ]
        for r in rows
        if r[by] != ALL
    }
    frame = pd.DataFrame(data, index=pd.Index(list(OUTCOMES), name="outcome")).T
    frame.index.name = by
    return frame
