"""`annotate agree --format csv`: every figure as one tidy row (for R or pandas)."""

from __future__ import annotations

from typing import Any

from annotate.render.agree.words import alpha_scope, items_text, join_notes, kappa_scope, with_ci

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
            add(c["part"], "n_categories", estimate=c["n"], note=join_notes(codes, c["note"]))
        v = q["value"]
        if v is not None:
            f, ci = v["fleiss"], v["fleiss_ci"]
            add("value", "fleiss_kappa", estimate=f["kappa"], ci_low=ci["low"],
                ci_high=ci["high"], se0=f["se0"], z=f["z"], p_value=f["p_value"],
                n_items=f["n_items"], band=f["band"],
                note=with_ci(f["undefined_reason"], ci), ci_method=ci["method"])  # fmt: skip
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
                    note=join_notes(with_ci(fg["undefined_reason"], fg["ci"]),
                               f"{fg['n_items_pairable']} with two or more ratings; uses "
                               f"{fg['uses']}", _t_note(fg.get("t"), fg["n_items"])),
                    ci_method=fg["ci"]["method"])  # fmt: skip
            g = v["ac1"]
            ac1_ci = g.get("ci") or {}
            add("value", "gwet_ac1", estimate=g["ac1"], ci_low=ac1_ci.get("low"),
                ci_high=ac1_ci.get("high"), ase=g.get("se"), p_value=g.get("p_value"),
                n_items=g["n_items"],
                note=join_notes(with_ci(g["undefined_reason"], ac1_ci) if ac1_ci
                           else g["undefined_reason"],
                           f"SE over {items_text(g['n_items_rated'])} rated (t on "
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
                    note=with_ci(p["undefined_reason"], p["ci"]),
                    ci_method=p["ci"]["method"])  # fmt: skip
            for p in v.get("pairwise_weighted") or ():
                add("value", "weighted_kappa", f"{p['coder_a']}|{p['coder_b']}",
                    estimate=p["kappa"], ci_low=p["ci"]["low"], ci_high=p["ci"]["high"],
                    se0=p["se0"], ase=p["ase"], z=p["z"], p_value=p["p_value"],
                    n_items=p["n_items"], band=p["band"],
                    note=join_notes(f"{p['weights']} weights",
                               with_ci(p["undefined_reason"], p["ci"])),
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
                    note=join_notes(c["fleiss"]["undefined_reason"],
                               kappa_scope(q) if c["fleiss"]["n_items"] else None))  # fmt: skip
                add(part, "code_alpha", c["code"], estimate=c["alpha"]["alpha"],
                    n_items=c["alpha"]["n_items"],
                    note=join_notes(c["alpha"]["undefined_reason"],
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
