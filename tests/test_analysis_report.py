"""`annotate report`: the HTML page, its charts and tables, the numbers behind them."""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from matplotlib import image as mpimg

import agreement
from annotate.analysis.figure4 import DECILES, progress_label
from annotate.store import Store
from tests.test_analysis_support import DEMO_LABELS, demo_with_gold, import_demo

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# the shape `annotate agree` stores its results in (annotate/reliability/agreement_run.py)
AGREE_RESULTS = {
    "codebook": "traum",
    "results": [
        {
            "question": "act",
            "kind": "single",
            "value": {
                "fleiss": {"kappa": 0.58, "per_category": [{"category": "Initiate", "kappa": 0.7}]},
                "alpha": {"alpha": 0.581},
                "ac1": {"ac1": 0.629},
                "pairwise": [{"kappa": 0.5}],
            },
        }
    ],
}
GROUNDED_Q = ("Q1", "Q2", "Q3", "Q4")
IMG = re.compile(r'<img alt="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">')


@pytest.fixture
def gold_db(cli, db_path, tmp_path):
    return demo_with_gold(cli, db_path, tmp_path)


def _png(data: bytes):
    assert data.startswith(PNG_SIGNATURE)
    pixels = mpimg.imread(io.BytesIO(data), format="png")
    assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 600
    return pixels


def test_html_report_embeds_the_charts_and_tables(cli, gold_db, tmp_path) -> None:
    out = tmp_path / "report"
    r = cli("report", "--codebook", "traum", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert f"wrote {out / 'report.html'} (9 charts, 9 tables" in r.stdout
    assert "traum: labels by gold (228 actions), then llm:fake (115 actions)" in r.stdout
    assert "mental_model: labels by gold (343 actions)" in r.stdout
    html = (out / "report.html").read_text(encoding="utf-8")
    # self-contained: every image is a data URI, nothing is fetched
    assert "<script" not in html and 'src="http' not in html and "<link" not in html
    images = IMG.findall(html)
    assert [alt for alt, _ in images] == [
        "Traum grounding acts (act) by condition",
        "Traum grounding acts (act) by role",
        "Perceived alignment (Q4 = yes) by traum act and condition",
        "Grounded team goal, partner intent and self-reasoning over task progress",
        "Q2 answers within each traum code",
        *(f"mental_model {q}: share per session, mean and SD by group" for q in GROUNDED_Q),
    ]
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) == 9
    for (_, data), path in zip(images, pngs, strict=True):
        decoded = base64.b64decode(data)
        _png(decoded)
        assert decoded == path.read_bytes()
    for title in [
        "Sessions and actions per session",
        "traum act: share of each code by condition",
        "traum act: share of each code by role",
        "Figure 4, left: perceived alignment (Q4 = yes) within each traum act code, by condition",
        "Figure 4, right: grounded answers over task progress (Q1 = t3, Q2 = p1, Q3 = r1), "
        "by condition",
        "Within each traum act code: Q2 answers",
        "Table 8: mental_model label shares per session, mean and SD, by split and condition",
        "Inter-coder agreement",
    ]:
        assert f">{title}</h3>" in html
    assert html.count("<table") == 9  # and llm:fake's validation (it passed its gate)
    assert ">LLM validation</h3>" in html
    assert "<td>Acknowledge</td>" in html and "<td>hidden</td>" in html


