"""Write the probe-alignment demo: a synthetic CollabSim-style probe log (stdlib only,
seeded, deterministic).

Three agents (A, B, C) take turns on a shared route task, 18 turns a session, three sessions
in each of two conditions (``baseline``, ``limited_bandwidth``), with two model backbones.
After its action every agent answers the three probes (task state, partner intent, own
plan) in free text and gives a confidence. The answers are built so that the agents
converge as the task goes on (late answers share their wording), more slowly under limited
bandwidth, and confidence rises with progress: enough to see the figures move, not data
to draw findings from.

    python data/make_demo_probes.py      # rewrites data/demo_probes/log.jsonl
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent / "demo_probes" / "log.jsonl"
AGENTS = ("A", "B", "C")
TURNS = 18
CONDITIONS = {"baseline": 0.0, "limited_bandwidth": 0.25}
MODELS = ("llama-4", "qwen-3")
PLACES = [
    "the old mill",
    "the lake",
    "the stone bridge",
    "the forest edge",
    "the crest",
    "the swamp",
    "the finish flag",
]

STATE_SHARED = "We have passed {done} of 7 landmarks and are heading to {next}."
STATE_OWN = [
    "I think we are somewhere near {guess}, but the route is unclear.",
    "Still exploring; my map shows {guess} but I am not sure where the others are.",
    "The group seems lost around {guess}.",
    "We may have skipped {guess}; positions do not match.",
]
INTENT_SHARED = "My partners are trying to reach {next} together with me."
INTENT_OWN = [
    "My partner might be testing whether {guess} is on my map.",
    "They seem to want to trade information about {guess}.",
    "I cannot tell what my partner wants; maybe to go back to {guess}.",
    "Perhaps they are describing {guess} to the others.",
]
PLAN_SHARED = "I will describe {next} and confirm we all go there."
PLAN_OWN = [
    "I will ask where {guess} is on their maps.",
    "I plan to wait and see what the others do about {guess}.",
    "Propose a detour around {guess}.",
    "Check my own map again for {guess}.",
]
ACTIONS = [
    ("send_message", "Go past {next}, keep it on your left."),
    ("send_message", "Where is {guess} on your map?"),
    ("propose_route", "route via {next}"),
    ("send_message", "Got it, heading to {next}."),
]


def _answer(rng: random.Random, converged: bool, shared: str, own: list[str], **kw: str) -> str:
    return shared.format(**kw) if converged else rng.choice(own).format(**kw)


def session_lines(session: str, condition: str, model: str, rng: random.Random) -> list[dict]:
    lag = CONDITIONS[condition]
    lines = []
    for turn in range(1, TURNS + 1):
        agent = AGENTS[(turn - 1) % len(AGENTS)]
        progress = turn / TURNS
        done = min(6, int(progress * 7))
        kw = {"done": str(done), "next": PLACES[done], "guess": rng.choice(PLACES)}
        converge = min(1.0, max(0.0, (progress - lag) * 1.2))
        kind, text = ACTIONS[rng.randrange(len(ACTIONS))]
        confidence = min(1.0, max(0.0, 0.35 + 0.55 * progress - lag / 2 + rng.gauss(0, 0.06)))
        lines.append(
            {
                "session": session,
                "turn": turn,
                "agent": agent,
                "condition": condition,
                "config": {"group_size": len(AGENTS), "model": model},
                "action": {"type": kind, "content": text.format(**kw)},
                "probes": {
                    "task_state": _answer(
                        rng, rng.random() < converge, STATE_SHARED, STATE_OWN, **kw
                    ),
                    "partner_intent": _answer(
                        rng, rng.random() < converge * 0.8, INTENT_SHARED, INTENT_OWN, **kw
                    ),
                    "own_plan": _answer(
                        rng, rng.random() < converge * 0.9, PLAN_SHARED, PLAN_OWN, **kw
                    ),
                    "confidence": round(confidence, 2),
                },
            }
        )
    return lines


def main() -> None:
    rng = random.Random(37)
    lines = []
    for condition in CONDITIONS:
        for k in range(3):
            model = MODELS[k % len(MODELS)]
            lines += session_lines(f"{condition}-{k + 1}", condition, model, rng)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"{OUT}: {len(lines)} lines")


if __name__ == "__main__":
    main()
