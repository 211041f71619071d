"""Self-annotation: a participant codes every one of their own actions, in time order.

``annotate code --codebook mental_model_self --self NAME`` is the sampled coding session
(:class:`~annotate.coding.session.CodingSession`: resume, undo, notes, skips, a write per
answer) over another list of items: the participant's own actions instead of a sample. The
coder is recorded as ``self:NAME``. Each item also gets an anchor: the participant's
checkpoint answer closest in time to it (see :mod:`annotate.coding.anchors`).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from annotate.codebook import Answer, LoadedCodebook, Question
from annotate.coders import SELF_PREFIX, self_coder  # one spelling of self:NAME
from annotate.coding import anchors
from annotate.coding.context import format_offset, time_of
from annotate.coding.items import Item, ItemActions
from annotate.coding.session import CodingSession
from annotate.coding.session_inputs import CODER_PATTERN
from annotate.errors import NotFoundError, UsageError
from annotate.media import screenshot_ref
from annotate.models import Action
from annotate.store import Store
from annotate.store.self_queries import SelfQueries

__all__ = ["SELF_PREFIX", "SelfCodingSession", "self_coder"]


class SelfCodingSession(CodingSession):
    """One participant coding their own actions; ``who`` is their name or id, or with
    ``session`` their role in that session."""

    def __init__(
        self,
        store: Store,
        loaded: LoadedCodebook,
        who: str,
        *,
        session: str | None = None,
        checkpoints: Path | None = None,
        **kwargs: Any,
    ):
        self.self_queries = SelfQueries(store.db)
        self.only_session = session
        self.participant = self._participant(who, session)
        self.checkpoints_file = checkpoints
        self._anchors: list[anchors.Checkpoint] | None = None
        kwargs.pop("new_coder", None)  # a participant is never a stranger to their own log
        super().__init__(store, loaded, self_coder(self.participant), None, **kwargs)

    # -- what differs from a sampled session -------------------------------------------

    def _participant(self, who: str, session: str | None) -> str:
        found = self.self_queries.participants_named(who, session)
        if len(found) == 1:
            return found[0]
        where = f" in session '{session}'" if session else ""
        if not found:
            known = self.self_queries.some_participants()
            raise NotFoundError(
                f"no participant or role '{who}'{where} in the project file",
                hint="participants: " + (", ".join(known) or "none (import a log first)"),
            )
        raise UsageError(
            f"'{who}'{where} names {len(found)} participants: {', '.join(found)}",
            hint="pass one participant's name",
        )

    def _sample_name(self, sample: str | None) -> str:
        return f"own actions of {self.participant}"

    def _check_coder(self, new_coder: bool) -> bool:
        if not CODER_PATTERN.match(self.participant):
            raise UsageError(
                f"participant name '{self.participant}' cannot be a coder name",
                hint="letters, digits and . _ - @ + only (no spaces)",
            )
        return self.coder not in self.store.labels.coders(self.codebook.name)

    def _load_items(self) -> tuple[list[Item], int]:
        actions = self.self_queries.own_actions(self.participant, self.only_session)
        if not actions:
            raise NotFoundError(f"participant '{self.participant}' has no action to annotate")
        kept: list[tuple[str, tuple[Question, ...]]] = []
        for action in actions:
            qs = tuple(self.codebook.questions_for(action.action_type))
            if self.codebook.applies(action.action_type) and qs:
                kept.append((action.id, qs))
        skipped = len(actions) - len(kept)
        held = ItemActions(self.store, [aid for aid, _ in kept])
        items = [Item(i, aid, qs, held) for i, (aid, qs) in enumerate(kept)]
        by_id = {item.action_id: item for item in items}
        rows = self.store.labels.label_rows(
            self.codebook.name, coders=[self.coder], action_ids=list(by_id)
        )
        for r in rows:  # the participant's own earlier answers: resume where they stopped
            item = by_id.get(r["action_id"])
            if item is None:
                continue
            if r["value"] is not None or r["codes"]:
                item.answers[r["question"]] = Answer(r["value"], r["codes"], r["other_text"])
            item.flagged = item.flagged or bool(r["flagged"])
            item.skipped = item.skipped or bool(r["skipped"])
            item.note = item.note or r["note"]
            item.seconds += r["seconds"] or 0.0
        return items, skipped

    @cached_property
    def names_screenshots(self) -> bool:
        """Whether one of the participant's actions names a screenshot."""
        return any(screenshot_ref(it.action) for it in self.items)

    # -- the anchor ----------------------------------------------------------------------

    def _seconds(self, action: Action) -> float | None:
        return time_of(action, self.queries.session_start(action.session))

    def checkpoints(self) -> list[anchors.Checkpoint]:
        """Every checkpoint of the participant's sessions (read once)."""
        if self._anchors is None:
            sessions = [it.action.session for it in self.items]
            found = anchors.from_actions(self.self_queries.checkpoints(sessions), self._seconds)
            if self.checkpoints_file is not None:
                found += anchors.read_checkpoints(self.checkpoints_file, self.queries.session_start)
            self._anchors = found
        return self._anchors

    def load_checkpoints(self) -> None:
        """Read ``--checkpoints`` now, so that a bad file stops before the screen opens."""
        self.checkpoints()

    def anchor_text(self) -> str:
        """The anchor line of the current item: the closest checkpoint answer in its session."""
        action = self.item.action
        at = self._seconds(action)
        aliases = {self.participant, str(action.meta.get("participant_id") or "")}
        found = anchors.closest(self.checkpoints(), action, at, aliases - {""})
        if found is None:
            return "anchor: no checkpoint answer in this session"
        name = f"checkpoint {found.label}" if found.label else "checkpoint"
        when = ""
        if found.seconds is not None and at is not None:
            gap = found.seconds - at
            when = (
                " (at this action)"
                if abs(gap) < 0.5
                else f" ({format_offset(gap).lstrip('+-')} {'after' if gap > 0 else 'before'})"
            )
        return f"anchor: {name}{when}: {anchors.format_answers(found.answers, self.codebook)}"
