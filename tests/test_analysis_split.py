"""`annotate split-sessions`: the objective by hand, exhaustive vs search, storage, Map Task."""

from __future__ import annotations

import io
import itertools
import json
import math
import sqlite3
import statistics

import numpy as np
import pandas as pd
import pytest

from annotate.analysis.session_split import (
    best_subset,
    exhaustive_search,
    local_search,
    objective,
    session_features,
)
from annotate.models import Action
from annotate.store import Store
from annotate.store.migrations import m001_initial, m002_llm
from tests.test_analysis_support import import_demo

# Hand-made: condition x has sessions whose share of messages is 1, 3/4, 1/2 and 0 (the
# rest are draws); condition y has 1, 1/2 and 0.
HAND = {
    "x1": ("x", 4, 0),
    "x2": ("x", 3, 1),
    "x3": ("x", 1, 1),
    "x4": ("x", 0, 2),
    "y1": ("y", 2, 0),
    "y2": ("y", 1, 1),
    "y3": ("y", 0, 2),
}


def _hand_actions() -> list[Action]:
    acts = []
    for session, (condition, messages, draws) in HAND.items():
        types = ["message"] * messages + ["draw"] * draws
        acts += [
            Action(id=f"{session}:{i}", session=session, seq=i, action_type=t, condition=condition)
            for i, t in enumerate(types)
        ]
    return acts


def _by_hand(test_share: float, rest: list[float]) -> float:
    """Objective with one test session: features are the message and the draw share, whose
    deviations mirror each other, so the objective is twice that of the message share."""
    return 2 * (abs(test_share - statistics.fmean(rest)) + abs(0 - statistics.pstdev(rest)))


