"""TGCO's rule-based audit (seed paper 001, Appendix C.2, Algorithm 3) as a coder.

For a message of agent i at timestep t with request unit (o, a, j), in this order:

1. no request unit -> Unstructured;
2. j is not another agent of the episode, or the message is not recipe-relevant ->
   Ineffective;
3. an accepted (uncorrected) action (a, o), by anyone, at a timestep before t -> Redundant
   (checked before the lookup: a later repetition does not make it Effective);
4. the match: the first accepted action (a, o) by j after the message in trace order with
   timestep <= t + w; none -> Ineffective (``delayed`` when j does it later than t + w);
5. a corrected action by j between the message and the match -> Assisted, else Effective.

An event is read through field paths (:class:`Params`) of a record that holds the action's
``meta`` and, over it, ``type`` (the action type: ``message`` or the action's name),
``agent`` (participant, else role), ``content`` and ``seq``. The request unit comes from the
structured field ``request: {object, action, target}`` where the event has one, else from
the message by :func:`parse_request`. A missing ``recipe_relevant`` counts as relevant (the
trace does not say it is not); ``verifier`` non-empty marks an action the verifier
corrected; ``timestep`` missing is the action's ``seq``.

Pure: no store, no I/O. :func:`audit_episode` takes one episode's events in trace order.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from annotate.io import field_paths

NAME = "tgco"
VERSION = "1.0"
CODEBOOK = "tgco"
QUESTION = "outcome"
MESSAGE = "message"

EFFECTIVE, ASSISTED, REDUNDANT, INEFFECTIVE, UNSTRUCTURED = (
    "Effective",
    "Assisted",
    "Redundant",
    "Ineffective",
    "Unstructured",
)
OUTCOMES = (EFFECTIVE, ASSISTED, REDUNDANT, INEFFECTIVE, UNSTRUCTURED)
FALSE_WORDS = frozenset({"false", "no", "0", "n", "f", ""})


@dataclass(frozen=True)
class Params:
    """The window and where each field of an event is read (dotted paths)."""

    w: float = 5
    timestep: str = "timestep"
    object: str = "object"
    request_object: str = "request.object"
    request_action: str = "request.action"
    request_target: str = "request.target"
    verifier: str = "verifier"
    recipe_relevant: str = "recipe_relevant"

    @classmethod
    def parse(cls, pairs: Mapping[str, str]) -> Params:
        """From ``--param NAME=VALUE`` pairs; ``ValueError`` naming a bad one."""
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in pairs.items():
            if key not in known:
                raise ValueError(f"unknown parameter '{key}' (parameters: {', '.join(known)})")
            if key == "w":
                try:
                    w = float(value)
                except ValueError:
                    raise ValueError(f"w must be a number of timesteps, not '{value}'") from None
                if not w >= 0 or w == float("inf"):
                    raise ValueError(f"w must be a number of timesteps, 0 or more, not '{value}'")
                values[key] = int(w) if w.is_integer() else w
            else:
                values[key] = value
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Event:
    """One event of an episode as the rule sees it."""

    id: str
    timestep: float
    agent: str | None
    type: str
    object: str | None = None
    corrected: bool = False
    relevant: bool = True
    request: tuple[str | None, str | None, str | None] | None = None
    """(object, action, target) of a message's structured request, when the trace has one."""
    text: str | None = None


@dataclass(frozen=True)
class Decision:
    """The rule's answer for one message, and why (stored as the label's provenance)."""

    action_id: str
    outcome: str
    reason: str
    request: tuple[str | None, str | None, str | None] | None = None
    match: str | None = None
    delayed: bool = False


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in FALSE_WORDS
    return bool(value)


def _number(value: Any, fallback: float) -> float:
    if isinstance(value, bool) or value is None:
        return fallback
    try:
        return float(value)
    except (TypeError, ValueError):
        return fallback


def _reader(path: str) -> Callable[[Mapping[str, Any]], Any]:
    """:func:`field_paths.get` of one path, made once: a plain key is one dict lookup."""
    if "." not in path:
        return lambda record: record.get(path)
    return lambda record: field_paths.get(record, path)


class Reader:
    """Reads events from records through the field paths of :class:`Params` (each path
    turned into a reader once, not parsed again for each of a million events)."""

    def __init__(self, params: Params):
        self.timestep = _reader(params.timestep)
        self.object = _reader(params.object)
        self.request = tuple(
            _reader(p)
            for p in (params.request_object, params.request_action, params.request_target)
        )
        self.verifier = _reader(params.verifier)
        self.relevant = _reader(params.recipe_relevant)

    def event(self, record: Mapping[str, Any]) -> Event:
        """An event from a record: ``meta`` with ``type``, ``agent``, ``content``, ``seq``
        and ``id`` over it. A message has a request, a relevance and a text; an action an
        object and, maybe, a correction."""
        kind = str(record["type"])
        timestep = _number(self.timestep(record), float(record.get("seq") or 0))
        agent = _text(record.get("agent"))
        if kind != MESSAGE:
            return Event(
                record["id"],
                timestep,
                agent,
                kind,
                object=_text(self.object(record)),
                corrected=_truthy(self.verifier(record)),
            )
        parts = tuple(_text(read(record)) for read in self.request)
        relevant = self.relevant(record)
        return Event(
            record["id"],
            timestep,
            agent,
            kind,
            relevant=relevant is None or _truthy(relevant),
            request=parts if parts[0] is not None and parts[1] is not None else None,
            text=_text(record.get("content")),
        )


