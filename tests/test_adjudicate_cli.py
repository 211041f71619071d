"""`annotate adjudicate`: strict-majority gold, what is left to decide, provenance."""

from __future__ import annotations

import io
from collections import Counter

import pandas as pd
import pytest

from annotate.codebook import Answer, find_codebook
from annotate.reliability.adjudication import majority_answer
from annotate.reliability.majority_pass import adjudicate_majority
from annotate.reliability.selection import select
from annotate.store import Store
from tests.conftest import DEMO, REPO

TRAUM = find_codebook("traum").codebook


@pytest.fixture
def demo(cli, db_path):
    assert cli("import", str(DEMO)).exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    return db_path


def _expected_majority() -> tuple[dict[str, str], set[str]]:
    labels = pd.read_csv(REPO / "data" / "demo_labels.csv")
    majority, ties = {}, set()
    for action_id, group in labels.groupby("action_id"):
        value, votes = Counter(group["value"]).most_common(1)[0]
        if votes >= 2:
            majority[action_id] = value
        else:
            ties.add(action_id)
    return majority, ties


def test_majority_only_writes_gold_with_provenance(cli, demo) -> None:
    majority, ties = _expected_majority()
    r = cli("adjudicate", "--majority-only", "--adjudicator", "zoe")
    assert r.exit_code == 0, r.output
    assert (
        f"traum, coders ana, ben, caro: majority gold for {len(majority)} (item, question) "
        f"cases; {len(ties)} to decide (ties and flagged)." in r.stdout
    )
    assert f"{len(ties)} cases remain undecided: run `annotate adjudicate` without" in r.stdout
    with Store(demo) as s:
        gold = s.labels.label_rows("traum", coders=["gold"])
    assert {g["action_id"]: g["value"] for g in gold} == majority
    one = gold[0]
    assert one["source"] == "adjudicate" and one["codebook_hash"] == TRAUM.version_hash
    assert one["meta"]["method"] == "majority" and one["meta"]["adjudicator"] == "zoe"
    assert one["meta"]["coders"] == ["ana", "ben", "caro"]
    assert set(one["meta"]["votes"]) == {"ana", "ben", "caro"}
    other = next(g for g in gold if g["value"] == "other")
    assert other["other_text"]  # the text most of the majority wrote
    # gold is a coder of its own, and agree leaves it out unless named
    out = cli("agree", "-f", "json")
    assert '"coders": [\n    "ana",\n    "ben",\n    "caro"\n  ]' in out.stdout
    # running again changes nothing
    before = cli("export", "--what", "gold", db=demo).stdout
    assert cli("adjudicate", "--majority-only", "--adjudicator", "zoe").exit_code == 0
    assert cli("export", "--what", "gold", db=demo).stdout == before


def test_flagged_items_go_to_the_adjudicator_even_with_a_majority(cli, demo) -> None:
    majority, ties = _expected_majority()
    flagged = sorted(majority)[:3]
    with Store(demo) as s:
        for action_id in flagged:
            s.labels.set_flag(action_id, TRAUM, "ben", ["act"])
            s.labels.set_note(action_id, TRAUM, "ben", ["act"], "not sure: ask the group")
        plan, _ = adjudicate_majority(s, select(s, codebook="traum"), "zoe", read_cases=True)
    assert len(plan.majority) == len(majority) - 3
    cases = {c.action.id: c for c in plan.to_decide}
    assert set(cases) == ties | set(flagged)
    case = cases[flagged[0]]
    assert case.flagged_by == ("ben",) and case.reason == "flagged by ben"
    ben = next(a for a in case.answers if a.coder == "ben")
    assert ben.note == "not sure: ask the group" and ben.flagged
    r = cli("adjudicate", "--majority-only")
    assert f"{len(ties) + 3} to decide (ties and flagged)" in r.stdout
    with Store(demo) as s:
        gold = {g["action_id"] for g in s.labels.label_rows("traum", coders=["gold"])}
    assert not gold & set(flagged)


