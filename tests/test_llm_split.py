"""The few-shot / held-out split."""

from __future__ import annotations

from collections import Counter

import pytest

from llm_coder.split import stratified_split


def gold(counts: dict[str, int]) -> dict[str, str]:
    out = {}
    for label, n in counts.items():
        for i in range(n):
            out[f"{label}-{i:03d}"] = label
    return out


def test_covers_every_label_when_shots_allow_and_is_proportional():
    labels = gold({"ack": 40, "instruct": 30, "check": 5, "ready": 2})
    split = stratified_split(labels, 8, seed=7)
    got = Counter(labels[i] for i in split.shots)
    assert set(got) == {"ack", "instruct", "check", "ready"}
    assert sum(got.values()) == 8 and got["ack"] >= got["instruct"] >= got["check"]
    assert set(split.shots).isdisjoint(split.heldout)
    assert len(split.heldout) == len(labels) - 8


def test_more_labels_than_shots_takes_the_most_frequent():
    labels = gold({"a": 10, "b": 9, "c": 8, "d": 1, "e": 1})
    split = stratified_split(labels, 3, seed=1)
    assert sorted(labels[i] for i in split.shots) == ["a", "b", "c"]


def test_reproducible_with_seed_and_independent_of_input_order():
    labels = gold({"a": 20, "b": 10, "c": 3})
    again = dict(reversed(list(labels.items())))
    assert stratified_split(labels, 6, 3).shots == stratified_split(again, 6, 3).shots
    assert stratified_split(labels, 6, 3) == stratified_split(labels, 6, 3)
    assert stratified_split(labels, 6, 3).shots != stratified_split(labels, 6, 4).shots


def test_small_labels_are_not_oversampled():
    labels = gold({"a": 1, "b": 1, "c": 30})
    got = Counter(labels[i] for i in stratified_split(labels, 10, 0).shots)
    assert got == {"a": 1, "b": 1, "c": 8}


def test_bad_counts():
    with pytest.raises(ValueError, match="only 2 items"):
        stratified_split(gold({"a": 2}), 3, 0)
    assert stratified_split(gold({"a": 2}), 0, 0).shots == ()
