"""The multi-agent trace demo end to end (issue 36): the rule reproduces every outcome the
generator wrote into the trace, `report --by meta.pairing` gives FollowRate with n, the
coding screen and the LLM prompt show the same context, and rule, human and LLM coders
compare in `agree` (the real llama.cpp server)."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from annotate.codebook import find_codebook
from annotate.coding.session import CodingSession
from annotate.llm_store import llm_store
from annotate.store import Store
from llm_coder.items import Sessions
from llm_coder.prompt import render_item

DATA = Path(__file__).resolve().parents[1] / "data"
TRACE = DATA / "demo_traces" / "overcooked.jsonl"
MAP = (
    "session=episode,participant=agent,action_type=action.name,content=message.text,"
    "meta.timestep=t,meta.object=action.object,meta.request=message.request,"
    "meta.verifier=verifier.feedback"
)


def generator():
    spec = importlib.util.spec_from_file_location("make_demo_traces", DATA / "make_demo_traces.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_demo_traces"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def audited(cli, db_path) -> Path:
    r = cli("import", str(TRACE), "--map", MAP)
    assert r.exit_code == 0, r.output
    r = cli("audit", "--rules", "tgco")
    assert r.exit_code == 0, r.output
    return db_path


def test_the_rule_gives_every_message_the_outcome_the_generator_wrote(audited) -> None:
    gen = generator()
    intended = {
        gen.action_id(ep, i): outcome for ep in gen.build() for i, outcome in ep.intended.items()
    }
    with Store(audited) as s:
        got = dict(s.db.query("SELECT action_id, value FROM labels WHERE coder = 'rule:tgco'"))
    assert got == intended
    assert set(intended.values()) == set(gen.OUTCOMES)  # every branch is in the demo


def test_report_by_meta_pairing_gives_follow_rate_with_n(cli, audited, tmp_path) -> None:
    out = tmp_path / "report"
    r = cli("report", "--codebook", "tgco", "--by", "meta.pairing,meta.level", "--out", str(out))
    assert r.exit_code == 0, r.output
    table = pd.read_csv(out / "tgco_metrics_by_meta.pairing.csv").set_index("meta.pairing")
    assert list(table.index) == ["claude->gpt-4o", "gpt-4o->gemma", "all"]
    # counted again from the trace itself: the generator's outcomes, per pairing
    gen = generator()
    counts: dict[str, Counter[str]] = {}
    for ep in gen.build():
        counts.setdefault(ep.pairing, Counter()).update(ep.intended.values())
    for pairing, c in counts.items():
        n_req = c["Effective"] + c["Assisted"] + c["Redundant"] + c["Ineffective"]
        row = table.loc[pairing]
        assert row["N_req"] == n_req and row["messages"] == n_req + c["Unstructured"]
        assert row["FollowRate"] == round((c["Effective"] + c["Assisted"]) / n_req, 3)
        assert row["ParseRate"] == round(n_req / (n_req + c["Unstructured"]), 3)
        line = f"{pairing} FollowRate {row['FollowRate']:.3f}".rstrip("0").rstrip(".")
        assert line + f" (n = {n_req})" in r.stdout
    levels = pd.read_csv(out / "tgco_metrics_by_meta.level.csv")
    assert list(levels["meta.level"]) == ["1", "2", "all"]
    assert levels["messages"].iloc[-1] == sum(sum(c.values()) for c in counts.values())
    assert (out / "03_tgco_composition_by_meta.pairing.png").is_file()
    r = cli("report", "--codebook", "tgco", "--by", "meta.", "--out", str(out))
    assert r.exit_code == 1 and "--by: unknown column 'meta.'" in r.stderr


def test_the_screen_and_the_prompt_show_the_same_context(cli, audited) -> None:
    r = cli("sample", "--n", "30", "--seed", "1", "--where", "action_type = 'message'")
    assert r.exit_code == 0, r.output
    loaded = find_codebook("tgco")
    with Store(audited) as store:
        session = CodingSession(store, loaded, "ana", "main", context=2, lookahead=4)
        assert session.show == ["timestep", "request", "verifier", "recipe_relevant"]
        sessions = Sessions(llm_store(store), 2, 4, loaded.codebook.context_fields)
        seen_correction = seen_four_after = False
        for index in range(session.n):
            session.index = index
            rows = [row.text for row in session.context_rows()]
            prompt = render_item(sessions.item(session.item.action_id))
            for text in rows:
                assert text in prompt  # each turn, in the same words and fields
            seen_correction |= any("verifier: " in text for text in rows)
            seen_four_after |= "What followed (the 4 actions after it):" in prompt
        assert seen_correction and seen_four_after
        narrow = CodingSession(store, loaded, "ana", "main", show=["request.target"])
        assert any("[request.target: assistant]" in row.text for row in narrow.context_rows())


@pytest.mark.real_llm
def test_rule_human_and_llm_coders_compare_in_agree(db_path, tmp_path) -> None:
    url = os.environ.get("ANNOTATE_LLM_URL")
    if not url:
        pytest.skip("ANNOTATE_LLM_URL: the real llama.cpp server is not running")
    env = {**os.environ, "ANNOTATE_DB": str(db_path), "OPENAI_API_KEY": "sk-local"}

    def annotate(*args: str) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "annotate", *args],
            capture_output=True, text=True, env=env, timeout=3000, check=False,
        )  # fmt: skip
        assert out.returncode == 0, f"annotate {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
        return out.stdout

    annotate("import", str(TRACE), "--map", MAP)
    annotate("audit", "--rules", "tgco")
    annotate("import-labels", str(DATA / "demo_traces_labels.csv"), "--codebook", "tgco")
    annotate("sample", "--n", "4", "--seed", "3", "--name", "gold",
             "--where", "action_type = 'message'")  # fmt: skip
    annotate("split", "--codebook", "tgco", "--gold", "rule:tgco", "--shots", "2",
             "--seed", "1", "--sample", "gold")  # fmt: skip
    annotate("llm-label", "--codebook", "tgco", "--model", "smollm2", "--base-url", url,
             "--shots", "2", "--context", "1", "--lookahead", "2", "--validate-only",
             "--concurrency", "1", "--timeout", "900")  # fmt: skip
    with sqlite3.connect(db_path) as conn:
        tails = [r[0] for r in conn.execute("SELECT tail FROM llm_requests")]
        llm_labels = conn.execute(
            "SELECT count(*) FROM labels WHERE coder = 'llm:smollm2'"
        ).fetchone()[0]
    assert tails and llm_labels > 0
    # the prompt holds what the screen shows: following turns and the context fields
    # (the shared server answers one request at a time: one at a time, with time to spare)
    assert all("What followed (the " in t and "timestep: " in t for t in tails)
    agree = ["agree", "--codebook", "tgco", "--coders", "rule:tgco,ana,llm:smollm2"]
    report = json.loads(annotate(*agree, "--format", "json"))
    assert report["coders"] == ["rule:tgco", "ana", "llm:smollm2"]
    pairs = report["results"][0]["value"]["pairwise"]
    assert {(p["coder_a"], p["coder_b"]) for p in pairs} == {
        ("rule:tgco", "ana"),
        ("rule:tgco", "llm:smollm2"),
        ("ana", "llm:smollm2"),
    }
    assert all(p["n_items"] > 0 for p in pairs)
