"""`annotate agree` rendered: the agreement results as a table, Markdown, CSV or JSON, the
disagreement list and the stored runs (one source of rows for every format)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from annotate.reliability.agreement_data import NOT_CODED, SKIPPED, categories_line
from annotate.render.console import console, err_console
from annotate.render.rows import OutputFormat, csv_text, markdown_table, to_json
from annotate.render.tables import PER_COLUMN, Col, column_widths, vertical
from annotate.render.terminal import for_display

if TYPE_CHECKING:
    from annotate.reliability.agreement_data import DisagreementList

ITEMS_SHOWN = 6
ANSWER_WIDTH = 12  # the disagreement list wraps a longer answer (Other's text)
PAD_EDGES = 1  # no padding at the table's two edges (pad_edge=False): one column's worth
REFERENCES = (
    "Cicchetti, D. V., & Fleiss, J. L. (1977). Comparison of the null distributions of "
    "weighted kappa and the C ordinal statistic. Applied Psychological Measurement, 1(2), "
    "195-201.",
    "Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and "
    "Psychological Measurement, 20(1), 37-46.",
    "Cohen, J. (1968). Weighted kappa: Nominal scale agreement with provision for scaled "
    "disagreement or partial credit. Psychological Bulletin, 70(4), 213-220.",
    "Efron, B. (1987). Better bootstrap confidence intervals. Journal of the American "
    "Statistical Association, 82(397), 171-185.",
    "Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. "
    "Psychological Bulletin, 76(5), 378-382.",
    "Fleiss, J. L., Cohen, J., & Everitt, B. S. (1969). Large sample standard errors of kappa "
    "and weighted kappa. Psychological Bulletin, 72(5), 323-327.",
    "Fleiss, J. L., Nee, J. C. M., & Landis, J. R. (1979). Large sample variance of kappa in "
    "the case of different sets of raters. Psychological Bulletin, 86(5), 974-977.",
    "Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence "
    "of high agreement. British Journal of Mathematical and Statistical Psychology, 61(1), "
    "29-48.",
    "Gwet, K. L. (2014). Handbook of inter-rater reliability (4th ed.). Advanced Analytics.",
    "Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Departmental "
    "Papers (ASC), University of Pennsylvania.",
    "Landis, J. R., & Koch, G. G. (1977). The measurement of observer agreement for "
    "categorical data. Biometrics, 33(1), 159-174.",
    "Passonneau, R. J. (2006). Measuring agreement on set-valued items (MASI) for semantic "
    "and pragmatic annotation. Proceedings of LREC 2006, 831-836.",
)


# -- numbers as text ----------------------------------------------------------------------------


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def _ci(interval: dict[str, Any] | None) -> str:
    if not interval or interval.get("low") is None:
        return "-"
    return f"{interval['low']:.3f} to {interval['high']:.3f}"


def _level(results: dict[str, Any]) -> str:
    return f"{100 * results['settings']['ci']:g}% CI"


def _items(n: int) -> str:
    return f"{n} item" + ("" if n == 1 else "s")


def _join(*notes: str | None) -> str | None:
    """Notes joined by "; ", each once; None when there is none."""
    kept = [n for n in dict.fromkeys(notes) if n]
    return "; ".join(kept) or None


def _with_ci(reason: str | None, interval: dict[str, Any]) -> str | None:
    """A statistic's ``reason`` and why its interval is missing (unless for that same
    reason), or a remark on the interval."""
    why = interval.get("undefined_reason")
    if interval.get("low") is None and why:
        return _join(reason, None if why == reason else "no CI: " + why)
    return _join(reason, interval.get("note"))


# -- which items the multi-select figures use ---------------------------------------------------


def _sets(q: dict[str, Any]) -> dict[str, Any] | None:
    return q.get("reasons") or q.get("codes")


def kappa_scope(q: dict[str, Any]) -> str:
    """The items the per-code (per-reason) kappas use: every coder answered (answered 'no')."""
    n = _sets(q)["items_used"]  # type: ignore[index]
    if q["kind"] == "yes_no_reasons":
        return f"among the {_items(n)} every coder answered 'no'"
    return f"among the {_items(n)} every coder answered"


def alpha_scope(q: dict[str, Any]) -> str:
    """The items MASI alpha and the per-code alphas use: two or more answers (or 'no's)."""
    n = _sets(q)["alpha_masi"]["n_items"]  # type: ignore[index]
    if q["kind"] == "yes_no_reasons":
        return f"among the {_items(n)} two or more coders answered 'no'"
    return f"among the {_items(n)} with two or more answers"


# -- rows of the report (one source for every format) -------------------------------------------


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
                "value": _num(f["kappa"]),
                "ci": _ci(ci) if f["kappa"] is not None else "-",
                "notes": "; ".join(notes),
            }
        )
        if f["kappa"] is not None:
            rows.append(
                {
                    "statistic": "  z (H0: kappa = 0)",
                    "value": _num(f["z"], 2),
                    "ci": "",
                    "notes": f"SE0 {_num(f['se0'], 4)}; {_p(f['p_value'])}"
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
                "value": _num(a["alpha"]),
                "ci": "",
                "notes": a["undefined_reason"] or f"{a['metric']}; {_items(a['n_items'])}",
            }
        )
        nominal = v.get("alpha_nominal")
        if nominal:
            rows.append(
                {
                    "statistic": "  nominal alpha",
                    "value": _num(nominal["alpha"]),
                    "ci": "",
                    "notes": nominal["undefined_reason"] or "ignores the order of the codes",
                }
            )
        g = v["ac1"]
        rows.append(
            {
                "statistic": "Gwet's AC1",
                "value": _num(g["ac1"]),
                "ci": _ci(g["ci"]) if g.get("ci") else "",  # runs stored before: no CI
                "notes": _gwet_notes(g["ac1"], g, _items(g["n_items"])),
            }
        )
        pa = v["percent_agreement"]
        rows.append(
            {
                "statistic": "Percent agreement",
                "value": _pct(pa["proportion"]),
                "ci": "",
                "notes": pa["undefined_reason"]
                or f"all coders agree on {_pct(pa['unanimous'])} of items",
            }
        )
    s = _sets(q)
    if s is not None:
        what = "Reasons" if q["kind"] == "yes_no_reasons" else "Sets"
        m = s["alpha_masi"]
        rows.append(
            {
                "statistic": f"{what}: MASI alpha",
                "value": _num(m["alpha"]),
                "ci": "",
                "notes": m["undefined_reason"] or alpha_scope(q),
            }
        )
        e = s["exact_agreement"]
        rows.append(
            {
                "statistic": f"{what}: same set",
                "value": _pct(e["proportion"]),
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
        return _items(used)
    return f"{used} of {_items(total)} (every coder answered)"


def _gwet_notes(estimate: float | None, stat: dict[str, Any], scope: str) -> str:
    """Notes of a figure with Gwet's (2014) SE: its band (kappa), SE and items, or why
    not (runs stored before the SE was computed have none and say nothing of it)."""
    if estimate is None:
        return stat["undefined_reason"] or ""
    se = stat.get("se")
    interval = stat.get("ci") or {}
    return (
        _join(
            stat.get("band"),
            None if se is None else f"SE {_num(se)}",
            scope,
            None if se is not None or not interval else _with_ci(None, interval),
        )
        or ""
    )


def _generalized_row(g: dict[str, Any], complete_case: int) -> dict[str, Any]:
    """Gwet's generalized Fleiss' kappa: every item, however many coders rated it."""
    pairable, rated = g["n_items_pairable"], g["n_items"]
    if rated == pairable == complete_case:
        scope = f"the same {_items(rated)} (no rating missing)"
    else:
        scope = f"{_items(pairable)} with 2+ answers" + (
            f" ({rated} rated)" if rated != pairable else ""
        )
    return {
        "statistic": "  generalized (Gwet)",
        "value": _num(g["kappa"]),
        "ci": _ci(g["ci"]) if g["kappa"] is not None else "-",
        "notes": _gwet_notes(g["kappa"], g, scope),
    }


def category_rows(q: dict[str, Any]) -> list[dict[str, Any]]:
    v = q["value"]
    if v is None:
        return []
    return [
        {
            "category": c["category"],
            "share": _pct(c["proportion"]),
            "kappa": _num(c["kappa"]),
            "z": _num(c["z"], 2),
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
    s = _sets(q)
    if s is None:
        return []
    return [
        {
            "code": c["code"],
            "chosen": _pct(c["prevalence"]),
            "kappa": _num(c["fleiss"]["kappa"]),
            "alpha": _num(c["alpha"]["alpha"]),
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
            "kappa": _num(p["kappa"]),
            "ci": _ci(p["ci"]),
            "agree": _pct(p["observed_agreement"]),
            "band": _join(p["band"], _with_ci(_pair_reason(p), p["ci"])) or "",
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


def _title(results: dict[str, Any], q: dict[str, Any]) -> str:
    kind = {"single": "single choice", "multi": "multi-select", "yes_no_reasons": "yes/no"}
    return (
        f"{results['codebook']} {q['question']} ({kind[q['kind']]}): {_items(q['n_items'])}, "
        f"{q['n_coders']} coders"
    )


def _scope(results: dict[str, Any]) -> str:
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


def _grouped(entries: list[dict[str, str]], bullet: str) -> list[str]:
    groups: dict[str, list[str]] = {}
    for x in entries:
        groups.setdefault(x["reason"].rstrip("."), []).append(x["item"])
    lines = []
    for reason, items in sorted(groups.items(), key=lambda g: -len(g[1])):
        shown = ", ".join(short_id(i) for i in items[:ITEMS_SHOWN])
        more = f" and {len(items) - ITEMS_SHOWN} more" if len(items) > ITEMS_SHOWN else ""
        lines.append(f"{bullet}{reason}: {_items(len(items))} ({shown}{more})")
    return lines


def _left_out_lines(q: dict[str, Any], bullet: str = "  ", head: str = "") -> list[str]:
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
                f"{head}Left out of Fleiss' kappa: {_items(len(value))} not answered by every "
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
                f"{head}Left out of the per-reason kappas: {_items(len(sets))} answered 'no' by "
                "some coders but not by every coder (MASI alpha and the per-reason alphas use "
                "every item two or more coders answered 'no'):"
            )
        else:
            lines.append(
                f"{head}Left out of the per-code kappas: {_items(len(sets))} not answered by every "
                "coder (MASI alpha and the per-code alphas use every item with two or more "
                "answers):"
            )
        lines += _grouped(sets, bullet)
    not_coded = q["not_coded"]
    if not_coded:
        lines.append(f"{head}Not in any figure: {_items(len(not_coded))} of the sample:")
        lines += _grouped(not_coded, bullet)
    return lines


# -- table ----------------------------------------------------------------------------------------


def _table(
    title: str | None,
    columns: Sequence[tuple[str, str, str]],
    rows: list[dict],
    wrap: frozenset[str] = frozenset({"notes", "band"}),
    *,
    max_widths: dict[str, int] | None = None,
) -> RenderableType:
    """columns: (key, header, justify); a notes column nobody needs is left out. The title
    is a line of its own, so a narrow table does not squeeze it. The widths are
    :func:`annotate.render.tables.column_widths`' (the ``wrap`` columns narrow, never below
    their longest word); when the words do not fit, the rows are printed one after another
    (:func:`annotate.render.tables.vertical`). ``max_widths``: a column's text is wrapped
    at that width (or its longest word) before the widths are chosen."""
    columns = [
        c for c in columns if c[0] not in {"notes", "band"} or any(r.get(c[0]) for r in rows)
    ]
    limits = max_widths or {}
    texts = [
        [_wrapped(str(r.get(key, "")), limits.get(key)) for key, _, _ in columns] for r in rows
    ]
    width = console.width
    room = width - (PER_COLUMN * len(columns) - PAD_EDGES)
    widths = column_widths(
        [header for _, header, _ in columns], texts, [key in wrap for key, _, _ in columns], room
    )
    body: RenderableType
    if widths is None:
        cols = [Col(key, header, wrap=key in wrap) for key, header, _ in columns]
        flush = [{k: str(v).strip() for k, v in r.items()} for r in rows]  # no indent here
        body = vertical(flush, cols, width)
    else:
        body = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
        for (key, header, justify), w in zip(columns, widths, strict=True):
            body.add_column(header, justify=justify, width=w, no_wrap=key not in wrap)  # type: ignore[arg-type]
        for row in texts:
            body.add_row(*map(Text, row))
    if not title:
        return body
    return Group(Text(title, style="bold"), body)


def _wrapped(text: str, limit: int | None) -> str:
    """``text`` broken between words at ``limit`` (a longer word stays whole)."""
    if limit is None or len(text) <= limit:
        return text
    return "\n".join(
        part
        for line in text.splitlines()
        for part in textwrap.wrap(line, limit, break_long_words=False, break_on_hyphens=False)
    )


def render_table(results: dict[str, Any]) -> None:
    console.print(_scope(results), markup=False)
    for q in results["results"]:
        console.print()
        level = _level(results)
        if not q["n_items"]:
            console.print(_title(results, q) + ": no answers by these coders.", markup=False)
            continue
        console.print(
            _table(
                _title(results, q),
                [
                    ("statistic", "Statistic", "left"),
                    ("value", "Value", "right"),
                    ("ci", level, "left"),
                    ("notes", "Notes", "left"),
                ],
                summary_rows(q),
            )
        )
        if categories_line(q):
            console.print(categories_line(q), markup=False)
        if method_line(q):
            console.print(method_line(q), markup=False)
        cats = category_rows(q)
        if cats:
            console.print(
                _table(
                    "Per category (Fleiss' kappa, one category against the rest)",
                    [
                        ("category", "Category", "left"),
                        ("share", "Share", "right"),
                        ("kappa", "Kappa", "right"),
                        ("z", "z", "right"),
                        ("notes", "Notes", "left"),
                    ],
                    cats,
                )
            )
        codes = code_rows(q)
        if codes:
            what = "reason" if q["kind"] == "yes_no_reasons" else "code"
            console.print(
                _table(
                    codes_title(q),
                    [
                        ("code", what.capitalize(), "left"),
                        ("chosen", "Chosen", "right"),
                        ("kappa", "Kappa", "right"),
                        ("alpha", "Alpha", "right"),
                        ("notes", "Notes", "left"),
                    ],
                    codes,
                )
            )
        for key in ("pairwise", "pairwise_weighted"):
            pairs = pair_rows(q, key)
            if pairs:
                console.print(
                    _table(
                        "Pairwise Cohen's kappa" if key == "pairwise" else weighted_title(q),
                        [
                            ("pair", "Coders", "left"),
                            ("items", "Items", "right"),
                            ("kappa", "Kappa", "right"),
                            ("ci", level, "left"),
                            ("agree", "Agree", "right"),
                            ("band", "Band", "left"),
                        ],
                        pairs,
                    )
                )
        for line in _left_out_lines(q):
            console.print(line, markup=False)
        console.print(
            f"Coders differ on {_items(q['n_disagreements'])} (--disagreements lists them).",
            markup=False,
        )


# -- markdown -------------------------------------------------------------------------------------


def _method_words(settings: dict[str, Any]) -> str:
    """The bootstrap method of a run's settings (runs stored before BCa: percentile)."""
    if settings.get("ci_method", "percentile") == "bca":
        return "bias-corrected and accelerated (BCa; Efron, 1987) bootstrap"
    return "percentile bootstrap"