def event_of(record: Mapping[str, Any], params: Params) -> Event:
    """One event read with :class:`Reader` (for a few; a trace reads through one reader)."""
    return Reader(params).event(record)


def _spaced(name: str) -> str:
    """``pickup`` matches "pickup", "pick up", "pick_up"; ``put_in`` "put in" too."""
    name = name.lower().replace("_", "").replace(" ", "")
    return "[ _]?".join(re.escape(c) for c in name)


def parse_request(
    text: str | None, actions: Iterable[str], agents: Iterable[str], speaker: str | None
) -> tuple[str | None, str | None, str | None] | None:
    """The request unit of a message without a structured one: (object, action, target).

    The action is one of the episode's action types named in the message ("pick up",
    "pickup", "pick_up" for ``pickup``), directly followed by its object ("pick up
    onion_1", "pickup(onion_1)", "chop the tomato_2"); the target is the first agent of
    the episode named in the message other than the speaker, else "you" when the speaker
    has exactly one partner, else None (a request without a target: Ineffective). No
    action with an object: no request unit (Unstructured)."""
    if not text:
        return None
    lowered = text.lower()
    found: tuple[int, str, str] | None = None
    for action in sorted(set(actions), key=len, reverse=True):
        pattern = rf"(?<![\w]){_spaced(action)}\s*\(?\s*(?:the\s+)?([A-Za-z][\w-]*)"
        m = re.search(pattern, lowered)
        if m and (found is None or m.start() < found[0]):
            found = (m.start(), action, m.group(1))
    if found is None:
        return None
    _, action, obj = found
    others = [a for a in agents if a != speaker]
    named = [
        (m.start(), a)
        for a in others
        if (m := re.search(rf"(?<![\w]){re.escape(a.lower())}(?![\w])", lowered))
    ]
    if named:
        target: str | None = min(named)[1]
    elif len(others) == 1 and re.search(r"(?<![\w])you(?![\w])", lowered):
        target = others[0]
    else:
        target = None
    return (obj, action, target)


def audit_episode(events: Sequence[Event], w: float = Params.w) -> list[Decision]:
    """Algorithm 3 over one episode's events (in trace order) with window ``w``: a
    decision per message."""
    agents = sorted({e.agent for e in events if e.agent is not None})
    actions = {e.type for e in events if e.type != MESSAGE}
    objects = {e.object.lower(): e.object for e in events if e.object is not None}
    first_done: dict[tuple[str, str], float] = {}
    accepted: dict[tuple[str | None, str, str], list[int]] = {}
    corrected: dict[str | None, list[int]] = {}
    for k, e in enumerate(events):
        if e.type == MESSAGE:
            continue
        if e.corrected:
            corrected.setdefault(e.agent, []).append(k)
        elif e.object is not None:
            key = (e.type, e.object)
            if key not in first_done or e.timestep < first_done[key]:
                first_done[key] = e.timestep
            accepted.setdefault((e.agent, e.type, e.object), []).append(k)
    decisions = []
    for p, m in enumerate(events):
        if m.type != MESSAGE:
            continue
        unit = m.request
        if unit is None:
            unit = parse_request(m.text, actions, agents, m.agent)
            if unit is not None:
                unit = (objects.get(unit[0].lower(), unit[0]) if unit[0] else None, *unit[1:])
        decisions.append(_decide(p, m, unit, w, events, agents, first_done, accepted, corrected))
    return decisions


def _decide(
    p: int,
    m: Event,
    unit: tuple[str | None, str | None, str | None] | None,
    w: float,
    events: Sequence[Event],
    agents: Sequence[str],
    first_done: Mapping[tuple[str, str], float],
    accepted: Mapping[tuple[str | None, str, str], list[int]],
    corrected: Mapping[str | None, list[int]],
) -> Decision:
    def decision(outcome: str, reason: str, **extra: Any) -> Decision:
        return Decision(m.id, outcome, reason, unit, **extra)

    if unit is None or unit[0] is None or unit[1] is None:
        return decision(UNSTRUCTURED, "no request unit (object, action, target)")
    o, a, j = unit
    if j is None or j == m.agent or j not in agents:
        why = "no target" if j is None else f"target '{j}' is not another agent of the episode"
        return decision(INEFFECTIVE, why)
    if not m.relevant:
        return decision(INEFFECTIVE, "not recipe-relevant")
    done = first_done.get((a, o))
    if done is not None and done < m.timestep:
        why = f"{a}({o}) accepted at timestep {_step(done)}, before the message"
        return decision(REDUNDANT, why)
    limit = m.timestep + w
    positions = accepted.get((j, a, o), [])
    later = positions[bisect_right(positions, p) :]
    match = next((k for k in later if events[k].timestep <= limit), None)
    if match is None:
        delayed = any(events[k].timestep > limit for k in later)
        why = f"{j} did not do {a}({o}) by timestep {_step(limit)}"
        return decision(INEFFECTIVE, why + (" (did it later)" if delayed else ""), delayed=delayed)
    mine = corrected.get(j, [])
    between = mine[bisect_right(mine, p) : bisect_right(mine, match)]
    found = events[match].id
    if between:
        why = f"{j} did {a}({o}) after a verifier correction ({events[between[0]].id})"
        return decision(ASSISTED, why, match=found)
    why = f"{j} did {a}({o}) at timestep {_step(events[match].timestep)}"
    return decision(EFFECTIVE, why, match=found)


def _step(t: float) -> str:
    return str(int(t)) if float(t).is_integer() else str(t)