def test_majority_gold_is_retracted_when_its_majority_is_gone(cli, demo) -> None:
    majority, ties = _expected_majority()
    assert cli("adjudicate", "--majority-only", "--adjudicator", "zoe").exit_code == 0
    labels = pd.read_csv(REPO / "data" / "demo_labels.csv")
    # an item where exactly two coders agree: the third coder's answer breaks the majority
    votes = labels[labels["action_id"].isin(majority)].groupby("action_id")["value"]
    item = next(i for i, v in votes if v.nunique() == 2)
    rows = labels[labels["action_id"] == item].set_index("coder")["value"]
    lone = next(c for c in rows.index if (rows == rows[c]).sum() == 1)
    turncoat = next(c for c in rows.index if c != lone)
    unused = next(c for c in TRAUM.questions[0].codes if c not in set(rows))
    flagged = next(i for i in sorted(majority) if i != item)
    with Store(demo) as s:
        s.labels.save_answer(item, TRAUM, "act", turncoat, Answer(unused))
        s.labels.set_flag(flagged, TRAUM, "ana", ["act"])
    r = cli("adjudicate", "--majority-only", "--adjudicator", "zoe")
    assert r.exit_code == 0, r.output
    assert f"{len(ties) + 2} to decide" in r.stdout
    assert "2 majority gold retracted (no majority any more)" in r.stdout
    with Store(demo) as s:
        gold = {g["action_id"]: g["value"] for g in s.labels.label_rows("traum", coders=["gold"])}
    assert item not in gold and flagged not in gold
    assert gold == {i: v for i, v in majority.items() if i not in (item, flagged)}
    exported = pd.read_csv(io.StringIO(cli("export", "--what", "gold").stdout))
    assert len(exported) == len(majority) - 2
    again = cli("adjudicate", "--majority-only", "--adjudicator", "zoe")
    assert "retracted" not in again.stdout  # nothing stale is left


def test_decided_gold_is_never_overwritten_by_a_majority(cli, demo) -> None:
    majority, _ = _expected_majority()
    item = sorted(majority)[0]
    with Store(demo) as s:
        plan, _ = adjudicate_majority(s, select(s, codebook="traum"), "zoe", read_cases=True)
        case = next(c for c in plan.majority if c.action.id == item)
        from annotate.reliability.adjudication import decide

        decide(s, plan, case, Answer("Cancel"), "zoe")
    cli("adjudicate", "--majority-only", "--adjudicator", "max")
    with Store(demo) as s:
        gold = {g["action_id"]: g for g in s.labels.label_rows("traum", coders=["gold"])}
        again, _ = adjudicate_majority(s, select(s, codebook="traum"), "max", read_cases=True)
    assert gold[item]["value"] == "Cancel"
    assert gold[item]["meta"]["method"] == "decided" and gold[item]["meta"]["adjudicator"] == "zoe"
    assert item in {c.action.id for c in again.kept}


def test_majority_rule() -> None:
    a, b = Answer("Initiate"), Answer("Continue")
    assert majority_answer([a, a, b], 3) == (a, 2)
    assert majority_answer([a, b, Answer("Repair")], 3) == (None, 1)
    assert majority_answer([a, a, None], 3) == (a, 2)  # 2 of 3 coders
    assert majority_answer([a, a, None, None], 4) == (None, 2)  # 2 of 4 is no majority
    assert majority_answer([a, b], 2) == (None, 1)
    assert majority_answer([None, None], 2) == (None, 0)
    # "Other" texts do not split a majority; the most common text is kept
    o1, o2 = Answer("other", other_text="greeting"), Answer("other", other_text="hello")
    assert majority_answer([o1, o2, o1], 3) == (o1, 3)
    # sets are compared whole (yes/no reasons)
    n1, n12 = Answer("no", ("n1",)), Answer("no", ("n1", "n2"))
    assert majority_answer([n1, n12, Answer("yes")], 3) == (None, 1)
    assert majority_answer([n12, Answer("no", ("n2", "n1")), n1], 3)[1] == 2


def test_items_answered_by_one_coder_wait(cli, demo, tmp_path) -> None:
    with Store(demo) as s:
        ids = [r["id"] for r in s.actions.action_rows()][:4]
    rows = ["action_id,coder,question,value"]
    rows += [f"{i},ana,Q1,t1" for i in ids] + [f"{ids[0]},ben,Q1,t1", f"{ids[1]},ben,Q1,t2"]
    path = tmp_path / "q1.csv"
    path.write_text("\n".join(rows) + "\n")
    assert cli("import-labels", str(path), "--codebook", "mental_model").exit_code == 0
    r = cli("adjudicate", "--codebook", "mental_model", "--majority-only", "--adjudicator", "z")
    assert r.exit_code == 0, r.output
    assert "majority gold for 1 (item, question) cases; 1 to decide" in r.stdout
    assert "; 2 answered by only one coder, left for later." in r.stdout


def test_adjudicate_errors(cli, demo) -> None:
    r = cli("adjudicate", "--coders", "ana", "--majority-only")
    assert r.exit_code == 1
    assert "error: adjudication needs at least 2 coders; got 1 (ana)" in r.stderr
    r = cli("adjudicate", "--codebook", "hcrc_moves", "--majority-only")
    assert "error: codebook 'hcrc_moves' has no labels in this file" in r.stderr