def _levels_words(qs: list[dict[str, Any]]) -> str:
    """The questions' levels in words: "nominal", or e.g. "ordinal (Q2) and nominal"."""
    levels: dict[str, list[str]] = {}
    for q in qs:
        levels.setdefault(q.get("level") or "nominal", []).append(q["question"])
    if list(levels) == ["nominal"]:
        return "nominal"
    words = [
        level if level == "nominal" else f"{level} ({', '.join(ids)})"
        for level, ids in levels.items()
    ]
    return " and ".join(words)


def _coverage(results: dict[str, Any]) -> str:
    """Per question, the items each statistic used, e.g. "For act, Fleiss' kappa used the 14
    items all 4 coders answered; alpha and AC1 the 32 items two or more coders answered."""
    n = len(results["coders"])
    parts = []
    for q in results["results"]:
        v = q.get("value")
        if v is not None:
            f, a, g = v["fleiss"]["n_items"], v["alpha"]["n_items"], v["ac1"]["n_items"]
            pair = (
                f"alpha and AC1 the {_items(a)}"
                if a == g
                else f"alpha the {_items(a)} and AC1 the {_items(g)}"
            )
            parts.append(
                f"For {q['question']}, Fleiss' kappa used the {_items(f)} all {n} coders "
                f"answered; {pair} two or more coders answered."
            )
        elif _sets(q) is not None:
            parts.append(
                f"For {q['question']}, MASI alpha used the "
                f"{_items(_sets(q)['alpha_masi']['n_items'])} two or more coders answered."
            )
        else:
            parts.append(f"For {q['question']}, no figure: no item was answered.")
    return " ".join(parts)


