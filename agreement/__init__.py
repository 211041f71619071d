"""Inter-coder agreement statistics over label matrices: pure functions, no I/O.

Build a matrix from long-form ratings (:func:`from_long`) or an items x coders table
(:func:`from_wide`) -- or pass either straight to any statistic -- then call
:func:`agreement_report` for every figure of a question, or a single statistic:
:func:`fleiss_kappa`, :func:`cohen_kappa`, :func:`pairwise_cohen`,
:func:`fleiss_kappa_generalized` (Gwet 2014, missing ratings),
:func:`krippendorff_alpha` (nominal, ordinal, interval, ratio), :func:`icc` (numeric
ratings: two-way, absolute agreement), :func:`gwet_ac1`,
:func:`percent_agreement`, :func:`bootstrap_fleiss_ci` (BCa or percentile). Weighted
Cohen's kappa: ``cohen_kappa(..., weights="linear")``. Multi-select answers: :func:`sets_from_long`,
:func:`masi_alpha`, :func:`per_code_kappas`, :func:`multi_select_report`. A coder against a
reference: :func:`compare_to_reference`.

Results are frozen dataclasses; a figure that cannot be computed is None (never NaN) and
the result's ``undefined_reason`` says why. ``to_dict()`` gives JSON-ready dicts. Labels
are compared in Unicode NFC; a blank label is a ValueError.
"""

from agreement.bands import LANDIS_KOCH_BANDS, landis_koch
from agreement.bootstrap import bootstrap_cohen_ci, bootstrap_fleiss_ci
from agreement.classification import (
    ClassificationScores,
    LabelScores,
    ReferenceComparison,
    classification_scores,
    compare_to_reference,
)
from agreement.cohen import (
    CohenKappa,
    agreement_weights,
    cohen_kappa,
    cohen_kappa_table,
    pairwise_cohen,
)
from agreement.fleiss import (
    CategoryKappa,
    FleissKappa,
    fleiss_kappa,
    fleiss_kappa_counts,
    min_items_for_z,
)
from agreement.generalized import FleissGeneralized, fleiss_kappa_generalized
from agreement.gwet import GwetAC1, gwet_ac1
from agreement.icc import ICC, icc
from agreement.krippendorff_alpha import (
    LEVELS,
    KrippendorffAlpha,
    coincidence_matrix,
    krippendorff_alpha,
)
from agreement.masi import CodeAgreement, masi_alpha, masi_distance, per_code_kappas
from agreement.matrix import (
    MISSING,
    LabelMatrix,
    SetLabelMatrix,
    as_label_matrix,
    as_set_matrix,
    confusion_matrix,
    count_table,
    from_long,
    from_wide,
    sets_from_long,
    sets_from_wide,
)
from agreement.percent import PercentAgreement, percent_agreement
from agreement.report import (
    AgreementReport,
    LeftOutItem,
    MultiSelectReport,
    agreement_report,
    multi_select_report,
)
from agreement.results import ConfusionMatrix, Interval

__all__ = [
    "ICC",
    "LANDIS_KOCH_BANDS",
    "LEVELS",
    "MISSING",
    "AgreementReport",
    "CategoryKappa",
    "ClassificationScores",
    "CodeAgreement",
    "CohenKappa",
    "ConfusionMatrix",
    "FleissGeneralized",
    "FleissKappa",
    "GwetAC1",
    "Interval",
    "KrippendorffAlpha",
    "LabelMatrix",
    "LabelScores",
    "LeftOutItem",
    "MultiSelectReport",
    "PercentAgreement",
    "ReferenceComparison",
    "SetLabelMatrix",
    "agreement_report",
    "agreement_weights",
    "as_label_matrix",
    "as_set_matrix",
    "bootstrap_cohen_ci",
    "bootstrap_fleiss_ci",
    "classification_scores",
    "cohen_kappa",
    "cohen_kappa_table",
    "coincidence_matrix",
    "compare_to_reference",
    "confusion_matrix",
    "count_table",
    "fleiss_kappa",
    "fleiss_kappa_counts",
    "fleiss_kappa_generalized",
    "from_long",
    "from_wide",
    "gwet_ac1",
    "icc",
    "krippendorff_alpha",
    "landis_koch",
    "masi_alpha",
    "masi_distance",
    "min_items_for_z",
    "multi_select_report",
    "pairwise_cohen",
    "per_code_kappas",
    "percent_agreement",
    "sets_from_long",
    "sets_from_wide",
]