def test_report_numbers(cli, gold_db, tmp_path) -> None:
    out = tmp_path / "r"
    assert cli("report", "--codebook", "traum", "--out", str(out)).exit_code == 0
    labels = pd.read_csv(DEMO_LABELS)
    ana = labels[labels["coder"] == "ana"].reset_index(drop=True)
    gold = ana[ana.index % 3 != 0].set_index("action_id")["value"]
    llm = labels[labels["coder"] == "ben"].set_index("action_id")["value"]
    counted = gold.reindex(llm.index).fillna(llm)  # gold where present, else llm:fake
    with Store(gold_db) as s:
        conditions = {
            r["id"]: r["condition"] for r in s.db.query("SELECT id, condition FROM actions")
        }
    frame = pd.DataFrame({"act": counted, "condition": counted.index.map(conditions)})
    expected = pd.crosstab(frame["act"], frame["condition"], normalize="columns")
    table = pd.read_csv(out / "traum_act_by_condition.csv").set_index("code")
    for act in expected.index:
        for condition in ("hidden", "visible"):
            got = float(table.loc[act, condition])
            assert got == pytest.approx(expected.loc[act, condition])
    assert int(table.loc["n", "hidden"]) == 184 and int(table.loc["n", "visible"]) == 159
    # agreement: the agreement package on ana, ben and caro
    rows = pd.read_csv(out / "agreement.csv")
    traum = rows[rows["codebook"] == "traum"].iloc[0]
    humans = labels.rename(columns={"action_id": "item"})[["item", "coder", "value"]]
    assert traum["fleiss kappa"] == pytest.approx(agreement.fleiss_kappa(humans).kappa, abs=1e-3)
    assert traum["coders"] == "ana, ben, caro" and traum["kappa items"] == 343
    assert traum["alpha items"] == 343 and traum["sample"] == "every labelled item"
    assert traum["categories"] == 8  # 7 acts and the declared Other
    mm = rows[rows["codebook"] == "mental_model"].iloc[0]
    assert "agreement needs at least 2 coders; got 0" in mm["note"]
    # grounded answers over progress, recomputed from the stored mental-model answers
    with Store(gold_db) as s:
        pos = pd.DataFrame(s.analysis.action_positions()).set_index("action_id")
        mm_labels = pd.DataFrame(s.labels.label_rows("mental_model", coders=["gold"]))
    wide = mm_labels.pivot(index="action_id", columns="question", values="value").join(pos)
    wide["bin"] = wide["position"] * DECILES // wide["session_length"]
    progress = pd.read_csv(out / "figure4_right.csv").set_index(
        ["question", "condition", "progress"]
    )
    for question, code in (("Q1", "t3"), ("Q2", "p1"), ("Q3", "r1")):
        expected = (wide[question] == code).groupby([wide["condition"], wide["bin"]]).mean()
        for (condition, i), share in expected.items():
            got = progress.loc[(question, condition, progress_label(i, DECILES)), "share"]
            assert got == pytest.approx(share)
    assert progress.xs("hidden", level="condition")["n"].sum() == 3 * 184


def test_report_includes_a_stored_llm_validation(cli, gold_db, tmp_path) -> None:
    with Store(gold_db) as s:
        run = s.llm.start_llm_run(
            coder="llm:fake", model="fake-model", endpoint_host="127.0.0.1", codebook="traum",
            codebook_hash="h", split="main", prompt_hash="p", shot_ids=[], temperature=0.0,
            votes=1, context=8, validate_only=1,
        )  # fmt: skip
        s.llm.update_llm_run(run, status="done", gate="passed", kappa=0.71, finished_at="now")
    out = tmp_path / "r"
    assert cli("report", "--codebook", "traum", "--out", str(out)).exit_code == 0
    html = (out / "report.html").read_text()
    assert "no LLM validation stored" not in html
    assert ">LLM validation</h3>" in html and "<td>passed</td>" in html
    assert '<td class="num">0.710</td>' in html
    assert pd.read_csv(out / "llm_validation.csv").iloc[0]["kappa"] == 0.71


def test_report_needs_gold_or_llm_or_coders(cli, tmp_path) -> None:
    import_demo(cli)
    r = cli("report", "--codebook", "traum", "--out", str(tmp_path / "r"))
    assert r.exit_code == 1
    assert (
        "error: codebook 'traum' has no gold, corpus, validated LLM or rule labels "
        "(coders: ana, ben, caro)" in r.stderr
    )
    assert "hint: pass --coders ana" in r.stderr
    assert not (tmp_path / "r").exists()
    r = cli("report", "--codebook", "traum", "--coders", "ana,ben", "--by", "action_type",
            "--out", str(tmp_path / "r"))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "traum: labels by ana (343 actions), then ben (0 actions) [--coders]" in r.stdout
    table = pd.read_csv(tmp_path / "r" / "traum_act_by_action_type.csv")
    assert {"message", "draw", "reset"} <= set(table.columns)
    assert "Mental model" not in (tmp_path / "r" / "report.html").read_text()
    r = cli("report", "--codebook", "traum", "--coders", "ana", "--by", "role",
            "--out", str(tmp_path / "role"))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "role").glob("traum_*.csv")) == [
        "traum_act_by_role.csv"
    ]
    r = cli("report", "--codebook", "traum", "--coders", "zoe", "--out", str(tmp_path / "z"))
    assert r.exit_code == 1 and "--coders: 'zoe' has no labels for codebook 'traum'" in r.stderr
    r = cli("report", "--codebook", "traum", "--by", "colour", "--coders", "ana")
    assert r.exit_code == 1 and "--by: unknown column 'colour'" in r.stderr