def cited_references(text: str) -> list[str]:
    """The references the text cites (author and year in one citation), in list order."""
    import re

    found = []
    for ref in REFERENCES:
        author = ref.split(",", 1)[0]
        year = re.search(r"\((\d{4})\)", ref)
        if year and re.search(rf"\b{re.escape(author)}\b[^.;]{{0,40}}?\b{year[1]}\b", text):
            found.append(ref)
    return found


def methods_sentence(results: dict[str, Any]) -> str:
    s = results["settings"]
    qs = results["results"]
    coders = results["coders"]
    # runs stored before Gwet's generalized kappa lack it: their sentence does not name it
    gwet = any((q["value"] or {}).get("fleiss_generalized") is not None for q in qs)
    generalized = (
        "Gwet's generalized Fleiss' kappa for missing ratings (Gwet, 2014); " if gwet else ""
    )
    gwet_se = (
        "The generalized kappa and AC1 have Gwet's (2014) linearization standard errors and "
        "Student t intervals on N - 1 degrees of freedom, N being the items rated. "
        if gwet
        else ""
    )
    others = (
        "the generalized kappa and the other figures use every item with two or more answers "
        "(the generalized kappa's category shares, every rated item)."
        if gwet
        else "the other figures use every item with two or more answers."
    )
    sentence = (
        f"Agreement among {len(coders)} coders ({', '.join(coders)}) on the "
        f"{results['codebook']} codebook"
        + (f" (sample '{results['sample']}')" if results["sample"] else " (every labelled item)")
        + " was measured with Fleiss' kappa (Fleiss, 1971), with a "
        f"{100 * s['ci']:g}% {_method_words(s)} confidence interval over items "
        f"({s['n_boot']:,} resamples, seed {s['seed']}) and a z-test using the asymptotic "
        "standard error under the null (Fleiss, Nee & Landis, 1979), given on at least 2k² "
        "items for k categories (Cicchetti & Fleiss, 1977); Krippendorff's alpha for "
        f"{_levels_words(qs)} data (Krippendorff, 2011); Gwet's AC1 (Gwet, 2008); percent "
        f"agreement; {generalized}per-category kappas (Fleiss, 1971); and Cohen's kappa for "
        "every pair of coders (Cohen, 1960) with asymptotic confidence intervals (Fleiss, "
        f"Cohen & Everitt, 1969) clipped to kappa's range [-1, 1]. {gwet_se}Kappa values are "
        "described with the bands of Landis and Koch (1977). Fleiss' kappa uses the items "
        f"every coder answered; {others}"
    )
    if any((q.get("level") or "nominal") != "nominal" for q in qs):
        sentence += (
            " For questions with ordered codes, Cohen's kappa was also weighted (Cohen, 1968): "
            "linear weights at the ordinal level, quadratic at the interval and ratio levels."
        )
    if any(q["kind"] != "single" for q in qs):
        sentence += (
            " Multi-code answers (sets) were compared with Krippendorff's alpha using the "
            "MASI distance (Passonneau, 2006) and, code by code, with binary (chosen or not) "
            "Fleiss' kappa and nominal alpha."
        )
    sentence += " " + _coverage(results)
    if results.get("verified"):
        sentence += " " + verified_sentence(results["verified"])
    for q in qs:
        if _sets(q) is None or not q["n_items"]:
            continue
        if q["kind"] == "yes_no_reasons":
            sentence += (
                f" The reasons of a 'no' to {q['question']} were compared among the coders who "
                f"answered 'no': the per-reason kappas {kappa_scope(q)}, MASI alpha and the "
                f"per-reason alphas {alpha_scope(q)}."
            )
        else:
            sentence += (
                f" For {q['question']}, the per-code kappas are {kappa_scope(q)}, MASI alpha "
                f"and the per-code alphas {alpha_scope(q)}."
            )
    return sentence