def test_hand_made_split_has_the_best_subset_known_by_hand(cli, store, db_path) -> None:
    store.add_actions(_hand_actions(), path="hand", sha256="hand", fmt="test")
    # x: testing x3 (share 1/2) leaves 1, 3/4, 0: mean 7/12, variance 26/144.
    best_x = 2 * (1 / 12 + math.sqrt(26) / 12)
    assert best_x == pytest.approx((1 + math.sqrt(26)) / 6)
    others_x = [_by_hand(1.0, [0.75, 0.5, 0.0]), _by_hand(0.75, [1.0, 0.5, 0.0]),
                _by_hand(0.0, [1.0, 0.75, 0.5])]  # fmt: skip
    assert _by_hand(0.5, [1.0, 0.75, 0.0]) == pytest.approx(best_x)
    assert min(others_x) > best_x + 0.2  # 1.316 is the runner-up
    # y: testing y2 (share 1/2) leaves 1 and 0: mean 1/2, sd 1/2 -> 2 * (0 + 1/2) = 1.
    best_y = 1.0
    r = cli("split-sessions", "--test", "1", "--per", "condition", "--seed", "3", "-f", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    groups = {g["group"]: g for g in out["groups"]}
    assert groups["x"]["test"] == ["x3"] and groups["y"]["test"] == ["y2"]
    assert groups["x"]["objective"] == pytest.approx(best_x, abs=1e-12)
    assert groups["y"]["objective"] == pytest.approx(best_y, abs=1e-12)
    assert out["objective"] == pytest.approx(best_x + best_y, abs=1e-12)
    assert groups["x"]["n_subsets"] == 4 and groups["x"]["method"] == "exhaustive"
    assert out["random_objective"] >= out["objective"]
    with Store(db_path) as s:
        split = s.session_split("main")
    assert split["parts"] == {"x1": "train", "x2": "train", "x3": "test", "x4": "train",
                              "y1": "train", "y2": "test", "y3": "train"}  # fmt: skip
    assert split["objective"] == pytest.approx(best_x + best_y)
    assert split["per"] == "condition" and split["seed"] == 3


def test_objective_function_matches_the_hand_formula() -> None:
    x = np.array([[1.0, 0.0], [0.75, 0.25], [0.5, 0.5], [0.0, 1.0]])
    for i in range(4):
        rest = [x[j, 0] for j in range(4) if j != i]
        assert objective(x, [i]) == pytest.approx(_by_hand(x[i, 0], rest))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_exhaustive_and_search_agree_on_small_cases(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.dirichlet(np.ones(6), size=12)  # 12 sessions, shares of 6 codes
    exhaustive = exhaustive_search(x, 4)
    assert exhaustive.n_subsets == math.comb(12, 4) == 495
    brute = min(itertools.combinations(range(12), 4), key=lambda t: objective(x, t))
    assert objective(x, brute) == pytest.approx(exhaustive.objective, abs=1e-12)
    search = local_search(x, 4, seed=seed)
    assert search.method == "search"
    assert search.objective == pytest.approx(exhaustive.objective, abs=1e-12)
    assert search.test == exhaustive.test
    # best_subset switches to the search above max_exhaustive
    assert best_subset(x, 4, max_exhaustive=494, seed=seed).method == "search"
    assert best_subset(x, 4, max_exhaustive=495).method == "exhaustive"


def test_exhaustive_scores_in_chunks_like_one_pass(monkeypatch) -> None:
    import annotate.analysis.session_split as mod

    x = np.random.default_rng(5).random((11, 3))
    whole = exhaustive_search(x, 3)
    monkeypatch.setattr(mod, "CHUNK_FLOATS", 1)  # chunks of 1024 subsets
    assert exhaustive_search(x, 3) == whole


def test_a_tie_up_to_rounding_goes_to_the_first_subset_in_the_exhaustive_scan(monkeypatch):
    import annotate.analysis.session_split as mod

    # Sessions 2k and 2k+1 are identical, so many subsets tie in exact arithmetic. Rounding
    # can make a later one come out lower by ~1e-16: simulate that by making every later
    # subset's computed value a little lower, as the worst case of rounding.
    x = np.repeat(np.random.default_rng(3).dirichlet(np.ones(5), size=5), 2, axis=0)
    best = min(objective(x, t) for t in itertools.combinations(range(10), 3))
    first = next(t for t in itertools.combinations(range(10), 3) if objective(x, t) <= best + 1e-12)
    exact = mod._Scorer.subsets

    def rounded_down_later(self, idx):
        return exact(self, idx) - 1e-15 * np.arange(len(idx)) / len(idx)

    assert local_search(x, 3, seed=1).test == first  # the search's own rule (exact sums)
    monkeypatch.setattr(mod._Scorer, "subsets", rounded_down_later)
    assert exhaustive_search(x, 3).test == first


def test_features_concatenate_guide_and_follower_with_unseen_codes_as_zero() -> None:
    actions = pd.DataFrame(
        [
            ("a1", "s1", "guide", "message"),
            ("a2", "s1", "follower", "draw"),
            ("a3", "s1", "follower", "message"),
            ("a4", "s2", "guide", "message"),
            ("a5", "s2", "guide", "message"),
        ],
        columns=["action_id", "session", "role", "action_type"],
    )
    labels = pd.DataFrame(
        [("a1", "act", "x", "Initiate", ()), ("a3", "act", "x", "Acknowledge", ())],
        columns=["action_id", "question", "coder", "value", "codes"],
    )
    f = session_features(actions, {"traum": labels})
    assert list(f.columns) == [
        "guide:type:draw", "guide:type:message", "follower:type:draw",
        "follower:type:message", "guide:traum.act:Acknowledge", "guide:traum.act:Initiate",
        "follower:traum.act:Acknowledge", "follower:traum.act:Initiate",
    ]  # fmt: skip
    assert f.loc["s1"].tolist() == [0, 1, 0.5, 0.5, 0, 1, 1, 0]
    # s2: the follower did nothing and nobody labelled anything: zeros, not NaN
    assert f.loc["s2"].tolist() == [0, 1, 0, 0, 0, 0, 0, 0]


def test_features_of_a_yes_no_question_include_the_share_of_each_reason() -> None:
    from annotate.codebook import find_codebook

    mm = find_codebook("mental_model").codebook
    reasons = mm.question("Q4").set_codes
    actions = pd.DataFrame(
        [(f"a{i}", "s1" if i < 4 else "s2", "guide", "message") for i in range(6)],
        columns=["action_id", "session", "role", "action_type"],
    )
    labels = pd.DataFrame(
        [
            ("a0", "Q4", "gold", "yes", ()),
            ("a1", "Q4", "gold", "no", ("n1",)),
            ("a2", "Q4", "gold", "no", ("n1", "n3")),
            ("a3", "Q4", "gold", "no", ("n3",)),
            ("a4", "Q4", "gold", "no", ("n2",)),
            ("a5", "Q4", "gold", "yes", ()),
        ],
        columns=["action_id", "question", "coder", "value", "codes"],
    )
    f = session_features(actions, {"mental_model": labels}, {"mental_model": mm})
    assert [c for c in f.columns if ".Q4" in c] == [
        "guide:mental_model.Q4:yes",
        "guide:mental_model.Q4:no",
        *(f"guide:mental_model.Q4.reason:{r}" for r in reasons),
    ]
    assert f.loc["s1", "guide:mental_model.Q4:no"] == 0.75
    assert f.loc["s1", "guide:mental_model.Q4.reason:n1"] == 0.5  # 2 of the 4 answers
    assert f.loc["s1", "guide:mental_model.Q4.reason:n3"] == 0.5
    assert f.loc["s2", "guide:mental_model.Q4.reason:n2"] == 0.5
    assert f.loc["s2", "guide:mental_model.Q4.reason:n1"] == 0.0  # unseen: 0
    # without the codebook (an older version's question): guessed from the answers
    g = session_features(actions, {"mental_model": labels})
    assert [c for c in g.columns if ".reason:" in c] == [
        f"guide:mental_model.Q4.reason:{r}" for r in ("n1", "n2", "n3")
    ]
    assert g.loc["s1", "guide:mental_model.Q4.reason:n1"] == 0.5


def test_demo_split_is_stored_and_used_by_stats(cli, db_path) -> None:
    import_demo(cli)
    r = cli("split-sessions", "--test", "1", "--per", "condition", "--name", "holdout",
            "--codebooks", "traum", "--coders", "ana")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "split 'holdout' stored: objective" in r.stdout
    with Store(db_path) as s:
        split = s.session_split("holdout")
        conditions = {
            row["session"]: row["condition"]
            for row in s.query("SELECT DISTINCT session, condition FROM actions")
        }
        listed = s.session_splits()
    assert sorted(split["parts"]) == sorted(conditions)  # every session, in one part only
    tests = [sess for sess, part in split["parts"].items() if part == "test"]
    assert sorted(conditions[t] for t in tests) == ["hidden", "visible"]
    assert split["codebooks"] == ["traum"] and split["coders"] == ["ana"]
    assert listed[0]["test_sessions"] == 2 and listed[0]["train_sessions"] == 4
    stats = json.loads(cli("stats", "--split", "holdout", "-f", "json").stdout)
    by = {(x["split"], x["condition"], x["role"]): x for x in stats}
    assert by[("test", "all", "all")]["sessions"] == 2
    assert by[("train", "all", "all")]["sessions"] == 4
    assert by[("train", "all", "all")]["actions"] + by[("test", "all", "all")]["actions"] == 343
    # the same name again needs --replace
    again = cli("split-sessions", "--test", "1", "--name", "holdout")
    assert again.exit_code == 1
    assert "a session split named 'holdout' already exists" in again.stderr
    assert cli("split-sessions", "--test", "2", "--name", "holdout", "--replace").exit_code == 0


def test_split_errors_are_one_line(cli) -> None:
    import_demo(cli)
    r = cli("split-sessions", "--test", "3", "--per", "condition")
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        "error: --test 3 needs 4 sessions in a group; too few in condition 'hidden' "
        "(3 sessions), condition 'visible' (3 sessions)",
        "hint: pass --test 2 or less to split every group",
    ]
    assert cli("split-sessions", "--test", "2", "--per", "condition").exit_code == 0
    r = cli("split-sessions", "--test", "0", "--name", "zero")
    assert r.exit_code == 1 and r.stderr.startswith("error: --test must be at least 1; got 0\n")
    r = cli("split-sessions", "--test", "1", "--small-groups", "test", "--name", "x")
    assert r.exit_code == 1
    assert "error: --small-groups: unknown choice 'test'" in r.stderr
    r = cli("split-sessions", "--test", "1", "--per", "participant")
    assert r.exit_code == 1 and "--per: unknown grouping 'participant'" in r.stderr
    r = cli("split-sessions", "--test", "1", "--codebooks", "traum")
    assert r.exit_code == 1
    assert (
        "codebook 'traum' has no gold, corpus, validated LLM or rule labels "
        "(coders: ana, ben, caro)" in r.stderr
    )
    r = cli("stats", "--split", "nope")
    assert r.exit_code == 1 and "no session split named 'nope'" in r.stderr


def test_migration_4_from_blank_and_from_version_2(tmp_path) -> None:
    with Store(tmp_path / "blank.db") as blank:
        names = [r[0] for r in blank.query("SELECT name FROM _migrations ORDER BY id")]
        assert "m004_session_splits" in names
        cols = {r[1] for r in blank.query("PRAGMA table_info(session_split_items)")}
        assert cols == {"split", "session", "part", "grp"}
    old = tmp_path / "old.db"
    conn = sqlite3.connect(old, isolation_level=None)
    conn.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)")
    m001_initial(conn)
    m002_llm(conn)
    conn.execute(
        "INSERT INTO _migrations VALUES (1, 'm001_initial', 'then'), (2, 'm002_llm', 'then')"
    )
    conn.close()
    with Store(old) as upgraded:
        cols = {r[1] for r in upgraded.query("PRAGMA table_info(session_splits)")}
        assert {"name", "per", "n_test", "seed", "objective", "random_objective"} <= cols
        with pytest.raises(sqlite3.IntegrityError):  # a session is in one part only
            upgraded.conn.execute(
                "INSERT INTO session_split_items VALUES ('s', 'a', 'train', NULL), "
                "('s', 'a', 'test', NULL)"
            )


