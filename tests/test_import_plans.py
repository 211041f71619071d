"""The statements a platform import runs after loading a file (time order, role inference)
find each touched session's actions by session (or one action by id).

Participant names repeat across sessions ("Guide", "Follower"): a plan that looks actions
up by participant reads every session's actions once per session, and the role inference
of a 100k-action import took 22 s that way instead of 0.3 s (benchmarks/README.md, Import).
"""

from __future__ import annotations

import json
from pathlib import Path

from annotate.io.importing import import_files
from annotate.store import Store


def _export(path: Path, sessions: int) -> Path:
    lines = []
    for s in range(sessions):
        for k, (name, kind) in enumerate(
            [("Guide", "send_message"), ("Follower", "map_draw_stop"), ("Guide", "send_message")]
        ):
            lines.append(
                json.dumps(
                    {
                        "action_id": f"s{s}a{k}",
                        "timestamp": f"2026-04-10T10:00:{k:02d}Z",
                        "session_id": f"s{s}",
                        "participant_id": f"{name}{s}",
                        "participant_name": name,
                        "action_type": kind,
                        "action_content": "go left" if kind == "send_message" else "brush",
                    }
                )
            )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_role_inference_and_time_order_search_actions_by_session(tmp_path) -> None:
    with Store(tmp_path / "p.db") as store:
        import_files(store, [_export(tmp_path / "a.jsonl", 30)])
        statements: list[str] = []
        store.db.conn.set_trace_callback(statements.append)
        with store.db.transaction():
            store.actions.resequence_by_time([f"s{s}" for s in range(30)])
            store.actions.infer_roles([f"s{s}" for s in range(30)])
        store.db.conn.set_trace_callback(None)
        updates = [s for s in statements if s.lstrip().startswith(("UPDATE", "WITH"))]
        assert len(updates) == 2
        for sql in updates:
            lines = [r[3] for r in store.db.conn.execute("EXPLAIN QUERY PLAN " + sql)]
            on_actions = [line for line in lines if " actions " in f"{line} "]
            assert on_actions, lines
            # by session, or one action by its id (the renumbering's write-back)
            assert all(
                line.startswith("SEARCH") and ("(session=?)" in line or "(id=?)" in line)
                for line in on_actions
            ), (sql, lines)
        roles = dict(
            store.db.conn.execute("SELECT DISTINCT participant, role FROM actions").fetchall()
        )
    assert roles == {"Guide": "guide", "Follower": "follower"}


def test_the_quick_check_of_a_line_reads_it_as_the_field_by_field_reading_does() -> None:
    from annotate.io.importers.base import ImportOptions
    from annotate.io.importers.platform import _record, _row, _usual_row

    line = {
        "action_id": "a1",
        "timestamp": "2026-04-10T12:00:00.5+02:00",
        "session_id": "s1",
        "participant_id": "p1",
        "participant_name": "",
        "action_type": "map_draw_stop",
        "action_content": "brush_release",
        "metadata": {"stroke_tool": "eraser"},
        "session_elapsed_seconds": 12,
        "role": None,
        "condition": "visible",
    }
    options = ImportOptions()
    assert _usual_row(line, 3, options) == _row(_record(line), 3, options, {})
    assert _usual_row(line, 3, options)[6] == 12.0
    # anything unusual goes the long way, which names the field
    for odd in ({"session_id": 7}, {"session_elapsed_seconds": True}, {"metadata": []}):
        assert _usual_row({**line, **odd}, 3, options) is None