def _md(
    rows: list[dict[str, Any]], columns: list[tuple[str, str]], title: str | None = None
) -> str:
    """A Markdown table; a notes column nobody needs is left out."""
    keep = [(k, h) for k, h in columns if k not in {"notes", "band"} or any(r.get(k) for r in rows)]
    text = markdown_table(
        [{**r, "statistic": str(r.get("statistic", "")).strip()} for r in rows],
        [k for k, _ in keep],
        title=title,
    )
    header = "| " + " | ".join(k for k, _ in keep) + " |"
    return text.replace(header, "| " + " | ".join(h for _, h in keep) + " |", 1)


def render_markdown(results: dict[str, Any]) -> None:
    methods = methods_sentence(results)
    out = [f"## Inter-coder agreement: {results['codebook']}", "", methods, ""]
    level = _level(results)
    for q in results["results"]:
        out.append(
            _md(
                summary_rows(q),
                [("statistic", "Statistic"), ("value", "Value"), ("ci", level), ("notes", "Notes")],
                title=_title(results, q),
            )
        )
        if categories_line(q):
            out += [categories_line(q), ""]
        if method_line(q):
            out += [method_line(q), ""]
        cats = category_rows(q)
        if cats:
            columns = [("category", "Category"), ("share", "Share"), ("kappa", "Kappa"),
                       ("z", "z"), ("notes", "Notes")]  # fmt: skip
            out.append(_md(cats, columns))
        codes = code_rows(q)
        if codes:
            what = "Reason" if q["kind"] == "yes_no_reasons" else "Code"
            columns = [("code", what), ("chosen", "Chosen"), ("kappa", "Kappa"),
                       ("alpha", "Alpha"), ("notes", "Notes")]  # fmt: skip
            out.append(_md(codes, columns, title=codes_title(q)))
        columns = [("pair", "Coders"), ("items", "Items"), ("kappa", "Cohen's kappa"),
                   ("ci", level), ("agree", "Agreement"), ("band", "Band")]  # fmt: skip
        if pair_rows(q):
            out.append(_md(pair_rows(q), columns))
        if pair_rows(q, "pairwise_weighted"):
            out.append(_md(pair_rows(q, "pairwise_weighted"), columns, title=weighted_title(q)))
        out += _left_out_lines(q, bullet="  - ", head="- ")  # a list item per figure
        out.append("")
    out.append("### References")
    out.append("")
    out += [f"- {ref}" for ref in cited_references(methods)]
    out.append("")
    out.append(
        f"<!-- annotate agree run {results.get('run_id')}: {results['n_labels']} labels, "
        f"sha256 {results['labels_sha256']} -->"
    )
    console.print("\n".join(out), markup=False, highlight=False, soft_wrap=True)