def test_adjudicate_says_who_counts_and_names_a_coder_with_a_trial_label(
    cli, demo, tmp_path
) -> None:
    r = cli("adjudicate", "--majority-only", "--adjudicator", "zoe", "--coders", "ana,ben,caro")
    assert r.exit_code == 0, r.output
    assert (
        "majority: more than half of the 3 selected coders, i.e. 2 of 3 giving the same answer, "
        "on every item whoever answered it; items answered: ana 343, ben 343, caro 343"
    ) in r.stdout
    assert "warning" not in r.stderr
    three = int(r.stdout.split("majority gold for ")[1].split()[0])
    first = pd.read_csv(REPO / "data" / "demo_labels.csv").iloc[0]
    trial = tmp_path / "trial.csv"
    trial.write_text(f"action_id,coder,value,other_text\n{first.action_id},dan,Initiate,\n")
    assert cli("import-labels", str(trial), "--codebook", "traum").exit_code == 0
    r = cli("adjudicate", "--majority-only", "--adjudicator", "zoe")
    assert r.exit_code == 0, r.output
    assert "i.e. 3 of 4 giving the same answer" in r.stdout and "dan 1" in r.stdout
    four = int(r.stdout.split("majority gold for ")[1].split()[0])
    assert four < three
    assert r.stderr.strip() == (
        "warning: dan (1) answered far fewer items than the others; counting this coder raises "
        f"the majority to 3 of 4, and {three - four} cases that a majority of the others agree "
        "on go to the adjudicator instead. To leave this coder out: --coders ana,ben,caro"
    )


def test_a_majority_case_reads_its_action_only_when_asked(demo) -> None:
    with Store(demo) as s:
        plan, _ = adjudicate_majority(s, select(s, codebook="traum"), "zoe", read_cases=True)
        assert plan.majority and plan.to_decide
        assert all(c.loaded is None for c in plan.majority)  # --majority-only needs none
        assert all(c.loaded is not None for c in plan.to_decide)  # the screen shows these
        case = plan.majority[0]
        assert case.action == s.actions.action(case.action_id) and case.loaded is not None
        # shared objects: one CoderAnswer per distinct row, the same votes per pattern
        rows = [a for c in plan.majority for a in c.answers]
        assert len({id(a) for a in rows}) == len(set(rows)) < len(rows)


def test_partial_coverage_is_stated_and_a_case_short_of_votes_explained(
    cli, demo, tmp_path
) -> None:
    """Four coders who answered different items (issue 31, item 5): the counts per coder
    are of every item they answered, how many coders answered each item is stated, and an
    item that only two answered and agree on (a majority of 4 needs 3) goes to the
    adjudicator with the reason and the --coders that would decide it."""
    with Store(demo) as s:
        ids = [r["id"] for r in s.actions.action_rows()][:10]
    rows = ["action_id,coder,question,value"]
    rows += [f"{i},{c},Q1,t1" for i in ids[:4] for c in "abcd"]  # 4 of 4 agree
    rows += [f"{i},{c},Q1,t1" for i in ids[4:7] for c in "ab"]  # only a and b: agree
    rows += [f"{ids[7]},a,Q1,t1", f"{ids[7]},c,Q1,t2"]  # a tie
    rows += [f"{i},d,Q1,t1" for i in ids[8:10]]  # only d
    path = tmp_path / "partial.csv"
    path.write_text("\n".join(rows) + "\n")
    assert cli("import-labels", str(path), "--codebook", "mental_model").exit_code == 0
    r = cli("adjudicate", "--codebook", "mental_model", "--majority-only", "--adjudicator", "z")
    assert r.exit_code == 0, r.output
    out = " ".join(r.stdout.split())
    assert "i.e. 3 of 4 giving the same answer" in out
    assert "items answered: a 8, b 7, c 5, d 6" in out  # every item each answered
    assert (
        "coders answering each item: 4 of 4 on 4, 2 of 4 on 4 (short of a majority), "
        "1 of 4 on 2 (left for later)"
    ) in out
    assert (
        "3 cases go to the adjudicator for want of votes: most of the coders who answered "
        "them agree, but fewer answered than the 3 of 4 a majority needs; --coders a,b (the "
        "coders who answered) would decide 3 of them by majority."
    ) in out
    assert "gold for 4 (item, question) cases; 4 to decide (ties and flagged, 3 short of" in out
    with Store(demo) as s:
        plan, _ = adjudicate_majority(
            s, select(s, codebook="mental_model"), "z", read_cases=True
        )
        case = next(c for c in plan.to_decide if c.action_id == ids[4])
        tie = next(c for c in plan.to_decide if c.action_id == ids[7])
    assert case.short_reason == "short of votes, 2 of 4 answered: --coders a,b decides it"
    assert case.reason == (
        "short of votes: 2 of the 2 coders who answered agree, but a majority needs 3 of the "
        "4 selected; --coders a,b would decide it"
    )
    assert tie.short_reason == "tie"
    r = cli("adjudicate", "--codebook", "mental_model", "--majority-only", "--coders", "a,b")
    assert r.exit_code == 0, r.output
    out = " ".join(r.stdout.split())
    assert "majority gold for 7 (item, question) cases; 0 to decide" in out
    assert "want of votes" not in out
