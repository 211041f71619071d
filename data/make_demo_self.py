"""Write the self-annotation demo: one short synthetic session with screenshots and
checkpoint answers (stdlib only, seeded, deterministic; called by make_demo.py).

``demo_self/log/`` holds the session in the platform's JSONL export (one file per participant),
each action naming its screenshot as the platform does (``s3://demo-bucket/annotation/
SESSION/ACTION_screenshot.png``), the screenshots themselves under ``screens/`` (small PNG
maps drawn here: the landmarks and the route drawn so far), the Guide's checkpoint answers
logged as ``checkpoint`` actions, and the Follower's in ``checkpoints.csv``. One screenshot
is left out on purpose, to show "screenshot missing".
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import struct
import uuid
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

SESSION_NAME = "self-demo"
BUCKET = "s3://demo-bucket/annotation/"
START = datetime(2026, 3, 9, 14, 0, 0, tzinfo=UTC)
W, H = 96, 64
LANDMARKS = {  # name: (x, y, colour)
    "mill": (12, 10, (150, 90, 40)),
    "lake": (30, 34, (60, 120, 220)),
    "bridge": (58, 48, (120, 120, 120)),
    "windmill": (84, 14, (200, 60, 60)),
}
STROKES = {  # the Follower's strokes, in order: (from, to)
    1: [(12, 10), (22, 30)],
    2: [(22, 30), (26, 46), (50, 44)],
    4: [(50, 44), (58, 56)],
    5: [(50, 44), (60, 54), (70, 40)],
    6: [(70, 40), (84, 14)],
}
MISSING = "Like this?"  # this action's screenshot is not written

# (seconds, who, kind, content, stroke number or checkpoint answers)
SCRIPT: list[tuple[int, str, str, str, object]] = [
    (0, "Rosa", "message", "Hi Tom, I can see the route. Start at the old mill.", None),
    (12, "Tom", "message", "Hi! I see the mill, top left.", None),
    (30, "Tom", "draw", "", 1),
    (41, "Rosa", "message", "Good. Now go down past the lake, keep it on your right.", None),
    (55, "Tom", "message", "Left or right of the lake?", None),
    (63, "Rosa", "message", "Keep the lake on your right, so pass on its west side.", None),
    (80, "Tom", "draw", "", 2),
    (90, "Rosa", "checkpoint", "25%", {"Q1": "t2", "Q2": "p2", "Q3": "r4", "Q4": "yes"}),
    (104, "Rosa", "message", "Then curve east under the bridge.", None),
    (118, "Tom", "draw", "", 4),
    (126, "Tom", "message", MISSING, None),
    (140, "Rosa", "message", "Almost - a bit lower, below the bridge.", None),
    (150, "Tom", "erase", "", None),
    (162, "Tom", "draw", "", 5),
    (175, "Rosa", "checkpoint", "50%", {"Q1": "t3", "Q2": "p1", "Q3": "r1", "Q4": "yes"}),
    (190, "Rosa", "message", "Perfect. Last stretch: up to the windmill.", None),
    (205, "Tom", "draw", "", 6),
    (220, "Tom", "message", "Done, I am at the windmill.", None),
    (230, "Rosa", "checkpoint", "75%", {"Q1": "t3", "Q2": "p1", "Q3": "r3", "Q4": "yes"}),
    (240, "Rosa", "message", "Great, we are finished!", None),
]
TOM_CHECKPOINTS = [  # label, seconds, answers
    ("25%", 90, "Q1=t4; Q2=p3; Q3=r3; Q4=no+n3"),
    ("50%", 175, "Q1=t2; Q2=p2; Q3=r5; Q4=yes"),
    ("75%", 230, "Q1=t3; Q2=p1; Q3=r1; Q4=yes"),
]
ROLES = {"Rosa": "guide", "Tom": "follower"}


def det_uuid(*parts: str) -> str:
    return str(uuid.UUID(hashlib.sha256("/".join(("self-demo", *parts)).encode()).hexdigest()[:32]))


SESSION_ID = det_uuid("session")
PARTICIPANT_IDS = {name: det_uuid("participant", name) for name in ROLES}


# -- tiny PNG maps ----------------------------------------------------------------------------


def png(pixels: list[list[tuple[int, int, int]]]) -> bytes:
    """An 8-bit RGB PNG of these rows (deterministic bytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + bytes(c for px in row for c in px) for row in pixels)
    header = struct.pack(">IIBBBBB", len(pixels[0]), len(pixels), 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def _line(pixels, a: tuple[int, int], b: tuple[int, int], colour) -> None:  # type: ignore[no-untyped-def]
    (x0, y0), (x1, y1) = a, b
    steps = max(abs(x1 - x0), abs(y1 - y0), 1)
    for i in range(steps + 1):
        x = round(x0 + (x1 - x0) * i / steps)
        y = round(y0 + (y1 - y0) * i / steps)
        for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1)):
            if 0 <= x + dx < W and 0 <= y + dy < H:
                pixels[y + dy][x + dx] = colour