# -- csv ---------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "question",
    "part",
    "statistic",
    "subject",
    "estimate",
    "ci_low",
    "ci_high",
    "se0",
    "ase",
    "z",
    "p_value",
    "n_items",
    "band",
    "note",
    "ci_method",
)


def _adder(rows: list[dict[str, Any]], question: str) -> Any:
    def add(part: str, statistic: str, subject: str = "", **values: Any) -> None:
        rows.append(
            {"question": question, "part": part, "statistic": statistic, "subject": subject}
            | values
        )

    return add


def _t_note(t: float | None, n_rated: int) -> str | None:
    """Gwet's test statistic, a t on N - 1 df (not the z of the ``z`` column)."""
    return None if t is None else f"t = {t:.4f} on {n_rated - 1} df"


def _csv_value(value: Any) -> Any:
    """Full precision in CSV: scripts read the numbers back."""
    return repr(value) if isinstance(value, float) else value


def csv_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every figure as one tidy row (for R or pandas)."""
    rows: list[dict[str, Any]] = []
    for q in results["results"]:
        add = _adder(rows, q["question"])
        for c in q.get("categories") or ():
            codes = ", ".join(c["codes"])
            add(c["part"], "n_categories", estimate=c["n"], note=_join(codes, c["note"]))
        v = q["value"]
        if v is not None:
            f, ci = v["fleiss"], v["fleiss_ci"]
            add("value", "fleiss_kappa", estimate=f["kappa"], ci_low=ci["low"],
                ci_high=ci["high"], se0=f["se0"], z=f["z"], p_value=f["p_value"],
                n_items=f["n_items"], band=f["band"],
                note=_with_ci(f["undefined_reason"], ci), ci_method=ci["method"])  # fmt: skip
            for c in f["per_category"]:
                add("value", "category_kappa", c["category"], estimate=c["kappa"],
                    se0=c["se0"], z=c["z"], p_value=c["p_value"], n_items=f["n_items"],
                    note=c["undefined_reason"])  # fmt: skip
            for a in (v["alpha"], v.get("alpha_nominal")):  # subject: the level
                if a:
                    add("value", "krippendorff_alpha", a["metric"], estimate=a["alpha"],
                        n_items=a["n_items"], note=a["undefined_reason"])  # fmt: skip
            fg = v.get("fleiss_generalized")  # runs stored before it lack it
            if fg is not None:  # Gwet's SE is the interval's: the ase column
                add("value", "fleiss_kappa_generalized", estimate=fg["kappa"],
                    ci_low=fg["ci"]["low"], ci_high=fg["ci"]["high"], ase=fg["se"],
                    p_value=fg["p_value"], n_items=fg["n_items"], band=fg["band"],
                    note=_join(_with_ci(fg["undefined_reason"], fg["ci"]),
                               f"{fg['n_items_pairable']} with two or more ratings; uses "
                               f"{fg['uses']}", _t_note(fg.get("t"), fg["n_items"])),
                    ci_method=fg["ci"]["method"])  # fmt: skip
            g = v["ac1"]
            ac1_ci = g.get("ci") or {}
            add("value", "gwet_ac1", estimate=g["ac1"], ci_low=ac1_ci.get("low"),
                ci_high=ac1_ci.get("high"), ase=g.get("se"), p_value=g.get("p_value"),
                n_items=g["n_items"],
                note=_join(_with_ci(g["undefined_reason"], ac1_ci) if ac1_ci
                           else g["undefined_reason"],
                           f"SE over {_items(g['n_items_rated'])} rated (t on "
                           f"{g['n_items_rated'] - 1} df)" if g.get("se") is not None
                           else None),
                ci_method=ac1_ci.get("method"))  # fmt: skip
            pa = v["percent_agreement"]
            add("value", "percent_agreement", estimate=pa["proportion"], n_items=pa["n_items"],
                note=pa["undefined_reason"])  # fmt: skip
            add("value", "unanimous", estimate=pa["unanimous"], n_items=pa["n_items"])
            for p in v["pairwise"]:
                # "se" is the ASE in runs stored before it was named "ase"
                add("value", "cohen_kappa", f"{p['coder_a']}|{p['coder_b']}",
                    estimate=p["kappa"], ci_low=p["ci"]["low"], ci_high=p["ci"]["high"],
                    se0=p["se0"], ase=p.get("ase", p.get("se")), z=p["z"],
                    p_value=p["p_value"], n_items=p["n_items"], band=p["band"],
                    note=_with_ci(p["undefined_reason"], p["ci"]),
                    ci_method=p["ci"]["method"])  # fmt: skip
            for p in v.get("pairwise_weighted") or ():
                add("value", "weighted_kappa", f"{p['coder_a']}|{p['coder_b']}",
                    estimate=p["kappa"], ci_low=p["ci"]["low"], ci_high=p["ci"]["high"],
                    se0=p["se0"], ase=p["ase"], z=p["z"], p_value=p["p_value"],
                    n_items=p["n_items"], band=p["band"],
                    note=_join(f"{p['weights']} weights",
                               _with_ci(p["undefined_reason"], p["ci"])),
                    ci_method=p["ci"]["method"])  # fmt: skip
        part = "reasons" if q["kind"] == "yes_no_reasons" else "codes"
        s = q.get(part)
        if s is not None:
            m = s["alpha_masi"]
            add(part, "masi_alpha", estimate=m["alpha"], n_items=m["n_items"],
                note=m["undefined_reason"] or alpha_scope(q))  # fmt: skip
            e = s["exact_agreement"]
            add(part, "same_set", estimate=e["proportion"], n_items=e["n_items"],
                note=e["undefined_reason"])  # fmt: skip
            for c in s["per_code"]:
                add(part, "code_kappa", c["code"], estimate=c["fleiss"]["kappa"],
                    se0=c["fleiss"]["se0"], z=c["fleiss"]["z"],
                    p_value=c["fleiss"]["p_value"], n_items=c["fleiss"]["n_items"],
                    band=c["fleiss"]["band"],
                    note=_join(c["fleiss"]["undefined_reason"],
                               kappa_scope(q) if c["fleiss"]["n_items"] else None))  # fmt: skip
                add(part, "code_alpha", c["code"], estimate=c["alpha"]["alpha"],
                    n_items=c["alpha"]["n_items"],
                    note=_join(c["alpha"]["undefined_reason"],
                               alpha_scope(q) if c["alpha"]["n_items"] else None))  # fmt: skip
        for x in q["left_out"]:
            add(x["part"], "left_out", x["item"], note=x["reason"])
        for x in q["not_coded"]:
            add("value" if q["value"] else part, "not_coded", x["item"], note=x["reason"])
    verified = results.get("verified")
    for c in (verified or {}).get("checks", ()):
        version = verified["versions"][c["library"]]
        _adder(rows, c["question"])(
            "verify", c["statistic"], f"{c['library']} {version}", estimate=c["reference"],
            note=None if c["difference"] is None else f"difference {c['difference']:.3g}",
        )  # fmt: skip
    return [{k: _csv_value(v) for k, v in r.items()} for r in rows]


# -- verification ------------------------------------------------------------------------------


def verified_sentence(verified: dict[str, Any]) -> str:
    """E.g. "Every kappa and alpha was verified against statsmodels 0.15.0 and krippendorff
    0.9.0, recomputed from the same matrix (largest difference 2.2e-16)."."""
    v = verified["versions"]
    libraries = f"statsmodels {v['statsmodels']} and krippendorff {v['krippendorff']}"
    if not verified["ok"]:
        return (
            f"Recomputed with {libraries} from the same matrix, the figures DIFFER (largest "
            f"difference {verified['max_difference']:.3g}): see the verification table."
        )
    return (
        f"Every kappa and alpha was verified against {libraries} (Fleiss' and Cohen's kappa; "
        f"alpha), recomputed from the same matrix (largest difference "
        f"{verified['max_difference']:.2g})."
    )


