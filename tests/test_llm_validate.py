"""The validation report of an LLM coder against gold and the human coders."""

from __future__ import annotations

import numpy as np
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from annotate.codebook import Answer, find_codebook
from llm_coder.validate import build_report, question_report

TRAUM = find_codebook("traum").codebook
ACT = TRAUM.questions[0]


def _answers(values: list[str]) -> dict[str, dict[str, Answer]]:
    return {f"a{i}": {ACT.id: Answer(v)} for i, v in enumerate(values)}


def test_a_code_only_a_human_used_is_counted_not_refused() -> None:
    gold = ["Initiate", "Acknowledge", "Initiate", "Repair", "Acknowledge", "Initiate"]
    llm = ["Initiate", "Acknowledge", "Continue", "Repair", "Acknowledge", "Initiate"]
    ann = ["Initiate", "Acknowledge", "Initiate", "Repair", "other", "Initiate"]
    bob = ["Initiate", "Acknowledge", "Continue", "Repair", "Acknowledge", "Cancel"]
    ids = list(_answers(gold))
    report = question_report(
        ACT,
        ids,
        _answers(gold),
        _answers(llm),
        {"ann": _answers(ann), "bob": _answers(bob)},
        llm_name="llm:m",
        gold_name="gold",
    )
    assert report.humans == ("ann", "bob") and report.n_items == 6

    def fleiss(*columns: list[str]) -> float:
        table, _ = aggregate_raters(np.array(columns, dtype=object).T)
        return float(fleiss_kappa(table))

    assert report.fleiss_humans == fleiss(ann, bob)
    assert report.fleiss_humans_llm == fleiss(ann, bob, llm)
    assert report.fleiss == fleiss(gold, llm)
    assert "other" not in report.confusion_labels  # only gold and the LLM are compared there


def test_a_question_answered_unanimously_does_not_block_the_gate() -> None:
    mental = find_codebook("mental_model").codebook
    ids = [f"a{i}" for i in range(6)]
    q1 = ["t1", "t3", "t3", "t2", "t1", "t4"]
    gold = {i: {"Q1": Answer(v), "Q3": Answer("r1")} for i, v in zip(ids, q1, strict=True)}
    llm_q1 = ["t1", "t3", "t2", "t2", "t1", "t4"]
    llm = {i: {"Q1": Answer(v), "Q3": Answer("r1")} for i, v in zip(ids, llm_q1, strict=True)}
    only_two = mental.model_copy(
        update={"questions": [mental.question("Q1"), mental.question("Q3")]}
    )
    report = build_report(only_two, ids, gold, llm, {}, llm_name="llm:m", gold_name="gold")
    q1_report, q3_report = report.questions
    assert q3_report.fleiss is None and q3_report.accuracy == 1.0
    assert report.unanimous_questions == ("Q3",)
    assert report.kappa == q1_report.fleiss and report.passes(0.6)
    # a question with no kappa for another reason (here: no gold answers) stops the gate
    gold_q1 = {i: {"Q1": a["Q1"]} for i, a in gold.items()}
    blocked = build_report(only_two, ids, gold_q1, llm, {}, llm_name="llm:m", gold_name="gold")
    assert blocked.questions[1].n_items == 0
    assert blocked.kappa is None and not blocked.passes(-1.0)


def test_one_human_coder_gives_no_panel_figures() -> None:
    gold = ["Initiate", "Acknowledge", "Initiate", "Repair"]
    llm = ["Initiate", "Acknowledge", "Continue", "Repair"]
    ids = list(_answers(gold))
    report = question_report(
        ACT, ids, _answers(gold), _answers(llm), {"hcrc": _answers(gold)},
        llm_name="llm:m", gold_name="expert",
    )  # fmt: skip
    assert report.fleiss_humans is None and report.fleiss_humans_llm is None
    assert any("needs two human coders" in n for n in report.notes)
