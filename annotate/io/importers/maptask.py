"""HCRC Map Task dialogue files: one move per line, ``speaker|text|label``.

The session is the file name (``q1ec1``); its ``ec``/``nc`` part is the eye-contact
condition; ``g`` is the giver (guide) and ``f`` the follower.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from annotate.io.importers.base import ImportOptions, Item, Problem
from annotate.models import Action, ImportedLabel

ROLES = {"g": "guide", "f": "follower"}
CONDITION = re.compile(r"q\d+(ec|nc)\d+", re.IGNORECASE)


def looks_like_maptask(line: str) -> bool:
    return line.count("|") >= 2 and line.split("|", 1)[0].strip() in ROLES


def parse(path: Path, options: ImportOptions) -> Iterator[tuple[int, Item]]:
    session = path.stem
    match = CONDITION.fullmatch(session)
    condition = options.condition or (match.group(1).lower() if match else None)
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if line.count("|") < 2:
                yield lineno, Problem(lineno, "expected speaker|text|label")
                continue
            speaker, rest = line.split("|", 1)
            text, label = rest.rsplit("|", 1)
            speaker, label = speaker.strip(), label.strip()
            if speaker not in ROLES:
                yield lineno, Problem(lineno, f"speaker must be g or f, not '{speaker}'")
                continue
            if not text.strip():
                yield lineno, Problem(lineno, "empty text (expected speaker|text|label)")
                continue
            if not label:
                yield lineno, Problem(lineno, "empty label (expected speaker|text|label)")
                continue
            action_id = f"{session}:{lineno:04d}"
            yield (
                lineno,
                Action(
                    id=action_id,
                    session=session,
                    seq=lineno,
                    action_type="message",
                    content=text.strip(),
                    participant=f"{session}:{speaker}",
                    role=options.roles.get(speaker, ROLES[speaker]),
                    condition=condition,
                    meta={"speaker": speaker},
                ),
            )
            yield lineno, ImportedLabel(action_id, label, lineno)
