#!/usr/bin/env python3
"""Generate the demo dataset: six simulated Map Task sessions and three coders' Traum labels.

Writes, under ``--out DIR`` (default: the folder this script is in)::

    DIR/demo/<participant-id>.jsonl   one file per participant, in the collaboration
                                      platform's export format (+ ``role``, ``condition``)
    DIR/demo_labels.csv               Traum grounding-act labels by coders ana, ben, caro
    DIR/demo_self_reports.jsonl       two sessions' per-action self-reports of both partners,
                                      as an agent probed after every action logs them
    DIR/demo_self_report_mapping.yaml how those probes map onto the mental_model codebook

Everything is synthetic and deterministic: the same script always writes the same bytes.
Only the standard library is used, so it runs with any Python >= 3.11::

    python data/make_demo.py            # rewrite data/demo/ and data/demo_labels.csv
    python data/make_demo.py --out /tmp/x
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

SEED = 20260302
CODERS = {"ana": 0.84, "ben": 0.80, "caro": 0.76}  # probability of coding the intended act
QUESTION = "act"
OTHER = "other"


# ---------------------------------------------------------------------------------------------
# Sessions


@dataclass(frozen=True)
class SessionSpec:
    name: str
    condition: str  # "visible": the Guide sees the Follower's canvas; "hidden": they do not
    guide: str
    follower: str
    start: datetime
    route: tuple[str, ...]  # landmarks along the Guide's route, start first, finish last
    missing: str  # a landmark on the Guide's map that the Follower's map lacks
    restart: bool = False  # the Follower resets the canvas mid-task


def _t(day: int, hour: int, minute: int) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


SESSIONS = [
    SessionSpec(
        "demo-v1",
        "visible",
        "Maya",
        "Tom",
        _t(2, 10, 5),
        (
            "ferry landing",
            "fossil bed",
            "buried treasure",
            "swamp",
            "plateau",
            "wind turbine",
            "farmed land",
            "coastal cliffs",
        ),
        "old mill",
    ),
    SessionSpec(
        "demo-h1",
        "hidden",
        "Leo",
        "Priya",
        _t(2, 11, 20),
        (
            "caravan park",
            "stone bridge",
            "pine forest",
            "lake",
            "sheep field",
            "fenced meadow",
            "abandoned farm",
            "lighthouse",
        ),
        "rope bridge",
    ),
    SessionSpec(
        "demo-v2",
        "visible",
        "Sara",
        "Jonas",
        _t(3, 9, 40),
        (
            "picnic site",
            "waterfall",
            "carved stones",
            "rock fall",
            "highest viewpoint",
            "gold mine",
            "field station",
            "saloon",
        ),
        "trig point",
        restart=True,
    ),
    SessionSpec(
        "demo-h2",
        "hidden",
        "Ivan",
        "Mei",
        _t(3, 14, 10),
        (
            "windmill",
            "burnt forest",
            "diamond mine",
            "white mountain",
            "pyramid",
            "slate mountain",
            "east lake",
            "old fort",
        ),
        "parked van",
        restart=True,
    ),
    SessionSpec(
        "demo-v3",
        "visible",
        "Nora",
        "Daniel",
        _t(4, 13, 0),
        (
            "outlaws' hideout",
            "cattle stockade",
            "bandit territory",
            "cactus",
            "abandoned cottage",
            "lost steps",
            "mine",
            "fort",
        ),
        "iron bridge",
    ),
    SessionSpec(
        "demo-h3",
        "hidden",
        "Omar",
        "Lucy",
        _t(5, 16, 30),
        (
            "crossroads",
            "green bay",
            "sandy shore",
            "monument",
            "pelicans",
            "yacht club",
            "crane bay",
            "harbour",
        ),
        "dead tree",
    ),
]


# ---------------------------------------------------------------------------------------------
# Events: one planned action with the grounding act it was written to perform


@dataclass
class Event:
    role: str  # "guide" | "follower"
    kind: str  # "msg" | "draw" | "erase" | "undo" | "reset"
    content: str  # message text ("" for drawing and tool actions)
    act: str  # intended Traum act code, or "other"
    note: str = ""  # for act == "other": what it is (greeting, set-up, hidden drawing...)


DIRS = [
    "down",
    "straight down",
    "left",
    "right",
    "up",
    "down and to the right",
    "up and to the left",
    "diagonally down to the left",
    "up and to the right",
    "straight across to the right",
]
OPPOSITE = {"left": "right", "right": "left", "up": "down", "down": "up"}
WHERE = {"left": "to the left of", "right": "to the right of", "up": "above", "down": "below"}
RELS = ["above", "below", "just left of", "just right of"]
SIDES = ["bottom", "top", "left side", "right side"]


def a(noun: str) -> str:
    return ("an " if noun[0] in "aeiou" else "a ") + noun


class Writer:
    """Builds one session's events from phrase templates, with a seeded RNG."""

    def __init__(self, spec: SessionSpec, rng: random.Random):
        self.spec = spec
        self.rng = rng
        self.hidden = spec.condition == "hidden"
        self.events: list[Event] = []

    # -- helpers ---------------------------------------------------------------------------
    def pick(self, options: list[str]) -> str:
        return self.rng.choice(options)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def say(self, role: str, text: str, act: str, note: str = "") -> None:
        self.events.append(Event(role, "msg", text, act, note))

    def canvas(self, kind: str, *, act: str | None = None) -> None:
        """A Follower canvas action: grounding only if the Guide can see the canvas."""
        if self.hidden:
            self.events.append(Event("follower", kind, "", OTHER, "hidden_drawing"))
        else:
            self.events.append(Event("follower", kind, "", act or "Acknowledge"))

    def stroke(self, n: int = 1) -> None:
        for _ in range(n):
            self.canvas("draw")

    # -- phrase templates --------------------------------------------------------------------
    def instruction(self, here: str, there: str) -> str:
        d, r, s = self.pick(DIRS), self.pick(RELS), self.pick(SIDES)
        return self.pick(
            [
                f"ok, from the {here} go {d} to the {there}",
                f"now the route goes {d}, and stops {r} the {there}",
                f"next, draw a line {d} until you're {r} the {there}",
                f"then curve round the {s} of the {here} and head for the {there}",
                f"from there head {d} towards the {there}, keeping {r} it",
                f"go {d} past the {here}, all the way to the {there}",
            ]
        )

    def continuation(self, there: str) -> str:
        return self.pick(
            [
                f"and stop {self.pick(RELS)} the {there}",
                "keep it close to the edge, it's a tight curve",
                f"then bend {self.pick(DIRS)} around it",
                "about two inches, not more",
                f"so you end up on the {self.pick(SIDES)} of the {there}",
                "it's a fairly straight line",
            ]
        )

    def backchannel(self) -> str:
        return self.pick(["ok", "mhm", "got it", "okay", "ok going", "right", "yep"])

    def done(self) -> str:
        return self.pick(["done", "done.", "ok done", "drawn it", "ok I'm there", "done, next?"])

    def guide_approval(self) -> str:
        return self.pick(["yes that's right", "perfect", "great, that's it", "yep looks good"])

    # -- leg patterns: one route step each ------------------------------------------------
    def leg_simple(self, here: str, there: str) -> None:
        self.say("guide", self.instruction(here, there), "Initiate")
        if self.chance(0.5):
            self.say("follower", self.backchannel(), "Acknowledge")
            self.say("guide", self.continuation(there), "Continue")
        elif self.chance(0.4):
            self.say("guide", self.continuation(there), "Continue")
        self.stroke(self.rng.choice([1, 1, 2]))
        self.say("follower", self.done(), "Acknowledge")
        if not self.hidden and self.chance(0.6):
            self.say("guide", self.guide_approval(), "Acknowledge")

    def leg_clarify(self, here: str, there: str) -> None:
        self.say("guide", self.instruction(here, there), "Initiate")
        if self.chance(0.3):
            self.say("guide", self.continuation(there), "Continue")
        r, s = self.pick(RELS), self.pick(SIDES)
        question, answer = self.rng.choice(
            [
                (f"above or below the {there}?", f"{r} it, sorry"),
                (f"which side of the {here}?", f"the {s}, not through it"),
                ("sorry, how far?", f"until you're level with the {there}"),
                (f"do I go through the {here} or around it?", f"around the {s} of it"),
                (f"wait, where is the {there}?", f"it's {r} the {here}, quite close to it"),
            ]
        )
        self.say("follower", question, "ReqRepair")
        self.say("guide", answer, "Repair")
        self.say("follower", self.pick(["ok", "ah ok", "got it", "oh I see"]), "Acknowledge")
        self.stroke()
        if self.hidden or self.chance(0.5):
            self.say("follower", self.done(), "Acknowledge")

    def leg_follower_check(self, here: str, there: str) -> None:
        self.say("guide", self.instruction(here, there), "Initiate")
        self.stroke()
        check = self.pick(
            [
                f"so I go round the {self.pick(SIDES)} of the {there}?",
                f"{self.pick(RELS)} the {there}, right?",
                f"I stop at the {there}, yes?",
            ]
            + ([] if self.hidden else ["like this?", "is this where you mean?"])
        )
        self.say("follower", check, "ReqAck")
        self.say("guide", self.pick(["yes", "yes exactly", "yep", "that's right"]), "Acknowledge")

    def leg_guide_reqack(self, here: str, there: str) -> None:
        self.say("guide", self.instruction(here, there), "Initiate")
        if self.chance(0.4):
            self.say("guide", self.continuation(there), "Continue")
        self.say("guide", self.pick(["got it?", "ok?", "does that make sense?"]), "ReqAck")
        self.say("follower", self.pick(["yes got it", "yep", "yes"]), "Acknowledge")
        self.stroke()
        if self.hidden:
            self.say("follower", self.done(), "Acknowledge")
            self.say(
                "guide",
                self.pick(["where are you now?", "where did your line end up?"]),
                "ReqAck",
            )
            self.say(
                "follower",
                f"{self.pick(RELS)} the {there}",
                "Acknowledge",
            )
            self.say("guide", self.pick(["great", "ok good", "perfect"]), "Acknowledge")

    def leg_correction(self, here: str, there: str) -> None:
        self.say("guide", self.instruction(here, there), "Initiate")
        self.stroke()
        if self.hidden:
            self.say("follower", self.done(), "Acknowledge")
            r = self.pick(RELS)
            ask, answer, fix = self.rng.choice(
                [
                    (
                        f"can you tell me where you are? near the {there}?",
                        f"I'm right on top of the {there}",
                        f"ah, no - the line has to stay {r} the {there}, not over it",
                    ),
                    (
                        "where exactly did you stop?",
                        f"a bit past the {there}, I think",
                        f"hmm, too far - come back so you end {r} the {there}",
                    ),
                    (
                        f"is your line touching the {there}?",
                        f"yes, it goes straight through the {there}",
                        f"no, you need to go round it, {r} it",
                    ),
                ]
            )
            self.say("guide", ask, "ReqAck")
            self.say("follower", answer, "Acknowledge")
            self.say("guide", fix, "Repair")
            self.say("follower", self.pick(["oh ok, fixing it", "ah sorry, ok"]), "Acknowledge")
        else:
            self.say(
                "guide",
                self.pick(
                    [
                        f"no, that's too far {self.pick(['left', 'right', 'down'])}",
                        f"hmm not quite, it should go round the {self.pick(SIDES)} of the {there}",
                        f"oops, you went over the {there} - it goes around it",
                    ]
                ),
                "Repair",
            )
        # taking the stroke back because the partner corrected it shows uptake: Acknowledge
        self.canvas(self.pick(["erase", "undo"]))
        self.stroke()
        if self.hidden:
            self.say("follower", self.pick(["fixed it", "ok redrawn", "done now"]), "Acknowledge")
            self.say("guide", self.pick(["good", "great, thanks"]), "Acknowledge")
        else:
            self.say("guide", self.guide_approval(), "Acknowledge")

    def leg_self_repair(self, here: str, there: str) -> None:
        self.say("guide", self.instruction(here, there), "Initiate")
        self.say("follower", self.backchannel(), "Acknowledge")
        self.stroke()
        # taking back one's own visible stroke unprompted corrects it: Repair
        self.canvas(self.pick(["erase", "undo"]), act="Repair")
        self.stroke()
        self.say("follower", self.done(), "Acknowledge")

    def leg_missing_landmark(self, here: str, there: str) -> None:
        missing = self.spec.missing
        self.say("guide", f"now go {self.pick(DIRS)} to the {missing}", "Initiate")
        self.say(
            "follower",
            self.pick([f"I don't have {a(missing)} on my map", f"what {missing}? I can't see one"]),
            "ReqRepair",
        )
        self.say("guide", "oh, our maps must be different", "Acknowledge")
        self.say(
            "guide",
            f"ok then: the {missing} is halfway between the {here} and the {there}, "
            f"go {self.pick(DIRS)} to that point",
            "Repair",
        )
        self.say("follower", self.backchannel(), "Acknowledge")
        self.stroke()
        if self.hidden:
            self.say("follower", self.done(), "Acknowledge")
            self.say("guide", "did that work?", "ReqAck")
            self.say("follower", "I think so", "Acknowledge")

    def leg_follower_repair(self, here: str, there: str) -> None:
        d = self.pick(list(OPPOSITE))
        self.say("guide", f"now go {d} from the {here} to the {there}", "Initiate")
        self.say(
            "follower",
            f"wait, on my map the {there} is {WHERE[OPPOSITE[d]]} the {here}, not {WHERE[d]} it",
            "Repair",
        )
        self.say("guide", self.pick(["ohh", "oh really", "hmm ok"]), "Acknowledge")
        self.say(
            "guide",
            f"then go {OPPOSITE[d]} to it and along its {self.pick(SIDES)}",
            "Initiate",
        )
        self.stroke()
        self.say("follower", self.done(), "Acknowledge")

    def leg_cancel(self, here: str, there: str) -> None:
        self.say("guide", f"now go {self.pick(DIRS)} to the big river", "Initiate")
        self.say(
            "guide",
            self.pick(
                [
                    "wait no, ignore that, I was looking at the wrong bit",
                    "scrap that, sorry, that's a different part of the map",
                ]
            ),
            "Cancel",
        )
        self.leg_simple(here, there)

    def leg_restart(self, here: str, there: str) -> None:
        self.say(
            "follower",
            self.pick(
                [
                    "ugh this is a mess, I'm clearing it and starting over",
                    "my lines are all wrong, I'm going to reset",
                ]
            ),
            "Cancel",
        )
        if self.hidden:
            self.events.append(Event("follower", "reset", "", OTHER, "hidden_drawing"))
        else:
            self.events.append(Event("follower", "reset", "", "Cancel"))
        self.say("guide", "no problem", "Acknowledge")
        self.say(
            "guide",
            f"start again at the {self.spec.route[0]} and go all the way to the {here} "
            "the way we did before",
            "Initiate",
        )
        self.stroke(2)
        self.say("follower", "ok, back where we were", "Acknowledge")
        self.leg_simple(here, there)

    # -- a whole session -------------------------------------------------------------------
    def session(self) -> list[Event]:
        route = self.spec.route
        self.events.append(Event("guide", "reset", "", OTHER, "setup"))
        self.events.append(Event("follower", "reset", "", OTHER, "setup"))
        hello = self.pick(["hi!", "hello, ready when you are", "hi there"])
        self.say("follower", hello, OTHER, "greeting")
        self.say(
            "guide",
            self.pick(
                [
                    f"hi! can you see the {route[0]}? that's where we start",
                    f"hi, the route starts at the {route[0]}. do you have it?",
                ]
            ),
            "Initiate",
        )
        self.say(
            "follower",
            f"yes, it's near the {self.pick(['top left', 'bottom left', 'left edge'])}",
            "Acknowledge",
        )

        if self.hidden:
            weights = {
                "simple": 2,
                "clarify": 4,
                "follower_check": 2,
                "guide_reqack": 3,
                "correction": 2,
                "self_repair": 2,
                "follower_repair": 1,
            }
        else:
            weights = {
                "simple": 3,
                "clarify": 2,
                "follower_check": 2,
                "guide_reqack": 1,
                "correction": 3,
                "self_repair": 3,
                "follower_repair": 1,
            }
        legs = list(itertools.pairwise(route))
        specials = ["missing_landmark", "cancel", "self_repair"] + (
            ["restart"] if self.spec.restart else []
        )
        slots = self.rng.sample(range(2, len(legs)), len(specials))
        plan = dict(zip(slots, specials, strict=True))
        names = list(weights)
        for i, (here, there) in enumerate(legs):
            kind = plan.get(i) or self.rng.choices(names, [weights[n] for n in names])[0]
            getattr(self, "leg_" + kind)(here, there)

        finish = route[-1]
        self.say("guide", f"and the {finish} is the finish, so that's the whole route", "Initiate")
        if self.hidden:
            self.say("guide", "did you end up right next to it?", "ReqAck")
            self.say("follower", "yes, right next to it", "Acknowledge")
        else:
            self.say("follower", "oh nice, finished!", "Acknowledge")
        self.say("guide", self.pick(["thanks!", "thank you, that was fun"]), OTHER, "closing")
        self.say("follower", self.pick(["thanks, bye!", "great, thanks"]), OTHER, "closing")
        return self.events