@pytest.fixture
def maptask_db(cli, shared, db_path):
    r = cli("import", str(shared / "maptask" / "dialogues"), "--labels-as", "hcrc",
            "--codebook", "hcrc_moves")  # fmt: skip
    assert r.exit_code == 0, r.output
    return db_path


def test_maptask_exhaustive_split_per_condition(cli, maptask_db) -> None:
    r = cli("split-sessions", "--test", "3", "--per", "condition", "--codebooks", "hcrc_moves",
            "--coders", "hcrc", "--seed", "7", "-f", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    groups = {g["group"]: g for g in out["groups"]}
    assert groups["ec"]["sessions"] == 48 and groups["nc"]["sessions"] == 54
    assert groups["ec"]["n_subsets"] == math.comb(48, 3) == 17296
    assert groups["nc"]["n_subsets"] == math.comb(54, 3) == 24804
    assert out["method"] == "exhaustive"
    assert out["n_features"] == 2 * (1 + 12)  # guide, follower: message share + 12 moves
    for g in groups.values():
        assert g["objective"] <= g["random_objective"]
        assert all(t[2:4] == g["group"] for t in g["test"])  # q1ec1 -> ec
    # the local search finds the same test sessions here
    r = cli("split-sessions", "--test", "3", "--per", "condition", "--codebooks", "hcrc_moves",
            "--coders", "hcrc", "--name", "searched", "--max-exhaustive", "1",
            "-f", "json")  # fmt: skip
    searched = json.loads(r.stdout)
    assert searched["method"] == "search"
    assert {g["group"]: g["test"] for g in searched["groups"]} == {
        k: g["test"] for k, g in groups.items()
    }
    assert searched["objective"] == pytest.approx(out["objective"])


def test_export_gets_a_split_column(cli, store, db_path) -> None:
    store.add_actions(_hand_actions(), path="hand", sha256="hand", fmt="test")
    assert cli("split-sessions", "--test", "1", "--per", "condition").exit_code == 0
    r = cli("export", "--what", "actions", "--format", "csv", "--split", "main")
    assert r.exit_code == 0, r.output
    frame = pd.read_csv(io.StringIO(r.stdout))
    assert list(frame.columns[:4]) == ["id", "session", "split", "seq"]
    parts = frame.groupby("session")["split"].unique().map(list).to_dict()
    assert parts == {"x1": ["train"], "x2": ["train"], "x3": ["test"], "x4": ["train"],
                     "y1": ["train"], "y2": ["test"], "y3": ["train"]}  # fmt: skip
    r = cli("export", "--what", "actions", "--split", "nope")
    assert r.exit_code == 1 and "no session split named 'nope'" in r.stderr
    plain = pd.read_csv(io.StringIO(cli("export", "--what", "actions").stdout))
    assert "split" not in plain


# -- groups that cannot be split, and nothing to match ----------------------------------


def _solo_session(cli, tmp_path) -> None:
    """One more session, imported without a condition (shown as '-')."""
    path = tmp_path / "solo.csv"
    path.write_text("session,content,role\nsolo,hello,guide\nsolo,hi,follower\n")
    r = cli("import", str(path), "--format", "csv")
    assert r.exit_code == 0, r.output


def test_a_group_that_cannot_be_split_is_named_and_can_go_to_train(cli, db_path, tmp_path):
    import_demo(cli)
    _solo_session(cli, tmp_path)
    split = ("split-sessions", "--per", "condition", "--name", "main")
    r = cli(*split, "--test", "1")
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        "error: --test 1 needs 2 sessions in a group; too few in condition '-' (no "
        "condition, 1 session)",
        "hint: pass --small-groups train to put their sessions in train",
    ]
    r = cli(*split, "--test", "3")  # no group can be split: the hint says what can
    assert r.exit_code == 1
    assert r.stderr.splitlines()[1] == (
        "hint: leave out --per to split the sessions across conditions"
    )
    with Store(db_path) as s:
        assert s.session_splits() == []
    r = cli(*split, "--test", "1", "--small-groups", "train")
    assert r.exit_code == 0, r.output
    assert (
        "condition '-' (no condition, 1 session): too few for --test 1, all in train "
        "(--small-groups train)." in r.stdout
    )
    with Store(db_path) as s:
        stored = s.session_split("main")
        rows = s.query("SELECT part, grp FROM session_split_items WHERE session = 'solo'")
    assert [tuple(r) for r in rows] == [("train", "-")]
    assert sorted(stored["parts"].values()).count("test") == 2  # hidden 1, visible 1
    assert stored["details"]["unsplit"] == [{"group": "-", "sessions": ["solo"], "part": "train"}]
    r = cli("split-sessions", "--test", "7", "--name", "all")
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        "error: --test 7 needs 8 sessions in a group; too few in the data (7 sessions)",
        "hint: pass --test 6 or less",
    ]
    assert cli("split-sessions", "--test", "6", "--name", "all").exit_code == 0


