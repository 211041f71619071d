"""Agreement figures as words: numbers, intervals, counts and notes, the items a figure uses,
the titles of a question and of a run."""

from __future__ import annotations

from typing import Any


def num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def p_text(value: float | None) -> str:
    if value is None:
        return "-"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def ci_text(interval: dict[str, Any] | None) -> str:
    if not interval or interval.get("low") is None:
        return "-"
    return f"{interval['low']:.3f} to {interval['high']:.3f}"


def ci_header(results: dict[str, Any]) -> str:
    return f"{100 * results['settings']['ci']:g}% CI"


def items_text(n: int) -> str:
    return f"{n} item" + ("" if n == 1 else "s")


def join_notes(*notes: str | None) -> str | None:
    """Notes joined by "; ", each once; None when there is none."""
    kept = [n for n in dict.fromkeys(notes) if n]
    return "; ".join(kept) or None


def with_ci(reason: str | None, interval: dict[str, Any]) -> str | None:
    """A statistic's ``reason`` and why its interval is missing (unless for that same
    reason), or a remark on the interval."""
    why = interval.get("undefined_reason")
    if interval.get("low") is None and why:
        return join_notes(reason, None if why == reason else "no CI: " + why)
    return join_notes(reason, interval.get("note"))


# -- which items the multi-select figures use ---------------------------------------------------


def sets_of(q: dict[str, Any]) -> dict[str, Any] | None:
    return q.get("reasons") or q.get("codes")


def kappa_scope(q: dict[str, Any]) -> str:
    """The items the per-code (per-reason) kappas use: every coder answered (answered 'no')."""
    n = sets_of(q)["items_used"]  # type: ignore[index]
    if q["kind"] == "yes_no_reasons":
        return f"among the {items_text(n)} every coder answered 'no'"
    return f"among the {items_text(n)} every coder answered"


def alpha_scope(q: dict[str, Any]) -> str:
    """The items MASI alpha and the per-code alphas use: two or more answers (or 'no's)."""
    n = sets_of(q)["alpha_masi"]["n_items"]  # type: ignore[index]
    if q["kind"] == "yes_no_reasons":
        return f"among the {items_text(n)} two or more coders answered 'no'"
    return f"among the {items_text(n)} with two or more answers"


def question_title(results: dict[str, Any], q: dict[str, Any]) -> str:
    kind = {"single": "single choice", "multi": "multi-select", "yes_no_reasons": "yes/no"}
    return (
        f"{results['codebook']} {q['question']} ({kind[q['kind']]}): {items_text(q['n_items'])}, "
        f"{q['n_coders']} coders"
    )


def scope_line(results: dict[str, Any]) -> str:
    sample = (
        f"sample '{results['sample']}' ({results['sample_items']} items)"
        if results["sample"]
        else "every labelled item"
    )
    own = [c for c in results["coders"] if c.startswith("self:")]  # participants' reports
    return (
        f"Codebook {results['codebook']} {results['codebook_hash']}, {sample}, coders "
        f"{', '.join(results['coders'])}"
        + (" (a self:NAME coder is a participant's own answers)" if own else "")
        + "."
    )


def short_id(item: str) -> str:
    """UUID-like ids shortened to 8 characters for reading (JSON and CSV keep them whole)."""
    return item[:8] if len(item) >= 32 else item
