#!/usr/bin/env python3
"""Generate the multi-agent trace demo: Collab-Overcooked-style rollouts of two LLM agents.

Writes, under ``--out DIR`` (default: the folder this script is in)::

    DIR/demo_traces/overcooked.jsonl   8 episodes (2 pairings x 2 levels x 2), one event a
                                       line, nested as such logs are (action, message,
                                       verifier feedback), several events per timestep
    DIR/demo_traces_labels.csv         a human coder's (ana) TGCO outcome of every message

Every message is written to have one intended TGCO outcome (Effective, Assisted, Redundant,
Ineffective, Unstructured) under a window of 5 timesteps: a partner who acts in time, after a
verifier correction, work asked for that was done before, a wrong target, an ask that is not
recipe-relevant, a partner who acts too late or never, chat without a request. Some
messages carry their request as a structured field, the others only in words. Synthetic and
deterministic (stdlib only, fixed seeds: the same bytes every run)::

    python data/make_demo_traces.py
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20261127
W = 5
PAIRINGS = {
    # pairing: share of intended outcomes (Effective, Assisted, Redundant, Ineffective,
    # Unstructured); the second pairing follows less and is corrected more
    "gpt-4o->gemma": (0.45, 0.15, 0.15, 0.15, 0.10),
    "claude->gpt-4o": (0.25, 0.20, 0.25, 0.20, 0.10),
}
OUTCOMES = ("Effective", "Assisted", "Redundant", "Ineffective", "Unstructured")
LEVELS = {1: 7, 2: 10}  # requests per episode
EPISODES = 2
CHEF, ASSISTANT = "chef", "assistant"
ACTIONS = ("pickup", "chop", "put_in", "cook", "plate")
OBJECTS = ("onion", "tomato", "lettuce", "mushroom", "beef", "rice")
SAID = {"pickup": "pick up", "chop": "chop", "put_in": "put in", "cook": "cook", "plate": "plate"}
CHAT = ("great teamwork so far!", "ok, let's keep going", "thanks!", "we are doing well")
FEEDBACK = ("{o} is not reachable from here", "hands are full", "{o} is not on the counter")
CODER_ACCURACY = 0.85
CONFUSED = {
    "Effective": "Assisted",
    "Assisted": "Effective",
    "Redundant": "Effective",
    "Ineffective": "Unstructured",
    "Unstructured": "Ineffective",
}


@dataclass
class Episode:
    name: str
    pairing: str
    level: int
    rng: random.Random
    t: int = 0
    rows: list[dict] = field(default_factory=list)
    intended: dict[int, str] = field(default_factory=dict)  # row index -> outcome
    done: list[tuple[str, str, int]] = field(default_factory=list)  # accepted (a, o, t)
    fresh: list[tuple[str, str]] = field(default_factory=list)

    def event(self, t: int, agent: str, **fields: object) -> int:
        row = {"episode": self.name, "pairing": self.pairing, "level": self.level, "t": t}
        row["agent"] = agent
        row.update(fields)
        self.rows.append(row)
        return len(self.rows) - 1

    def act(self, t: int, agent: str, a: str, o: str, feedback: str = "") -> None:
        self.event(
            t,
            agent,
            action={"name": a, "object": o},
            message="",
            verifier={"feedback": feedback} if feedback else "",
            recipe_relevant=True,
        )
        if not feedback:
            self.done.append((a, o, t))

    def say(self, agent: str, text: str, request: dict | None, relevant: bool = True) -> int:
        message: dict = {"text": text}
        if request is not None and self.rng.random() < 0.7:
            message["request"] = request  # the rest: the request in words only
        tokens = round(len(text.split()) * (1.4 if self.pairing.startswith("claude") else 1.1))
        return self.event(
            self.t,
            agent,
            action=None,
            message=message,
            verifier="",
            recipe_relevant=relevant,
            tokens=tokens + 12,
        )


def _ask(a: str, o: str, target: str) -> str:
    return f"{target}, please {SAID[a]} {o}"


def _request(ep: Episode, outcome: str) -> None:
    rng = ep.rng
    if outcome == "Unstructured":
        ep.intended[ep.say(CHEF, rng.choice(CHAT), None)] = outcome
        ep.t += 1
        return
    if outcome == "Redundant":
        earlier = [(a, o) for a, o, t in ep.done if t < ep.t]
        if earlier:
            a, o = rng.choice(earlier)
            req = {"object": o, "action": a, "target": ASSISTANT}
            ep.intended[ep.say(CHEF, _ask(a, o, ASSISTANT), req)] = outcome
            ep.t += 1
            if rng.random() < 0.5:  # done again: still Redundant
                ep.act(ep.t, ASSISTANT, a, o)
                ep.t += 1
            return
        outcome = "Effective"
    a, o = ep.fresh.pop()
    if outcome == "Ineffective":
        kind = rng.choice(("target", "relevance", "late", "never"))
        target = "sous_chef" if kind == "target" else ASSISTANT
        req = {"object": o, "action": a, "target": target}
        i = ep.say(CHEF, _ask(a, o, target), req, relevant=kind != "relevance")
        ep.intended[i] = outcome
        if kind == "late":
            ep.act(ep.t + W + 1 + rng.randint(0, 2), ASSISTANT, a, o)
            ep.t = ep.rows[-1]["t"] + 1
        else:
            ep.t += 1
        return
    req = {"object": o, "action": a, "target": ASSISTANT}
    ep.intended[ep.say(CHEF, _ask(a, o, ASSISTANT), req)] = outcome
    ep.t += 1
    if outcome == "Assisted":
        feedback = rng.choice(FEEDBACK).format(o=o)
        ep.act(ep.t, ASSISTANT, a, o, feedback)
        ep.t += 1
    delay = rng.randint(0, 2)
    ep.t += delay
    if rng.random() < 0.4:  # the chef acts in the same timestep: two events, file order
        ep.act(ep.t, CHEF, "pickup", f"dish_{len(ep.rows)}")
    ep.act(ep.t, ASSISTANT, a, o)
    ep.t += 1


def episode(name: str, pairing: str, level: int, seed: int) -> Episode:
    rng = random.Random(seed)
    ep = Episode(name, pairing, level, rng)
    ep.fresh = [(a, f"{o}_{k}") for o in OBJECTS for k in (1, 2) for a in ACTIONS]
    rng.shuffle(ep.fresh)
    a, o = ep.fresh.pop()
    ep.act(0, CHEF, a, o)  # the chef starts on its own
    ep.t = 1
    weights = PAIRINGS[pairing]
    for _ in range(LEVELS[level]):
        _request(ep, rng.choices(OUTCOMES, weights)[0])
    return ep


def build() -> list[Episode]:
    episodes = []
    k = 0
    for pairing in PAIRINGS:
        for level in LEVELS:
            for e in range(1, EPISODES + 1):
                k += 1
                short = pairing.split("->")[0].split("-")[0]
                episodes.append(episode(f"{short}-L{level}-e{e}", pairing, level, SEED + k))
    return episodes


def action_id(ep: Episode, index: int) -> str:
    """The id `annotate import` gives an event: episode, then its place in the file."""
    return f"{ep.name}:{index}"


def write(out: Path) -> int:
    episodes = build()
    folder = out / "demo_traces"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "overcooked.jsonl", "w", encoding="utf-8", newline="\n") as fh:
        for ep in episodes:
            for row in ep.rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    rng = random.Random(SEED)
    with open(out / "demo_traces_labels.csv", "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["action_id", "coder", "question", "value"])
        for ep in episodes:
            for index, outcome in ep.intended.items():
                value = outcome if rng.random() < CODER_ACCURACY else CONFUSED[outcome]
                writer.writerow([action_id(ep, index), "ana", "outcome", value])
    return sum(len(ep.rows) for ep in episodes)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args(argv)
    print(f"wrote {write(args.out)} events to {args.out / 'demo_traces'}")


if __name__ == "__main__":
    main()
