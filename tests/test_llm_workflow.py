"""The LLM workflow as a library: `llm_coder` steps through validate -> gate -> label over its
own port (the application's adapter on a real project file, a real chat server) and tells a
:class:`~llm_coder.workflow.Reporter` what happens; it prints nothing itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from annotate.codebook import find_codebook
from annotate.llm_store import llm_store
from annotate.store import Store
from llm_coder.client import config_from_env
from llm_coder.job import JobOptions, LabelJob
from llm_coder.phases import PhaseResult
from llm_coder.workflow import GateFailed, label_online
from tests.llm_fixtures import running_chat_server
from tests.test_llm_cli import KEY, MODEL, agreeing, db_rows, maptask_split


@pytest.fixture
def server(monkeypatch):
    with running_chat_server() as s:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", s.base_url)
        yield s


@pytest.fixture
def gold(cli, shared, db_path) -> dict[str, str]:
    return maptask_split(cli, shared, db_path)


class Recorder:
    """A Reporter that keeps what it is told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def note(self, text: str) -> None:
        self.events.append(("note", text))

    def validation(self, report: Any, min_kappa: float) -> None:
        self.events.append(("validation", report.n_items, min_kappa))

    def run_phase(self, job: LabelJob, phase: str, ids: Sequence[str]) -> PhaseResult:
        self.events.append(("run", phase, len(ids)))
        return job.run_phase(phase, ids)

    def started(self, job: LabelJob, run_id: int) -> None:
        self.events.append(("started", run_id))

    def phase_done(self, job: LabelJob, result: PhaseResult) -> None:
        self.events.append(("phase", result.phase, result.valid))

    def summary(self, job: LabelJob, validated: PhaseResult, labelled: PhaseResult) -> None:
        self.events.append(("summary", validated.valid + labelled.valid))


def _label(db_path, recorder: Recorder) -> Recorder:
    """`llm-label --codebook hcrc_moves` as a library call, through the application's port."""
    with Store(db_path) as store:
        job = LabelJob(
            llm_store(store),
            find_codebook("hcrc_moves"),
            JobOptions(model=MODEL, split="hcrc_moves"),
            config_from_env(MODEL, None),
        )
        label_online(job, recorder)
    return recorder


def test_validate_gate_label_in_order_then_the_same_run_again(
    gold, server, db_path, capsys
) -> None:
    server.state.label_for = agreeing(gold, 0.95)
    capsys.readouterr()
    first = _label(db_path, Recorder())
    assert first.events == [
        ("started", 1),
        ("run", "validate", 72),
        ("phase", "validate", 72),
        ("validation", 72, 0.6),
        ("run", "label", 140),
        ("phase", "label", 140),
        ("summary", 212),
    ]
    assert capsys.readouterr() == ("", "")  # the library tells its reporter, never the screen
    assert db_rows(db_path, "SELECT status, gate FROM llm_runs") == [("done", "pass")]

    again = _label(db_path, Recorder())
    assert [e[0] for e in again.events] == ["validation", "note"]
    assert again.events[1][1].startswith("same as run 1 (done, gate pass)")
    assert server.state.requests == 212
    assert db_rows(db_path, "SELECT count(*) FROM llm_runs") == [(1,)]


def test_the_gate_stops_below_min_kappa_and_records_why(gold, server, db_path) -> None:
    server.state.label_for = agreeing(gold, 0.3)
    recorder = Recorder()
    with pytest.raises(GateFailed, match=r"is below --min-kappa 0\.6: the rest is not labelled"):
        _label(db_path, recorder)
    assert [e[0] for e in recorder.events] == ["started", "run", "phase", "validation"]
    assert db_rows(db_path, "SELECT status, gate FROM llm_runs") == [("gate_failed", "fail")]
    assert db_rows(db_path, "SELECT count(*) FROM llm_items WHERE phase = 'label'") == [(0,)]