def test_nothing_to_match_gives_a_seeded_random_split_and_says_so(cli, db_path, tmp_path):
    from tests.test_agree_choice import write_dialogue

    files = [str(write_dialogue(tmp_path, f"q9ec{i}", n=8)) for i in range(1, 7)]
    files += [str(write_dialogue(tmp_path, f"q9nc{i}", n=6)) for i in range(1, 4)]
    assert cli("import", *files).exit_code == 0  # every turn a message: no feature differs
    r = cli("split-sessions", "--test", "2", "--per", "condition", "--seed", "3")
    assert r.exit_code == 0, r.output
    for group, n in (("ec", 6), ("nc", 3)):
        assert (
            f"condition '{group}': its {n} sessions do not differ in any of the 2 features, so "
            "every split scores 0: this is a seeded random split (seed 3), not a matched one."
        ) in r.stdout
    rng = np.random.default_rng([3, 0])
    expected = [
        {f"q9{c}{i + 1}" for i in rng.choice(n, size=2, replace=False)}
        for c, n in (("ec", 6), ("nc", 3))
    ]
    with Store(db_path) as s:
        stored = s.session_split("main")
    tests = {x for x, part in stored["parts"].items() if part == "test"}
    assert tests == expected[0] | expected[1]
    assert stored["method"] == "random" and stored["objective"] == 0
    assert tests != {"q9ec1", "q9ec2", "q9nc1", "q9nc2"}  # not the first sessions by name
