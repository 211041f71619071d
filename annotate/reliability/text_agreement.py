"""How alike the selected coders' (or agents') free-text answers are, per text question:
SBERT cosine and ROUGE-L F1, each the mean over items of the mean over pairs, with a
bootstrap CI over items (:mod:`agreement.text_similarity`).

The SBERT vectors come from an :class:`~annotate.embeddings.Embedder` through the store's
cache; when the local model is not installed, ROUGE-L is still given and the SBERT line
says what to install.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agreement.text_similarity import (
    TextSimilarity,
    cosine_item_means,
    mean_similarity,
    rouge_item_means,
)
from annotate.codebook import Question
from annotate.errors import AnnotateError

if TYPE_CHECKING:
    from annotate.embeddings import Embedder
    from annotate.reliability.selection import Selection
    from annotate.store import Store


@dataclass(frozen=True)
class TextQuestionResult:
    question: Question
    coders: tuple[str, ...]
    sbert: TextSimilarity | None
    rouge_l: TextSimilarity
    model: str | None
    n_embedded: int = 0
    n_cached: int = 0
    sbert_unavailable: str | None = None

    def rows(self) -> list[dict[str, Any]]:
        """One row per measure: what `agree` prints and exports."""
        out = []
        for name, r in (("SBERT cosine", self.sbert), ("ROUGE-L F1", self.rouge_l)):
            if r is None:
                out.append({"question": self.question.id, "measure": name,
                            "note": self.sbert_unavailable})  # fmt: skip
                continue
            out.append({
                "question": self.question.id,
                "measure": name,
                "mean": r.mean,
                "ci_low": r.ci.low,
                "ci_high": r.ci.high,
                "sd": r.sd,
                "n_items": r.n_items,
                "n_pairs": r.n_pairs,
                "n_single": r.n_items_single,
                "note": (r.undefined_reason or r.ci.undefined_reason or r.ci.note or "")
                .rstrip(".") or None,
            })  # fmt: skip
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question.id,
            "kind": "text",
            "coders": list(self.coders),
            "model": self.model,
            "sbert_cosine": self.sbert.to_dict() if self.sbert else None,
            "rouge_l_f1": self.rouge_l.to_dict(),
            "sbert_unavailable": self.sbert_unavailable,
            "n_embedded": self.n_embedded,
            "n_cached": self.n_cached,
        }


def answers_by_item(store: Store, selection: Selection, question: Question) -> list[list[str]]:
    """The selected coders' answers to ``question``, one list per item (coder order)."""
    table = answer_table(store, selection, question)
    return [[v for v in row.values() if v.strip()] for row in table.values()]


def answer_table(
    store: Store, selection: Selection, question: Question
) -> dict[str, dict[str, str]]:
    """Item -> coder -> value of the selected coders' answers to ``question`` (coders in
    the selection's order)."""
    rows = store.labels.label_rows(
        selection.codebook.name,
        coders=selection.coders,
        question=question.id,
        answered_only=True,
        sample=selection.sample if selection.action_ids is not None else None,
        columns=("action_id", "coder", "value"),
    )
    rank = {c: i for i, c in enumerate(selection.coders)}
    items: dict[str, dict[str, str]] = {}
    for r in rows:
        if r["value"] is not None:
            items.setdefault(r["action_id"], {})[r["coder"]] = r["value"]
    return {
        item: dict(sorted(answers.items(), key=lambda kv: rank[kv[0]]))
        for item, answers in items.items()
    }


def text_agreement(
    store: Store,
    selection: Selection,
    questions: Sequence[Question],
    embedder: Embedder | None,
    *,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    ci_method: str = "bca",
) -> list[TextQuestionResult]:
    """SBERT cosine and ROUGE-L of every text question in ``questions``; ``embedder`` None
    means the local all-MiniLM-L6-v2."""
    from annotate.embeddings import embed_cached, local_sbert

    settings = {"level": ci, "n_boot": n_boot, "seed": seed, "method": ci_method}
    unavailable = None
    if embedder is None:
        try:
            embedder = local_sbert()
        except AnnotateError as exc:  # not installed: ROUGE-L still, and say why not SBERT
            unavailable = exc.message + (f" ({exc.hint})" if exc.hint else "")
    results = []
    for q in questions:
        items = answers_by_item(store, selection, q)
        single = sum(1 for answers in items if len(answers) < 2)
        paired = [answers for answers in items if len(answers) >= 2]
        means, pairs = rouge_item_means(paired)
        rouge = mean_similarity(means, pairs, "rouge_l_f1", n_items_single=single, **settings)
        sbert = None
        n_embedded = n_cached = 0
        if embedder is not None:
            texts = [t for answers in paired for t in answers]
            embedded = embed_cached(store, embedder, texts)
            vectors, start = [], 0
            for answers in paired:
                vectors.append(embedded.vectors[start : start + len(answers)])
                start += len(answers)
            means, pairs = cosine_item_means(vectors)
            sbert = mean_similarity(means, pairs, "sbert_cosine", n_items_single=single, **settings)
            n_embedded, n_cached = embedded.n_embedded, embedded.n_cached
        model = embedder.name if embedder is not None else None
        result = TextQuestionResult(
            q, tuple(selection.coders), sbert, rouge, model, n_embedded, n_cached, unavailable
        )
        results.append(result)
    return results
