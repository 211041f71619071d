"""The rows of the agreement report, one source for every format: a question's headline
figures, per category, per code, per pair, and the items each figure left out."""

from __future__ import annotations

from typing import Any

from annotate.render.agree.words import (
    alpha_scope,
    ci_text,
    items_text,
    join_notes,
    kappa_scope,
    num,
    p_text,
    pct,
    sets_of,
    short_id,
    with_ci,
)

ITEMS_SHOWN = 6


def summary_rows(q: dict[str, Any]) -> list[dict[str, Any]]:
    """The headline figures of one question: statistic, value, CI, notes."""
    rows: list[dict[str, Any]] = []
    v = q["value"]
    if v is not None:
        f = v["fleiss"]
        notes = [f["band"]] if f["band"] else []
        notes.append(_complete_case_items(v))
        ci = v["fleiss_ci"]
        if ci.get("low") is None and ci.get("undefined_reason"):
            notes.append("no CI: " + ci["undefined_reason"])
        elif ci.get("note"):
            notes.append(ci["note"])
        if f["kappa"] is None and f["undefined_reason"]:
            notes = [f["undefined_reason"]]
        rows.append(
            {
                "statistic": "Fleiss' kappa",
                "value": num(f["kappa"]),
                "ci": ci_text(ci) if f["kappa"] is not None else "-",
                "notes": "; ".join(notes),
            }
        )
        if f["kappa"] is not None:
            rows.append(
                {
                    "statistic": "  z (H0: kappa = 0)",
                    "value": num(f["z"], 2),
                    "ci": "",
                    "notes": f"SE0 {num(f['se0'], 4)}; {p_text(f['p_value'])}"
                    if f["z"] is not None
                    else f["undefined_reason"] or "",
                }
            )
        generalized = v.get("fleiss_generalized")  # runs stored before it lack it
        if generalized is not None:
            rows.append(_generalized_row(generalized, f["n_items"]))
        a = v["alpha"]
        rows.append(
            {
                "statistic": "Krippendorff's alpha",
                "value": num(a["alpha"]),
                "ci": "",
                "notes": a["undefined_reason"] or f"{a['metric']}; {items_text(a['n_items'])}",
            }
        )
        nominal = v.get("alpha_nominal")
        if nominal:
            rows.append(
                {
                    "statistic": "  nominal alpha",
                    "value": num(nominal["alpha"]),
                    "ci": "",
                    "notes": nominal["undefined_reason"] or "ignores the order of the codes",
                }
            )
        g = v["ac1"]
        rows.append(
            {
                "statistic": "Gwet's AC1",
                "value": num(g["ac1"]),
                "ci": ci_text(g["ci"]) if g.get("ci") else "",  # runs stored before: no CI
                "notes": _gwet_notes(g["ac1"], g, items_text(g["n_items"])),
            }
        )
        pa = v["percent_agreement"]
        rows.append(
            {
                "statistic": "Percent agreement",
                "value": pct(pa["proportion"]),
                "ci": "",
                "notes": pa["undefined_reason"]
                or f"all coders agree on {pct(pa['unanimous'])} of items",
            }
        )
    s = sets_of(q)
    if s is not None:
        what = "Reasons" if q["kind"] == "yes_no_reasons" else "Sets"
        m = s["alpha_masi"]
        rows.append(
            {
                "statistic": f"{what}: MASI alpha",
                "value": num(m["alpha"]),
                "ci": "",
                "notes": m["undefined_reason"] or alpha_scope(q),
            }
        )
        e = s["exact_agreement"]
        rows.append(
            {
                "statistic": f"{what}: same set",
                "value": pct(e["proportion"]),
                "ci": "",
                "notes": e["undefined_reason"] or "share of coder pairs with identical sets",
            }
        )
    return rows


def _complete_case_items(v: dict[str, Any]) -> str:
    """The items complete-case Fleiss' kappa uses: "343 items", or "8 of 12 items (every
    coder answered)" when some were left out."""
    used, total = v["fleiss"]["n_items"], v["n_items"]
    if used == total:
        return items_text(used)
    return f"{used} of {items_text(total)} (every coder answered)"


def _gwet_notes(estimate: float | None, stat: dict[str, Any], scope: str) -> str:
    """Notes of a figure with Gwet's (2014) SE: its band (kappa), SE and items, or why
    not (runs stored before the SE was computed have none and say nothing of it)."""
    if estimate is None:
        return stat["undefined_reason"] or ""
    se = stat.get("se")
    interval = stat.get("ci") or {}
    return (
        join_notes(
            stat.get("band"),
            None if se is None else f"SE {num(se)}",
            scope,
            None if se is not None or not interval else with_ci(None, interval),
        )
        or ""
    )


def _generalized_row(g: dict[str, Any], complete_case: int) -> dict[str, Any]:
    """Gwet's generalized Fleiss' kappa: every item, however many coders rated it."""
    pairable, rated = g["n_items_pairable"], g["n_items"]
    if rated == pairable == complete_case:
        scope = f"the same {items_text(rated)} (no rating missing)"
    else:
        scope = f"{items_text(pairable)} with 2+ answers" + (
            f" ({rated} rated)" if rated != pairable else ""
        )
    return {
        "statistic": "  generalized (Gwet)",
        "value": num(g["kappa"]),
        "ci": ci_text(g["ci"]) if g["kappa"] is not None else "-",
        "notes": _gwet_notes(g["kappa"], g, scope),
    }