def test_a_codebook_without_gold_or_llm_labels_is_named_as_such(cli, tmp_path) -> None:
    """As after `make demo`: traum has gold, mental_model only participants' self-reports,
    which are then its default source, each action's own report (issue 35); the line names
    the coders instead of an empty list."""
    data = Path(__file__).resolve().parents[1] / "data"
    import_demo(cli)  # and the three coders' traum labels
    assert cli("adjudicate", "--codebook", "traum", "--majority-only").exit_code == 0
    reports = cli(
        "import-labels", str(data / "demo_self_reports.jsonl"), "--codebook", "mental_model",
        "--mapping", str(data / "demo_self_report_mapping.yaml"),
    )  # fmt: skip
    assert reports.exit_code == 0, reports.output
    r = cli("report", "--codebook", "traum", "--out", str(tmp_path / "report"))
    assert r.exit_code == 0, r.output
    assert "traum: labels by gold (" in r.stdout
    assert (
        "mental_model: each action's own report, by the coder self:<its actor> (self:Leo "
        "(22 actions), self:Maya (23 actions), self:Priya (34 actions), self:Tom (28 actions)) "
        "[its only labels are own reports]"
    ) in r.stdout
    assert "labels by  [" not in r.stdout


def test_report_on_a_split_part(cli, gold_db, tmp_path) -> None:
    assert cli("split-sessions", "--test", "1", "--per", "condition").exit_code == 0
    out = tmp_path / "r"
    r = cli("report", "--codebook", "traum", "--split", "main", "--out", str(out))
    assert r.exit_code == 0, r.output
    by_split = pd.read_csv(out / "traum_act_by_split.csv").set_index("code")
    assert int(by_split.loc["n", "train"]) + int(by_split.loc["n", "test"]) == 343
    data = pd.read_csv(out / "dataset.csv")
    assert set(data["split"]) == {"all", "train", "test"}
    r = cli("report", "--codebook", "traum", "--split", "main", "--part", "test",
            "--out", str(tmp_path / "t"))  # fmt: skip
    assert r.exit_code == 0, r.output
    html = (tmp_path / "t" / "report.html").read_text()
    assert "Scope: split &#x27;main&#x27;, test part." in html
    assert "2 sessions and" in html
    r = cli("report", "--codebook", "traum", "--part", "test")
    assert r.exit_code == 1 and "--part needs --split NAME" in r.stderr


def test_report_on_one_part_restricts_every_table_and_chart(cli, gold_db, tmp_path) -> None:
    assert cli("split-sessions", "--test", "1", "--per", "condition").exit_code == 0
    with Store(gold_db) as s:
        parts = s.analysis.session_split_parts("main")
        positions = pd.DataFrame(s.analysis.action_positions())
    test_actions = positions[positions["session"].map(parts) == "test"]
    n_test = len(test_actions)
    assert 0 < n_test < 343
    out = tmp_path / "t"
    r = cli("report", "--codebook", "traum", "--split", "main", "--part", "test",
            "--out", str(out))  # fmt: skip
    assert r.exit_code == 0, r.output
    # the dataset table: the test rows only
    assert set(pd.read_csv(out / "dataset.csv")["split"]) == {"test"}
    # code shares: test actions only; no by-split table for a single part
    by_condition = pd.read_csv(out / "traum_act_by_condition.csv").set_index("code")
    assert by_condition.loc["n"][["hidden", "visible"]].astype(int).sum() == n_test
    assert not (out / "traum_act_by_split.csv").exists()
    # which coder gave how many: counted within the part
    used = re.search(r"traum: labels by gold \((\d+) actions\), then llm:fake \((\d+) actions\)",
                     r.stdout)  # fmt: skip
    assert used and int(used[1]) + int(used[2]) == n_test
    assert f"mental_model: labels by gold ({n_test} actions)" in r.stdout
    # mental model tables
    assert pd.read_csv(out / "figure4_right.csv")["n"].sum() == 3 * n_test
    assert pd.read_csv(out / "figure4_left.csv")["n"].sum() == n_test
    assert pd.read_csv(out / "traum_mental_model.csv")["actions"].sum() == n_test
    table8 = pd.read_csv(out / "table8_mental_model.csv").set_index(["question", "code"])
    assert table8.loc[("Q1", "sessions"), "all, test mean"] == 2
    assert table8.loc[("Q1", "sessions"), "all, train mean"] == 0
    # agreement of the human coders: over the part's items
    agreement_rows = pd.read_csv(out / "agreement.csv").set_index("codebook")
    assert int(agreement_rows.loc["traum", "kappa items"]) == n_test
    labels = pd.read_csv(DEMO_LABELS)
    in_part = labels[labels["action_id"].isin(set(test_actions["action_id"]))]
    humans = in_part.rename(columns={"action_id": "item"})[["item", "coder", "value"]]
    assert float(agreement_rows.loc["traum", "fleiss kappa"]) == pytest.approx(
        agreement.fleiss_kappa(humans).kappa, abs=1e-3
    )
    html = (out / "report.html").read_text()
    assert "over the test part of split &#x27;main&#x27; only" in html


