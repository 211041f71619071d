"""`annotate report`: the tables and figures of a dataset paper, from the project file.

:func:`build_report` computes everything (tables and chart data; no drawing, no files);
:func:`write_report` draws the PNG charts (:mod:`annotate.analysis.charts`, matplotlib) and
writes one self-contained HTML page (:mod:`annotate.analysis.html`) plus a CSV per table.

Which labels count: for each action and question the first coder of the priority list who
answered it (default: ``gold``, then the corpus coding, then LLM coders that passed their
gate; see :mod:`annotate.analysis.coders`). The report says which coder supplied how many actions.
Mental-model answers are taken whole: for each action, every answer comes from the first
coder of the list who answered any of its questions, so Q1, Q2 and Q4 of one action are
never mixed from two coders.

With ``split`` and ``part`` (train or test), every table and chart is over that part's
sessions only: the dataset table, the code shares, the mental-model tables and the
agreement of the human coders. Stored agreement runs and LLM validation runs are shown as
they were run (over their own items), and the page says so.

Labels by participants (coders ``self:NAME``) count as any other source: with
``label_from="own-reports"`` (``--source own-reports``), or by default when a codebook's only
labels are participants' reports, each action's label is its own actor's report (the coder
``self:<the action's participant>``; see :mod:`annotate.analysis.coders`).

For every labelled codebook with *grounded* codes (declared in the codebook, else the
ALMANAC defaults Q1 t3, Q2 p1, Q3 r1, Q4 yes; :mod:`annotate.analysis.figure4`):

- Figure 4, left: within each code of the report's codebook (the grounding act, for
  ``traum``), per condition, the share of Q4 = yes with n and a 95% Wilson interval; the Q2
  answers within each code;
- Figure 4, right: the share of grounded answers of Q1, Q2 and Q3 over task progress
  (deciles of the position in the session), per condition;
- Table 8 (:mod:`annotate.analysis.table8`): each code's share per session, mean and SD
  per condition (and split part).

Agreement: for every labelled codebook and question, the human coders (all but ``gold`` and
``llm:*``) via :func:`agreement.agreement_report` (or :func:`agreement.multi_select_report`
for multi-select questions), plus stored agreement runs and LLM validation runs when the
tables for them exist.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from annotate.analysis.agreement_section import agreement_section
from annotate.analysis.alignment import alignment_sections
from annotate.analysis.coders import label_source
from annotate.analysis.distribution import distribution_section, flag_failed_coders
from annotate.analysis.figure4 import DECILES
from annotate.analysis.grouping import parse_by
from annotate.analysis.llm_section import llm_section
from annotate.analysis.mental_model import (
    has_self,
    mental_model_sections,
)
from annotate.analysis.report_model import Report, ReportFiles
from annotate.analysis.report_scope import Scope, data_section
from annotate.analysis.tgco_section import tgco_section
from annotate.errors import NotFoundError, UsageError
from annotate.reliability.settings import DEFAULT_N_BOOT
from annotate.render.cells import safe_cell
from annotate.store import Store

PARTS = ("all", "train", "test")


def build_report(
    store: Store,
    codebook: str,
    *,
    by: str | Sequence[str] = "condition",
    coders: Sequence[str] | None = None,
    split: str | None = None,
    part: str | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    label_from: str | None = None,
    bins: int = DECILES,
) -> Report:
    """Compute every table and chart of the report (nothing is drawn or written).

    ``label_from`` = ``own-reports``: every codebook with participants' reports counts each
    action's own report (see :func:`annotate.analysis.coders.label_source`); ``bins``: the
    progress bins of Figure 4 (deciles)."""
    started = time.perf_counter()
    if bins < 1:
        raise UsageError("--progress-bins must be 1 or more")
    by = parse_by(by)
    if part and part not in PARTS:
        raise UsageError(f"--part: unknown part '{part}'", hint="choices: all, train, test")
    if part and part != "all" and not split:
        raise UsageError("--part needs --split NAME")
    try:
        book = store.codebooks.stored_codebook(codebook)
    except NotFoundError as exc:
        stored = store.labels.labelled_codebooks()
        raise NotFoundError(
            exc.message,
            hint="codebooks with labels: " + ", ".join(stored)
            if stored
            else "import or code labels first",
        ) from exc
    own = label_from if has_self(store.labels.coders(codebook)) else None
    source = label_source(store, codebook, coders, source=own)
    parts = store.analysis.session_split_parts(split) if split else None
    actions = Scope(store, parts, part)
    if actions.empty:
        raise UsageError("no actions in this report", hint="check --split and --part")
    one_part = part in ("train", "test")
    if one_part:  # every table and chart: this part's sessions only
        source = source.restricted(actions.frame(source.labels["action_id"].unique())["action_id"])
    part_scope = f"the {part} part of split '{split}'" if one_part else ""
    sections = [
        data_section(store, split, actions, part),
        distribution_section(book, source, actions, by, split, part),
    ]
    tgco = tgco_section(store, book, source, actions, by)
    if tgco is not None:
        sections.append(tgco)
    sections += mental_model_sections(
        store, book, source, actions, coders, label_from=label_from, split=split, bins=bins
    )
    sessions = actions.sessions if one_part else None
    aligned = alignment_sections(
        store, book, source.priority, sessions, part_scope and f" in {part_scope}"
    )
    for section in aligned:  # the tables by the report's codes rest on its labels
        by_code = [i for i in section.items if i.key.endswith(f"_by_{book.name}")]
        flag_failed_coders(section, source, items=by_code)
    sections += aligned
    from annotate.analysis.probe_report import probe_section

    probes = probe_section(store, book)
    if probes is not None:
        sections.append(probes)
    sections.append(
        agreement_section(
            store, n_boot, set(actions.action_ids()) if one_part else None, scope=part_scope
        )
    )
    sections.append(llm_section(store, part_scope))
    scope = f"split '{split}'" + (f", {part} part" if part else "") if split else "all sessions"
    paragraphs = [
        f"Project file: {store.path}. Codebook: {book.name} {book.version_hash} "
        f"({book.title}). Scope: {scope}. Grouped by {', '.join(by)}.",
    ]
    report = Report(f"Report: {book.title}", paragraphs, sections)
    report.seconds = time.perf_counter() - started
    return report


def write_report(report: Report, out: Path) -> ReportFiles:
    """Draw the charts (PNG), write a CSV per table and the self-contained HTML page."""
    from annotate.analysis import charts, html  # lazy: matplotlib

    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    images: dict[str, bytes] = {}
    chart_paths = []
    for i, chart in enumerate(report.charts(), start=1):
        path = out / f"{i:02d}_{chart.key}.png"
        images[chart.key] = charts.render(chart, path)
        chart_paths.append(path)
    table_paths = []
    for table in report.tables():
        path = out / f"{table.key}.csv"
        frame = pd.DataFrame(table.rows, columns=table.columns, dtype=object)
        frame.map(safe_cell).to_csv(path, index=False)
        table_paths.append(path)
    page = out / "report.html"
    page.write_text(html.page(report, images), encoding="utf-8")
    return ReportFiles(page, tuple(chart_paths), tuple(table_paths), time.perf_counter() - started)
