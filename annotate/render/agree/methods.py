"""The methods paragraph of the agreement report and the references it cites."""

from __future__ import annotations

from typing import Any

from annotate.render.agree.verification import verified_sentence
from annotate.render.agree.words import alpha_scope, items_text, kappa_scope, sets_of

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
                f"alpha and AC1 the {items_text(a)}"
                if a == g
                else f"alpha the {items_text(a)} and AC1 the {items_text(g)}"
            )
            parts.append(
                f"For {q['question']}, Fleiss' kappa used the {items_text(f)} all {n} coders "
                f"answered; {pair} two or more coders answered."
            )
        elif sets_of(q) is not None:
            parts.append(
                f"For {q['question']}, MASI alpha used the "
                f"{items_text(sets_of(q)['alpha_masi']['n_items'])} two or more coders answered."
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
        if sets_of(q) is None or not q["n_items"]:
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