def test_alignment_takes_all_answers_of_an_action_from_one_coder(cli, gold_db, tmp_path) -> None:
    from annotate.analysis.report import build_report
    from tests.test_analysis_support import write_csv

    with Store(gold_db) as s:
        positions = pd.DataFrame(s.analysis.action_positions())
    # llm:fake says every action is aligned; gold leaves Q4 open on one session's actions
    aligned = {"Q1": "t3", "Q2": "p1", "Q3": "r1", "Q4": "yes"}
    rows = [{"action_id": a, "coder": "llm:fake", "question": q, "value": v}
            for a in positions["action_id"] for q, v in aligned.items()]  # fmt: skip
    r = cli("import-labels", str(write_csv(tmp_path / "llm_mm.csv", rows)), "--codebook",
            "mental_model")  # fmt: skip
    assert r.exit_code == 0, r.output
    session = sorted(positions["session"].unique())[0]
    open_q4 = set(positions.loc[positions["session"] == session, "action_id"])
    with Store(gold_db) as s:
        s.gold_votes.clear_answers("mental_model", "gold", [(a, "Q4") for a in open_q4])
    with Store(gold_db) as s:
        report = build_report(s, "traum", n_boot=10)
        gold = pd.DataFrame(s.labels.label_rows("mental_model", coders=["gold"]))
    tables = {t.key: t for t in report.tables()}
    # gold answered these actions, so Q4 is not borrowed from llm:fake: they are left out
    left = tables["figure4_left"].rows
    assert sum(row["n"] for row in left) == 343 - len(open_q4)
    wide = gold.pivot(index="action_id", columns="question", values="value")
    wide = wide.join(positions.set_index("action_id"))
    wide["bin"] = wide["position"] * DECILES // wide["session_length"]
    expected = (wide["Q1"] == "t3").groupby([wide["condition"], wide["bin"]]).mean()
    right = {
        (r["question"], r["condition"], r["progress"]): r for r in tables["figure4_right"].rows
    }
    for (condition, i), share in expected.items():
        row = right[("Q1", condition, progress_label(i, DECILES))]
        assert row["share"] == pytest.approx(share)


def test_charts_show_option_labels_and_n(gold_db) -> None:
    from annotate.analysis import charts
    from annotate.analysis.report import build_report

    with Store(gold_db) as s:
        report = build_report(s, "traum", n_boot=10)
    by_key = {c.key: c for c in report.charts()}
    acts = by_key["traum_act_by_condition"]
    assert {"Acknowledge", "Request repair (ReqRepair)", "Other"} <= set(acts.data.index)
    assert list(acts.data.columns) == ["hidden (n = 184)", "visible (n = 159)"]
    _, ax = charts.draw(acts)
    assert "Request acknowledgement (ReqAck)" in [t.get_text() for t in ax.get_yticklabels()]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(acts.data.columns)
    # Figure 4, left: each bar says its share and its n, and has its interval
    same_page = by_key["figure4_left"]
    assert "Request repair" in same_page.data.index
    assert list(same_page.data.columns) == ["hidden (n = 184)", "visible (n = 159)"]
    assert same_page.n is not None and int(same_page.n.to_numpy().sum()) == 343
    assert same_page.low is not None and same_page.high is not None
    assert ((same_page.low <= same_page.data) & (same_page.data <= same_page.high)).all().all()
    _, ax = charts.draw(same_page)
    bar_texts = [t.get_text() for t in ax.texts]
    assert len(bar_texts) == same_page.data.notna().sum().sum()
    assert all(re.fullmatch(r"\d+% \(n = \d+\)", t) for t in bar_texts), bar_texts
    # Q2: answers by their label, acts with their n
    q2 = by_key["traum_q2"]
    assert "p1: Understood the situation and we were on the same page" in q2.data.columns
    assert all(re.search(r" \(n = \d+\)$", a) for a in q2.data.index)
    _, ax = charts.draw(q2)
    legend = [t.get_text().replace("\n", " ") for t in ax.get_legend().get_texts()]
    assert "p1: Understood the situation and we were on the same page" in legend
    # Figure 4, right: three lines per condition over deciles
    lines = by_key["figure4_right"]
    assert list(lines.data.columns) == [
        f"{q} = {c}, {condition}"
        for q, c in (("Q1", "t3"), ("Q2", "p1"), ("Q3", "r1"))
        for condition in ("hidden", "visible")
    ]
    assert len(lines.data) == DECILES
    _, ax = charts.draw(lines)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(lines.data.columns)