def draw_map(strokes: list[int], *, message: bool) -> bytes:
    """The canvas: landmarks, the strokes still on it, a bar on top when a message was sent."""
    pixels = [[(236, 232, 214)] * W for _ in range(H)]
    for x, y, colour in LANDMARKS.values():
        for yy in range(y - 3, y + 4):
            for xx in range(x - 3, x + 4):
                if 0 <= xx < W and 0 <= yy < H:
                    pixels[yy][xx] = colour
    for n in strokes:
        points = STROKES[n]
        for a, b in itertools.pairwise(points):
            _line(pixels, a, b, (30, 30, 30))
    if message:
        for yy in range(0, 4):
            pixels[yy] = [(80, 140, 90)] * W
    return png(pixels)


# -- the session --------------------------------------------------------------------------


def write(out: Path) -> int:
    """Write ``out/demo_self/``; return the number of actions."""
    folder = out / "demo_self"
    screens = folder / "screens" / SESSION_ID
    screens.mkdir(parents=True, exist_ok=True)
    for old in screens.glob("*.png"):
        old.unlink()
    rows: dict[str, list[dict]] = {name: [] for name in ROLES}
    on_canvas: list[int] = []
    for i, (seconds, who, kind, content, extra) in enumerate(SCRIPT):
        action_id = det_uuid("action", str(i))
        row: dict = {
            "action_id": action_id,
            "timestamp": (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "session_id": SESSION_ID,
            "participant_id": PARTICIPANT_IDS[who],
            "session_name": SESSION_NAME,
            "participant_name": who,
            "is_human": True,
            "role": ROLES[who],
            "condition": "visible",
            "session_elapsed_seconds": seconds,
        }
        if kind == "checkpoint":
            row |= {
                "action_type": "checkpoint",
                "action_content": content,
                "metadata": {"checkpoint": content, "answers": extra},
            }
            rows[who].append(row)
            continue
        if kind == "message":
            row |= {"action_type": "send_message", "action_content": content, "metadata": {}}
        else:
            tool = "eraser" if kind == "erase" else "pen"
            row |= {"action_type": "map_draw_stop", "action_content": "", "metadata": {
                "stroke_tool": tool}}  # fmt: skip
            if kind == "erase":
                on_canvas.pop()
            else:
                on_canvas.append(int(extra))  # type: ignore[call-overload]
        name = f"{action_id}_screenshot.png"
        row["screenshot"] = f"{BUCKET}{SESSION_ID}/{name}"
        row["html_snapshot"] = f"{BUCKET}{SESSION_ID}/{action_id}_html_snapshot.html"
        if content != MISSING:
            (screens / name).write_bytes(draw_map(on_canvas, message=kind == "message"))
        rows[who].append(row)
    for who, lines in rows.items():
        (folder / "log").mkdir(exist_ok=True)
        with (folder / "log" / f"{PARTICIPANT_IDS[who]}.jsonl").open("w", encoding="utf-8") as f:
            for row in lines:
                f.write(json.dumps(row) + "\n")
    with (folder / "checkpoints.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["session", "participant", "time", "label", "answers"])
        for label, seconds, answers in TOM_CHECKPOINTS:
            w.writerow([SESSION_ID, "Tom", seconds, label, answers])
    return sum(len(v) for v in rows.values())


if __name__ == "__main__":
    print(f"wrote {write(Path(__file__).resolve().parent)} actions to data/demo_self/log")