# ---------------------------------------------------------------------------------------------
# Export rows


def det_uuid(*parts: str) -> str:
    digest = hashlib.sha256(":".join(("annotate-demo", *parts)).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def iso(ts: datetime, *, millis: bool) -> str:
    if millis:  # canvas events carry millisecond precision in the real export
        ts = ts.replace(microsecond=ts.microsecond // 1000 * 1000)
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def gap_seconds(rng: random.Random, ev: Event, prev: Event | None) -> float:
    if ev.kind == "msg":
        typing = len(ev.content) / rng.uniform(3.0, 5.0)
        thinking = rng.uniform(4.0, 14.0) if ev.act == "Initiate" else rng.uniform(1.0, 5.0)
        return 1.0 + typing + thinking
    if ev.kind == "draw":
        return rng.uniform(3.0, 10.0)
    if prev is not None and prev.kind == "msg":
        return rng.uniform(2.0, 6.0)
    return rng.uniform(1.0, 3.5)


def session_rows(spec: SessionSpec, events: list[Event], rng: random.Random) -> list[dict]:
    session_id = det_uuid("session", spec.name)
    pid = {
        "guide": det_uuid("participant", spec.name, "guide"),
        "follower": det_uuid("participant", spec.name, "follower"),
    }
    name = {"guide": spec.guide, "follower": spec.follower}
    partner = {"guide": "follower", "follower": "guide"}
    rows = []
    # canvas set-up happens before the session clock starts (no session_elapsed_seconds)
    now = spec.start - timedelta(seconds=rng.uniform(40.0, 90.0))
    prev: Event | None = None
    for i, ev in enumerate(events):
        if i == 2:
            now = spec.start + timedelta(seconds=rng.uniform(8.0, 20.0))
        elif i > 0:
            now += timedelta(seconds=gap_seconds(rng, ev, prev))
        now = now.replace(microsecond=rng.randrange(1_000_000))
        action_id = det_uuid("action", spec.name, str(i))
        row: dict = {
            "action_id": action_id,
            "timestamp": iso(now, millis=ev.kind != "msg"),
            "session_id": session_id,
            "participant_id": pid[ev.role],
            "session_name": spec.name,
            "participant_name": name[ev.role],
            "is_human": True,
        }
        if ev.kind == "msg":
            row |= {
                "action_type": "send_message",
                "action_content": ev.content,
                "result": "success",
                "metadata": {
                    "message_id": det_uuid("message", spec.name, str(i)),
                    "receiver": pid[partner[ev.role]],
                    "message_type": "text",
                },
                "page": "social_panel",
            }
        elif ev.kind in ("draw", "erase"):
            tool = "brush" if ev.kind == "draw" else "eraser"
            row |= {
                "action_type": "map_draw_stop",
                "action_content": f"{tool}_release",
                "result": "success",
                "metadata": {"stroke_tool": tool},
                "page": "map_task",
            }
        else:
            row |= {
                "action_type": "map_tool_click",
                "action_content": ev.kind,
                "result": "success",
                "metadata": {},
                "page": "map_task",
            }
        row["experiment_type"] = "maptask"
        if now >= spec.start:
            row["session_elapsed_seconds"] = int((now - spec.start).total_seconds())
        row["role"] = ev.role
        row["condition"] = spec.condition
        rows.append(row)
        prev = ev
    return rows


# ---------------------------------------------------------------------------------------------
# Simulated coders

OTHER_TEXT = {
    "greeting": ["greeting", "greeting, no task content", "just saying hi"],
    "closing": ["closing / thanks", "thanks and goodbye", "social closing"],
    "setup": ["canvas set-up before the task", "reset before starting", "set-up click"],
    "hidden_drawing": [
        "drawing the guide cannot see",
        "stroke not visible to guide (hidden)",
        "guide can't see canvas",
    ],
    "filler": ["filler, nothing grounded", "not sure it grounds anything"],
}


def confusions(ev: Event) -> list[str]:
    """Plausible wrong codes for an action, most likely first."""
    if ev.act == OTHER:
        if ev.note == "hidden_drawing":
            return ["Acknowledge", "Acknowledge", "Repair"]
        if ev.note == "setup":
            return ["Cancel", "Initiate"]
        return ["Acknowledge", "Initiate"]
    if ev.kind != "msg":  # visible canvas actions
        return {
            "Acknowledge": [OTHER, "Continue", "Repair"],
            "Repair": ["Acknowledge", "Cancel"],
            "Cancel": ["Repair", OTHER],
        }[ev.act]
    return {
        "Initiate": ["Continue", "Continue", "Repair"],
        "Continue": ["Initiate", "Initiate", "Acknowledge"],
        "Acknowledge": ["Continue", "Initiate", OTHER],
        "Repair": ["Initiate", "Continue", "Acknowledge"],
        "ReqRepair": ["ReqAck", "ReqAck", "Initiate"],
        "ReqAck": ["ReqRepair", "ReqRepair", "Initiate"],
        "Cancel": ["Repair", "Repair", "Initiate"],
    }[ev.act]


def code_action(rng: random.Random, accuracy: float, ev: Event) -> tuple[str, str]:
    value = ev.act if rng.random() < accuracy else rng.choice(confusions(ev))
    if value != OTHER:
        return value, ""
    if ev.act == OTHER:
        return value, rng.choice(OTHER_TEXT[ev.note])
    note = "hidden_drawing" if ev.kind != "msg" else "filler"
    text = "drawing, no clear grounding function" if note == "hidden_drawing" else None
    return value, text or rng.choice(OTHER_TEXT[note])


# ---------------------------------------------------------------------------------------------
# Self-reports: both partners probed after every action (task state, partner intent, own
# plan, same page), in the probe log's own words; the mapping YAML turns them into the
# mental_model codebook's Q1-Q4 codes.

SELF_REPORT_SESSIONS = ("demo-v1", "demo-h1")
SELF_REPORT_MAPPING = """\
# How the probe log's answers map onto the mental_model codebook (annotate import-labels
# data/demo_self_reports.jsonl --codebook mental_model --mapping THIS_FILE).
codebook: mental_model
questions:
  task_state:              # "At this moment, my partner and I were:"
    to: Q1
    answers: {exploring: t1, converging: t2, executing: t3, troubleshooting: t4}
  partner_intent:          # "At this moment, I thought my partner:"
    to: Q2
    answers:
      understands: p1
      probably_understands: p2
      waiting: p3
      misunderstands: p4
      unclear: p5
  own_plan:                # "At this moment, my action was driven by:"
    to: Q3
    answers: {follow_plan: r1, explore: r2, confirm: r3, share_info: r4, fix: r5, wait: r6}
  same_page:               # "At this moment, my partner and I were on the same page:"
    to: Q4
    answers: {yes: "yes", no: "no"}
    reasons: {goal: n1, state: n2, missing_info: n3, ambiguous: n4, interface: n5}
"""
STATES = ("exploring", "converging", "executing", "troubleshooting")
INTENT = {
    "exploring": "unclear",
    "converging": "probably_understands",
    "executing": "understands",
    "troubleshooting": "waiting",
}
PLAN = {
    "Initiate": "follow_plan",
    "Continue": "follow_plan",
    "Acknowledge": "share_info",
    "ReqAck": "confirm",
    "ReqRepair": "share_info",
    "Repair": "fix",
    "Cancel": "fix",
}
RATIONALE = {
    "follow_plan": "giving the next bit of the route",
    "share_info": "telling my partner where I am",
    "confirm": "checking we mean the same place",
    "fix": "correcting the line",
    "wait": "waiting for my partner",
    "explore": "getting set up",
}


def _situation(ev: Event, i: int) -> str:
    if i < 3 or ev.note in ("greeting", "setup"):
        return "exploring"
    if ev.act in ("ReqRepair", "Repair", "Cancel"):
        return "troubleshooting"
    return "converging" if ev.act == "ReqAck" else "executing"


def self_reports(
    spec: SessionSpec, rows: list[dict], events: list[Event], rng: random.Random
) -> list[dict]:
    """Each partner's probe replies after each action: the situation as it was, read
    right with a chance that grows over the session (less in the hidden condition)."""
    out = []
    names = {"guide": spec.guide, "follower": spec.follower}
    for i, (row, ev) in enumerate(zip(rows, events, strict=True)):
        state = _situation(ev, i)
        p_right = (0.78 if spec.condition == "visible" else 0.62) + 0.18 * i / len(events)
        for role in ("guide", "follower"):
            seen = state if rng.random() < p_right else rng.choice(STATES)
            plan = PLAN.get(ev.act, "explore") if ev.role == role else "wait"
            if ev.role != role and seen == "executing" and rng.random() < 0.6:
                plan = "follow_plan"  # the partner's turn, but both carry out the plan
            intent = INTENT[seen] if rng.random() < p_right else rng.choice(list(INTENT.values()))
            same = seen in ("converging", "executing")
            replies = [
                {"question": "task_state", "answer": seen},
                {"question": "partner_intent", "answer": intent},
                {"question": "own_plan", "answer": plan},
                {"question": "same_page", "answer": "yes" if same else "no"},
            ]
            if not same:
                reason = {"exploring": "goal", "troubleshooting": "state"}.get(seen, "ambiguous")
                replies[3]["reasons"] = [reason] + (["missing_info"] if rng.random() < 0.3 else [])
            if ev.note == "greeting" and ev.role == role:
                replies[2] = {"question": "own_plan", "answer": "other", "text": "saying hello"}
            elif rng.random() < 0.1:
                replies[2]["text"] = RATIONALE[plan]
            for reply in replies:
                out.append({"action_id": row["action_id"], "participant": names[role], **reply})
    return out


# ---------------------------------------------------------------------------------------------


def build() -> tuple[list[list[dict]], list[list[Event]]]:
    sessions, plans = [], []
    for k, spec in enumerate(SESSIONS):
        rng = random.Random(SEED * 100 + k)
        events = Writer(spec, rng).session()
        assert 40 <= len(events) <= 70, (spec.name, len(events))
        sessions.append(session_rows(spec, events, rng))
        plans.append(events)
    return sessions, plans


def write(out: Path) -> dict:
    sessions, plans = build()
    demo = out / "demo"
    demo.mkdir(parents=True, exist_ok=True)
    for old in demo.glob("*.jsonl"):
        old.unlink()
    by_participant: dict[str, list[dict]] = {}
    for rows in sessions:
        for row in rows:
            by_participant.setdefault(row["participant_id"], []).append(row)
    for participant, rows in by_participant.items():
        rows.sort(key=lambda r: r["timestamp"])
        with open(demo / f"{participant}.jsonl", "w", encoding="utf-8", newline="\n") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    coder_rngs = {c: random.Random(SEED + 7 * (i + 1)) for i, c in enumerate(CODERS)}
    with open(out / "demo_labels.csv", "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["action_id", "coder", "question", "value", "other_text"])
        for rows, events in zip(sessions, plans, strict=True):
            for row, ev in zip(rows, events, strict=True):
                for coder, accuracy in CODERS.items():
                    value, text = code_action(coder_rngs[coder], accuracy, ev)
                    writer.writerow([row["action_id"], coder, QUESTION, value, text])

    with open(out / "demo_self_reports.jsonl", "w", encoding="utf-8", newline="\n") as fh:
        for k, (spec, rows, events) in enumerate(zip(SESSIONS, sessions, plans, strict=True)):
            if spec.name in SELF_REPORT_SESSIONS:
                for report in self_reports(spec, rows, events, random.Random(SEED + 1000 + k)):
                    fh.write(json.dumps(report, ensure_ascii=False) + "\n")
    (out / "demo_self_report_mapping.yaml").write_text(SELF_REPORT_MAPPING, encoding="utf-8")
    return {spec.name: len(rows) for spec, rows in zip(SESSIONS, sessions, strict=True)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent,
        help="folder to write demo/ and demo_labels.csv into (default: this script's folder)",
    )
    args = parser.parse_args(argv)
    counts = write(args.out)
    total = sum(counts.values())
    print(f"wrote {total} actions in {len(counts)} sessions to {args.out / 'demo'}")
    for name, n in counts.items():
        print(f"  {name}: {n} actions")
    from make_demo_self import write as write_self  # the self-annotation demo, beside it

    print(f"wrote {write_self(args.out)} actions to {args.out / 'demo_self'} (self-annotation)")
    from make_demo_traces import write as write_traces  # the multi-agent trace demo

    print(f"wrote {write_traces(args.out)} events to {args.out / 'demo_traces'} (agent traces)")


if __name__ == "__main__":
    main()