def category_rows(q: dict[str, Any]) -> list[dict[str, Any]]:
    v = q["value"]
    if v is None:
        return []
    return [
        {
            "category": c["category"],
            "share": pct(c["proportion"]),
            "kappa": num(c["kappa"]),
            "z": num(c["z"], 2),
            "notes": c["undefined_reason"] or "",
        }
        for c in v["fleiss"]["per_category"]
    ]


def codes_title(q: dict[str, Any]) -> str:
    what = "reason" if q["kind"] == "yes_no_reasons" else "code"
    return (
        f"Per {what} (chosen or not): Fleiss' kappa {kappa_scope(q)}; nominal alpha "
        f"{alpha_scope(q)}"
    )


def code_rows(q: dict[str, Any]) -> list[dict[str, Any]]:
    s = sets_of(q)
    if s is None:
        return []
    return [
        {
            "code": c["code"],
            "chosen": pct(c["prevalence"]),
            "kappa": num(c["fleiss"]["kappa"]),
            "alpha": num(c["alpha"]["alpha"]),
            "notes": c["fleiss"]["undefined_reason"] or "",
        }
        for c in s["per_code"]
    ]


def method_line(q: dict[str, Any]) -> str | None:
    """How Fleiss' kappa's interval was made (method, resamples usable, seed) and the level
    of measurement, in one or two sentences; None for a question without a value."""
    v = q["value"]
    if v is None:
        return None
    ci = v["fleiss_ci"]
    line = f"Fleiss' kappa CI: {ci['method']}"
    if ci.get("n_boot"):
        line += (
            f", {ci['n_boot']:,} resamples ({ci.get('n_valid') or 0:,} usable), seed {ci['seed']}"
        )
    line += "."
    if v.get("fleiss_generalized") is not None:
        line += (
            " Generalized kappa and AC1 CIs: Gwet's (2014) SE, Student t with N - 1 df "
            "(N: items rated)."
        )
    level = v.get("level", "nominal")
    if level != "nominal":
        weights = (v.get("pairwise_weighted") or [{}])[0].get("weights")
        line += f" Level: {level} (ranks in the codebook's option order): {level} alpha" + (
            f", {weights}-weighted pairwise kappas." if weights else "."
        )
    return line


def pair_rows(q: dict[str, Any], key: str = "pairwise") -> list[dict[str, Any]]:
    """Cohen's kappa per pair (``key`` "pairwise_weighted": weighted kappas)."""
    v = q["value"]
    if v is None:
        return []
    return [
        {
            "pair": f"{p['coder_a']} / {p['coder_b']}",
            "items": p["n_items"],
            "kappa": num(p["kappa"]),
            "ci": ci_text(p["ci"]),
            "agree": pct(p["observed_agreement"]),
            "band": join_notes(p["band"], with_ci(_pair_reason(p), p["ci"])) or "",
        }
        for p in v.get(key) or ()
    ]


def _pair_reason(p: dict[str, Any]) -> str | None:
    """A pair's reason, unless it only says why the z-test (not in this table) is missing."""
    reason = p["undefined_reason"]
    if reason and p["kappa"] is not None and "z-test" in reason and "needs at least" in reason:
        return None
    return reason


def weighted_title(q: dict[str, Any]) -> str:
    weights = q["value"]["pairwise_weighted"][0]["weights"]
    return f"Pairwise weighted Cohen's kappa ({weights} weights, {q['value']['level']})"


def _grouped(entries: list[dict[str, str]], bullet: str) -> list[str]:
    groups: dict[str, list[str]] = {}
    for x in entries:
        groups.setdefault(x["reason"].rstrip("."), []).append(x["item"])
    lines = []
    for reason, items in sorted(groups.items(), key=lambda g: -len(g[1])):
        shown = ", ".join(short_id(i) for i in items[:ITEMS_SHOWN])
        more = f" and {len(items) - ITEMS_SHOWN} more" if len(items) > ITEMS_SHOWN else ""
        lines.append(f"{bullet}{reason}: {items_text(len(items))} ({shown}{more})")
    return lines


def left_out_lines(q: dict[str, Any], bullet: str = "  ", head: str = "") -> list[str]:
    """Which items each figure left out and why, grouped by reason: a line per figure
    (starting with ``head``), and under it a line per reason (with ``bullet``)."""
    lines = []
    value = [x for x in q["left_out"] if x["part"] == "value"]
    sets = [x for x in q["left_out"] if x["part"] != "value"]
    if q["value"] is not None:
        if value:
            others = "alpha, AC1 and percent agreement"
            if q["value"].get("fleiss_generalized") is not None:
                others = "the generalized kappa, " + others
            lines.append(
                f"{head}Left out of Fleiss' kappa: {items_text(len(value))} not answered by every "
                f"coder ({others} use every item with two or more answers):"
            )
            lines += _grouped(value, bullet)
        else:
            lines.append(
                f"{head}Left out of Fleiss' kappa: none (every coder answered every item)."
            )
    if sets:
        if q["kind"] == "yes_no_reasons":
            lines.append(
                f"{head}Left out of the per-reason kappas: {items_text(len(sets))} answered 'no' "
                "by some coders but not by every coder (MASI alpha and the per-reason alphas use "
                "every item two or more coders answered 'no'):"
            )
        else:
            lines.append(
                f"{head}Left out of the per-code kappas: {items_text(len(sets))} not answered by "
                "every coder (MASI alpha and the per-code alphas use every item with two or more "
                "answers):"
            )
        lines += _grouped(sets, bullet)
    not_coded = q["not_coded"]
    if not_coded:
        lines.append(f"{head}Not in any figure: {items_text(len(not_coded))} of the sample:")
        lines += _grouped(not_coded, bullet)
    return lines
