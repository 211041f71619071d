"""The validation report of an LLM coder against gold and the human coders."""

from __future__ import annotations

import numpy as np
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from annotate.codebook import Answer, find_codebook
from llm_coder.validate import question_report

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