def verification_rows(verified: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "question": c["question"],
            "statistic": c["statistic"],
            "annotate": _num(c["annotate"], 6),
            "reference": _num(c["reference"], 6),
            "library": c["library"],
            "difference": "-" if c["difference"] is None else f"{c['difference']:.2g}",
        }
        for c in verified["checks"]
    ]


def render_verification(verified: dict[str, Any], fmt: OutputFormat) -> None:
    """The table after the figures (table and Markdown; JSON and CSV carry it inline)."""
    if fmt not in (OutputFormat.table, OutputFormat.markdown):
        if not verified["ok"]:
            err_console.print(verified_sentence(verified), markup=False, soft_wrap=True)
        return
    columns = [("question", "Question"), ("statistic", "Statistic"), ("annotate", "annotate"),
               ("reference", "Reference"), ("library", "Library"),
               ("difference", "Difference")]  # fmt: skip
    rows = verification_rows(verified)
    if fmt is OutputFormat.markdown:
        text = _md(rows, columns, title="Verification")
        console.print(text, markup=False, highlight=False, soft_wrap=True)
    else:
        title = "Verification (the same matrix, reference libraries)"
        spec = [(k, h, "left") for k, h in columns]
        console.print(_table(title, spec, rows, wrap=frozenset({"statistic"})))
    console.print(verified_sentence(verified), markup=False, soft_wrap=True)


