"""Checkpoint answers as memory anchors for self-annotation.

During a session, participants answer the survey at checkpoints (at 25%, 50% and 75% of the
task). When they later annotate their own actions, the checkpoint answer closest in time to
each action is shown as an anchor. Checkpoints come from the log itself (actions of type
``checkpoint``) or from a file given with ``--checkpoints`` (CSV or JSONL with the columns
``session``, ``participant``, ``time`` and ``answers``; ``time`` is an ISO 8601 time or the
seconds since the session began, ``answers`` text or, in JSONL, an object such as
``{"Q1": "t3", "Q4": "yes"}``; an optional ``label`` names the checkpoint, e.g. ``50%``).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from annotate.codebook import Codebook
from annotate.coding.answers import code_label
from annotate.errors import UsageError
from annotate.models import Action
from annotate.store.coding import parse_time

FIELDS = ("session", "participant", "time", "answers")


@dataclass(frozen=True)
class Checkpoint:
    session: str
    participant: str | None
    seconds: float | None
    """Seconds since the session began."""
    answers: str | dict[str, Any]
    label: str | None = None


def _seconds(value: Any, start: datetime | None, where: str) -> float | None:
    if value is None or value == "":
        raise UsageError(f"{where}: no time given (an ISO 8601 time or seconds)")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    try:
        return float(text)
    except ValueError:
        pass
    t = parse_time(text)
    if t is None:
        raise UsageError(f"{where}: time '{text}' is neither an ISO 8601 time nor seconds")
    if t.tzinfo is None:
        from datetime import UTC

        t = t.replace(tzinfo=UTC)
    return (t - start).total_seconds() if start is not None else None


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        fh = path.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror})") from exc
    with fh:
        if path.suffix.lower() in {".jsonl", ".json", ".ndjson"}:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UsageError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
                if not isinstance(obj, dict):
                    raise UsageError(f"{path}:{lineno}: expected a JSON object")
                yield lineno, obj
        else:
            reader = csv.DictReader(fh)
            missing = [f for f in FIELDS if f not in (reader.fieldnames or [])]
            if missing:
                raise UsageError(
                    f"{path}:1: missing column '{missing[0]}'",
                    hint="columns: " + ", ".join(FIELDS) + " (and optionally label)",
                )
            for row in reader:
                yield reader.line_num, row


def read_checkpoints(
    path: Path, session_start: Callable[[str], datetime | None]
) -> list[Checkpoint]:
    """Checkpoints from a CSV or JSONL file; a bad line stops with ``file:line: problem``."""
    out: list[Checkpoint] = []
    try:
        for lineno, row in _rows(path):
            where = f"{path}:{lineno}"
            for f in ("session", "answers"):
                if row.get(f) in (None, "", {}):
                    raise UsageError(f"{where}: field '{f}' is missing or empty")
            answers = row["answers"]
            if not isinstance(answers, str | dict):
                raise UsageError(f"{where}: field 'answers' must be text or an object")
            session = str(row["session"])
            out.append(
                Checkpoint(
                    session=session,
                    participant=str(row["participant"]) if row.get("participant") else None,
                    seconds=_seconds(row.get("time"), session_start(session), where),
                    answers=answers,
                    label=str(row["label"]) if row.get("label") else None,
                )
            )
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 ({exc.reason})") from None
    return out


def from_actions(
    actions: Iterable[Action], seconds_of: Callable[[Action], float | None]
) -> list[Checkpoint]:
    """Checkpoints logged as actions: their answers are ``metadata.answers`` (or
    ``answers``) when the log gives them, else the action's content."""
    out = []
    for a in actions:
        meta = a.meta.get("metadata") if isinstance(a.meta.get("metadata"), dict) else {}
        answers = meta.get("answers") or a.meta.get("answers") or a.content or ""
        label = meta.get("checkpoint") or a.meta.get("checkpoint")
        out.append(
            Checkpoint(
                a.session,
                a.participant,
                seconds_of(a),
                answers,
                str(label) if label else None,
            )
        )
    return out


def closest(
    checkpoints: Iterable[Checkpoint], action: Action, seconds: float | None, aliases: set[str]
) -> Checkpoint | None:
    """The checkpoint of ``action``'s session and participant (``aliases``: the names it
    goes by) closest in time to it; a checkpoint with no participant counts for everyone."""
    best: tuple[float, Checkpoint] | None = None
    for c in checkpoints:
        if c.session != action.session or (c.participant and c.participant not in aliases):
            continue
        gap = abs(c.seconds - seconds) if c.seconds is not None and seconds is not None else 1e18
        if best is None or gap < best[0]:
            best = (gap, c)
    return best[1] if best else None


def format_answers(answers: str | dict[str, Any], codebook: Codebook) -> str:
    """``Q1: Clear on what to do and working on it · Q4: No, ...`` from the codes: an object
    ``{"Q1": "t3", "Q4": ["no", "n2"]}`` or text ``Q1=t3; Q4=no+n2``; other text as it is."""
    if isinstance(answers, str):
        pairs = [p.partition("=") for p in answers.split(";") if p.strip()]
        if not pairs or not all(sep and k.strip() for k, sep, _ in pairs):
            return " ".join(answers.split())
        answers = {k.strip(): v.strip().split("+") for k, _, v in pairs}
    parts = []
    ids = {q.id: q for q in codebook.questions}
    for qid, value in answers.items():
        q = ids.get(str(qid))
        values = value if isinstance(value, list) else [value]
        codes = [str(v).strip() for v in values if str(v).strip()]
        shown = [_short(code_label(q, c)) if q is not None else c for c in codes]
        parts.append(f"{qid}: {', '.join(shown)}")
    return " · ".join(parts)


def _short(label: str, most: int = 32) -> str:
    return label if len(label) <= most else label[: most - 1].rstrip() + "…"
