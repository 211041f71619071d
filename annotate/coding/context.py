"""The turns around an item, each with its time relative to the item (what the coding and
adjudication screens show), and times as text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from annotate.models import Action, describe_with
from annotate.store import Store
from annotate.store.coding import CodingQueries, parse_time


@dataclass(frozen=True)
class ContextRow:
    action: Action
    text: str
    offset_s: float | None
    is_item: bool
    after: bool


def format_offset(seconds: float | None) -> str:
    """``-1:05`` / ``+0:08`` relative to the item; ``now`` for the item itself."""
    if seconds is None:
        return ""
    if abs(seconds) < 0.5:
        return "now"
    sign = "-" if seconds < 0 else "+"
    s = round(abs(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{h}:{m:02d}:{s:02d}" if h else f"{sign}{m}:{s:02d}"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    m = round(s / 60)
    return f"{m}m" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def time_of(action: Action, start: datetime | None) -> float | None:
    t = parse_time(action.timestamp)
    if t is not None and start is not None:
        return (t - start).total_seconds()
    return action.elapsed_s


def time_in_session(queries: CodingQueries, action: Action) -> float | None:
    """Seconds into its session at which the action happened (None: the log has no times)."""
    return time_of(action, queries.session_start(action.session))


def item_context_rows(
    store: Store,
    queries: CodingQueries,
    action: Action,
    before: int,
    after: int,
    *,
    show: Sequence[str] = (),
) -> list[ContextRow]:
    """The action among its ``before`` preceding and ``after`` following turns, each with
    its time relative to the action's and the ``show`` fields of its meta (what the coding
    and adjudication screens show)."""
    around = store.actions.context(action, before=before, after=after)
    start = queries.session_start(action.session)
    t0 = time_of(action, start)
    item = ContextRow(
        action, describe_with(action, show), 0.0 if t0 is not None else None, True, False
    )
    rows: list[ContextRow] = []
    placed = False
    for a in around:
        if not placed and a.seq > action.seq:
            rows.append(item)
            placed = True
        t = time_of(a, start)
        offset = t - t0 if t is not None and t0 is not None else None
        rows.append(ContextRow(a, describe_with(a, show), offset, False, placed))
    if not placed:
        rows.append(item)
    return rows