# -- disagreements ----------------------------------------------------------------------------


def render_disagreements(found: DisagreementList, fmt: OutputFormat) -> None:
    """Every item where the coders differ: its text and each coder's label."""
    if fmt is OutputFormat.json:
        console.print(to_json(found.to_dict()), markup=False, highlight=False, soft_wrap=True)
        return
    coders = list(found.selection.coders)
    if fmt is OutputFormat.csv:
        rows = [
            {"question": q.id, **d.to_dict(), **{c: d.answers.get(c) for c in coders},
             "context": " | ".join(d.context), "notes": _remarks(d)}
            for q, ds in found.questions
            for d in ds
        ]  # fmt: skip
        columns = ["question", "item", "session", "seq", "context", "text", *coders, "notes"]
        console.print(csv_text(rows, columns), end="", markup=False, highlight=False,
                      soft_wrap=True)  # fmt: skip
        return
    sel = found.selection
    where = f"sample '{sel.sample}'" if sel.sample else "every labelled item"
    scope = f"Codebook {sel.codebook.name}, {where}, coders {', '.join(coders)}."
    console.print(scope, markup=False, soft_wrap=True)
    for q, ds in found.questions:
        console.print()
        title = (
            f"Coders differ on {q.id}: {_items(len(ds))}"
            if ds
            else (f"Coders differ on {q.id}: no item.")
        )
        if not ds:
            console.print(title, markup=False)
            continue
        markdown = fmt is OutputFormat.markdown
        rows = [
            {"n": k + 1, "item": d.item, "text": _in_context(d, markdown),
             **{c: d.answers.get(c) or "-" for c in coders}, "notes": _remarks(d)}
            for k, d in enumerate(ds)
        ]  # fmt: skip
        if markdown:
            columns = [("n", "#"), ("item", "Item"), ("text", "Text"), *((c, c) for c in coders),
                       ("notes", "Notes and flags")]  # fmt: skip
            console.print(_md(rows, columns, title=title), markup=False, highlight=False,
                          soft_wrap=True)  # fmt: skip
            continue
        for r in rows:
            r["item"] = short_id(r["item"])
        columns = [("n", "#", "right"), ("item", "Item", "left"), ("text", "Text", "left")]
        columns += [(c, c, "left") for c in coders]
        columns.append(("notes", "Notes", "left"))
        wrap = frozenset({"text", "notes", *coders})
        widths = {c: max(len(c), ANSWER_WIDTH) for c in coders}  # long answers wrap first
        console.print(_table(title, columns, rows, wrap, max_widths=widths))
    console.print(
        f"{SKIPPED}: the coder skipped the item; {NOT_CODED}: the coder has not answered it.",
        markup=False,
    )


def _in_context(d: Any, markdown: bool) -> str:
    """The item's text after the turns before it (each on a line; "> " marks the item),
    each cut for display as the screens cut it (laying out a 3 MB message in a table would
    take minutes; CSV and JSON keep every character)."""
    text = for_display(d.text) if d.text else d.text
    if not d.context:
        return text
    sep = " <br> " if markdown else "\n"
    return sep.join([*(f"  {for_display(c)}" for c in d.context), f"> {text}"])


def _remarks(d: Any) -> str:
    """The coders' notes and flags on the item, e.g. "ana: unclear; ben flagged"."""
    parts = [f"{c}: {note}" for c, note in d.notes.items()]
    parts += [f"{c} flagged" for c in d.flagged]
    return "; ".join(parts)


# -- what the command prints around the figures ----------------------------------------------


def print_defaults(defaults: Sequence[str], fmt: OutputFormat) -> None:
    """How the defaults were chosen, on stderr (table output only)."""
    if defaults and fmt is OutputFormat.table:
        err_console.print("defaults: " + "; ".join(defaults), markup=False, soft_wrap=True)