def test_maptask_report_with_corpus_labels(cli, shared, db_path, tmp_path) -> None:
    r = cli("import", str(shared / "maptask" / "dialogues"), "--labels-as", "hcrc",
            "--codebook", "hcrc_moves")  # fmt: skip
    assert r.exit_code == 0
    out = tmp_path / "mt"
    r = cli("report", "--codebook", "hcrc_moves", "--coders", "hcrc", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "hcrc_moves: labels by hcrc (21052 actions) [--coders]" in r.stdout
    table = pd.read_csv(out / "hcrc_moves_move_by_condition.csv").set_index("code")
    assert table.loc["n", "ec"] == 8743 and table.loc["n", "nc"] == 12309
    assert table.drop(index="n")[["ec", "nc"]].astype(float).sum().round(6).tolist() == [1, 1]
    by_role = pd.read_csv(out / "hcrc_moves_move_by_role.csv").set_index("code")
    assert list(by_role.columns[1:]) == ["guide", "follower"]
    assert float(by_role.loc["instruct", "guide"]) > float(by_role.loc["instruct", "follower"])
    html = (out / "report.html").read_text()
    assert len(IMG.findall(html)) == 2
    assert "agreement needs at least 2 coders; got 1 (hcrc)" in html


def test_report_modules_load_matplotlib_only_when_drawing() -> None:
    code = (
        "import json, sys\n"
        "import annotate.commands.analysis, annotate.analysis.report\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('matplotlib', 'agreement'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_charts_are_greyscale(gold_db, tmp_path) -> None:
    from annotate.analysis.report import build_report, write_report

    with Store(gold_db) as s:
        files = write_report(build_report(s, "traum", n_boot=10), tmp_path / "g")
    for path in files.charts:
        pixels = _png(path.read_bytes())[..., :3]
        spread = pixels.max(axis=2) - pixels.min(axis=2)  # 0 for grey pixels
        assert float(spread.max()) < 0.02, path.name
    assert Path(files.html).name == "report.html"


def test_report_lists_stored_agreement_runs(cli, gold_db, tmp_path) -> None:
    with Store(gold_db) as s:
        if not s.db.query("SELECT 1 FROM sqlite_master WHERE name = 'agreement_runs'"):
            pytest.skip("agreement runs (migration 3) are not in this checkout")
        columns = s.db.query("PRAGMA table_info(agreement_runs)")
        values = {}
        for c in columns:
            if c["pk"] or not c["notnull"] or c["dflt_value"] is not None:
                continue
            values[c["name"]] = 1 if c["type"].upper() == "INTEGER" else "[]"
        values |= {"codebook": "traum", "coders": '["ana", "ben", "caro"]',
                   "results": json.dumps(AGREE_RESULTS)}  # fmt: skip
        marks = ", ".join("?" * len(values))
        with s.db.transaction() as conn:
            conn.execute(
                f"INSERT INTO agreement_runs ({', '.join(values)}) VALUES ({marks})",
                tuple(values.values()),
            )
    out = tmp_path / "r"
    assert cli("report", "--codebook", "traum", "--out", str(out)).exit_code == 0
    html = (out / "report.html").read_text()
    assert ">Stored agreement runs (annotate agree)</h3>" in html
    assert "<td>act: kappa 0.580, alpha 0.581, AC1 0.629</td>" in html
    assert "<td>ana, ben, caro</td>" in html


def test_headline_figures() -> None:
    from annotate.analysis.agreement_section import headline_figures

    assert headline_figures(AGREE_RESULTS) == "act: kappa 0.580, alpha 0.581, AC1 0.629"
    mixed = {"results": [{"question": "Q4", "value": {"fleiss": {"kappa": 0.5}},
                          "reasons": {"alpha_masi": {"alpha": 0.25}}}]}  # fmt: skip
    assert headline_figures(mixed) == "Q4: kappa 0.500, reasons MASI alpha 0.250"
    other = {"q": {"fleiss": {"kappa": 0.5, "per_category": [{"kappa": 0.1}]}}}
    assert headline_figures(other) == "q.fleiss.kappa=0.500"
    assert headline_figures(None) == "" and headline_figures("text") == ""