def render_results(results: dict[str, Any], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        console.print(to_json(results), markup=False, highlight=False, soft_wrap=True)
    elif fmt is OutputFormat.csv:
        console.print(csv_text(csv_rows(results), CSV_COLUMNS), end="", markup=False,
                      highlight=False, soft_wrap=True)  # fmt: skip
    elif fmt is OutputFormat.markdown:
        render_markdown(results)
    else:
        render_table(results)


def run_line(text: str, fmt: OutputFormat) -> None:
    """Where the run id goes: after the table; to stderr when stdout is data."""
    if fmt is OutputFormat.table:
        console.print(text, markup=False)
    elif fmt is not OutputFormat.markdown:
        err_console.print(text, markup=False, soft_wrap=True)


def print_runs(rows: list[dict[str, Any]], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        console.print(to_json(rows), markup=False, highlight=False, soft_wrap=True)
        return
    shown = [
        r
        | {
            "created_at": r["created_at"][5:16].replace("T", " "),
            "sample": r["sample"] or "-",
            "coders": ", ".join(r["coders"]),
            "questions": ", ".join(r["questions"]),
            "labels_hash": r["labels_hash"][:8],
        }
        for r in rows
    ]
    columns = [("id", "Run", "right"), ("created_at", "When", "left"),
               ("codebook", "Codebook", "left"), ("sample", "Sample", "left"),
               ("coders", "Coders", "left"), ("questions", "Questions", "left"),
               ("n_labels", "Labels", "right"), ("labels_hash", "sha256", "left")]  # fmt: skip
    if fmt is OutputFormat.table:
        texts = [
            {key: "-" if r[key] is None else str(r[key]) for key, _, _ in columns} for r in shown
        ]
        wrap = frozenset({"created_at", "codebook", "sample", "coders", "questions"})
        console.print(_table("Agreement runs (UTC)", columns, texts, wrap))
    elif fmt is OutputFormat.markdown:
        console.print(_md(shown, [(k, h) for k, h, _ in columns]), markup=False, soft_wrap=True)
    else:
        keys = [k for k, _, _ in columns]
        console.print(csv_text(rows, keys), end="", markup=False, soft_wrap=True)


TEXT_COLUMNS = [
    Col("question", "Question"),
    Col("measure", "Measure"),
    Col("mean", "Mean", justify="right"),
    Col("ci", "CI", justify="right"),
    Col("sd", "SD", justify="right", optional=True),
    Col("n_items", "Items", justify="right"),
    Col("n_pairs", "Pairs", justify="right"),
    Col("n_single", "1 answer", justify="right", optional=True),
    Col("note", "Note", wrap=True),
]
TEXT_CSV_COLUMNS = ["question", "measure", "mean", "ci_low", "ci_high", "sd", "n_items",
                    "n_pairs", "n_single", "note"]  # fmt: skip


NUMBER_COLUMNS = [
    Col("question", "Question"),
    Col("measure", "Measure"),
    Col("value", "Value", justify="right"),
    Col("ci", "CI", justify="right"),
    Col("n_items", "Items", justify="right"),
    Col("note", "Note", wrap=True),
]
NUMBER_CSV_COLUMNS = ["question", "measure", "value", "ci_low", "ci_high", "n_items", "note"]


def measured_dict(texts: Sequence[Any], numbers: Sequence[Any]) -> dict[str, Any]:
    """Free-text and number questions' figures, for JSON."""
    out: dict[str, Any] = {}
    if texts:
        out["text_similarity"] = [r.to_dict() for r in texts]
    if numbers:
        out["number_agreement"] = [r.to_dict() for r in numbers]
    return out


def render_measured(texts: Sequence[Any], numbers: Sequence[Any], fmt: OutputFormat) -> None:
    """Free-text questions (mean pairwise similarity, CI, n) and number questions (alpha,
    ICC)."""
    if fmt is OutputFormat.json:
        if texts or numbers:
            console.print(to_json(measured_dict(texts, numbers)), markup=False,
                          highlight=False, soft_wrap=True)  # fmt: skip
        return
    if texts:
        render_text_results(texts, fmt)
    if numbers:
        from annotate.render.rows import print_rows

        rows = [row for r in numbers for row in r.rows()]
        if fmt is OutputFormat.csv:
            console.print(csv_text(rows, NUMBER_CSV_COLUMNS), end="", markup=False,
                          highlight=False, soft_wrap=True)  # fmt: skip
            return
        shown = [
            r | {"value": _num(r["value"]), "ci": _ci({"low": r["ci_low"], "high": r["ci_high"]})}
            for r in rows
        ]
        print_rows(console, shown, NUMBER_COLUMNS, fmt, title="Number questions")


def render_text_results(results: Sequence[Any], fmt: OutputFormat) -> None:
    """Free-text questions: each measure's mean pairwise similarity, CI and n."""
    from annotate.render.rows import print_rows

    rows = [row for r in results for row in r.rows()]
    if fmt is OutputFormat.csv:
        console.print(csv_text(rows, TEXT_CSV_COLUMNS), end="", markup=False, highlight=False,
                      soft_wrap=True)  # fmt: skip
        return
    shown = [
        r | {"mean": _num(r.get("mean")), "sd": _num(r.get("sd")),
             "ci": _ci({"low": r.get("ci_low"), "high": r.get("ci_high")})
             if r.get("mean") is not None else "-"}
        for r in rows
    ]  # fmt: skip
    models = {r.model for r in results if r.model}
    title = "Free-text answers: mean pairwise similarity over items" + (
        f" (SBERT: {', '.join(sorted(models))})" if models else ""
    )
    print_rows(console, shown, TEXT_COLUMNS, fmt, title=title)
    embedded = sum(r.n_embedded for r in results)
    cached = sum(r.n_cached for r in results)
    if models:
        err_console.print(
            f"SBERT: {embedded} texts embedded now, {cached} from the project file's cache.",
            markup=False, soft_wrap=True,
        )  # fmt: skip
