"""The options of `annotate llm-label`: declared once, checked together, and written back
as the `llm-label --batch` command that continues a batch cycle."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from annotate.commands.common import DEFAULT_DB_PATH
from annotate.errors import UsageError
from llm_coder.job import JobOptions

DEFAULTS = JobOptions(model="", split="")
"""Each option's default, declared once (in :class:`~llm_coder.job.JobOptions`): the command's
signature and the batch command it writes back both read it."""

CodebookOption = Annotated[str, typer.Option(help="Codebook name or YAML file.")]
LabelCodebookOption = Annotated[
    str | None,
    typer.Option(help="Codebook name or YAML file (default: the one codebook with gold)."),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        help="Model name at the endpoint; the LLM codes as 'llm:MODEL' (default: "
        "$ANNOTATE_MODEL, else the only model the endpoint lists at /models)."
    ),
]
ShotsOption = Annotated[
    int | None,
    typer.Option(
        help="Use the split's first N shots (default: all of them); with no split yet, "
        "the shots of the split made with `annotate split`'s defaults (8)."
    ),
]
SplitOption = Annotated[
    str | None,
    typer.Option(
        help="Split made by `annotate split` (default: the codebook's, made with "
        "`annotate split`'s defaults and stored if there is none yet)."
    ),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 "
        "(default: OPENAI_BASE_URL). The key is read from OPENAI_API_KEY.",
    ),
]
TargetOption = Annotated[
    str, typer.Option(help="What to label after validation: a sample name, or 'all'.")
]
MinKappaOption = Annotated[
    float, typer.Option(help="Label the rest only if Fleiss' kappa vs gold reaches this.")
]
ValidateOnlyOption = Annotated[
    bool, typer.Option("--validate-only", help="Stop after the validation report.")
]
ForceOption = Annotated[
    bool, typer.Option("--force", help="Label the rest even below --min-kappa (recorded).")
]
DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Show one item's exact messages and an estimate; no network."),
]
ContextOption = Annotated[
    int,
    typer.Option(help="Preceding actions shown with each item (as `annotate code --context`)."),
]
LookaheadOption = Annotated[
    int,
    typer.Option(help="Following actions shown after each item (as `annotate code --lookahead`)."),
]
ShowOption = Annotated[
    str | None,
    typer.Option(
        help="Fields of each action's meta shown beside it, comma-separated (as `annotate "
        "code --show`; default: the codebook's context_fields)."
    ),
]
TemperatureOption = Annotated[float, typer.Option(help="Sampling temperature.")]
VotesOption = Annotated[
    int, typer.Option(help="Ask K times; the majority wins, its share is the confidence.")
]
UncertainSampleOption = Annotated[
    str | None,
    typer.Option(help="Put labelled items with confidence below --below in this new sample."),
]
BelowOption = Annotated[float, typer.Option(help="Confidence threshold for --uncertain-sample.")]
ResponseFormatOption = Annotated[
    str | None,
    typer.Option(
        "--response-format",
        metavar="MODE",
        help="Force one of json_schema, json_object_schema, json_object, none (default: "
        "the mode this endpoint and model last answered in, else json_schema, stepping "
        "down when the endpoint refuses one).",
    ),
]
ConcurrencyOption = Annotated[
    int | None,
    typer.Option(
        help="Requests in flight at once (default: the server's parallel slots where it says, "
        "as llama.cpp's /props does; else 8, halved while the server answers one request at a "
        "time or a request times out, as llama-cpp-python's does).",
        show_default=False,
    ),
]
TimeoutOption = Annotated[float, typer.Option(help="Seconds before one request is retried.")]
MaxRetriesOption = Annotated[
    int, typer.Option(help="Retries per request on 429, 5xx, timeouts (with backoff).")
]
PriceInOption = Annotated[float, typer.Option(help="US$ per million prompt tokens.")]
PriceOutOption = Annotated[float, typer.Option(help="US$ per million completion tokens.")]
ByOption = Annotated[
    str | None,
    typer.Option(
        help="Also give the validation per group of these columns, comma-separated (role, "
        "condition, action_type): accuracy and Fleiss' kappa per cell with its n, no "
        "figure below 10 items (e.g. --validate-only --by role,condition)."
    ),
]
BatchOption = Annotated[
    bool,
    typer.Option(
        "--batch",
        help="Hand the requests to the endpoint's Batch API (/v1/files, /v1/batches) and "
        "return at once; run the same command again to poll and collect. The held-out "
        "items go first, in their own batch; the rest after the gate.",
    ),
]
BatchCancelOption = Annotated[
    bool, typer.Option("--batch-cancel", help="Cancel this run's open batches.")
]
BatchExportOption = Annotated[
    Path | None,
    typer.Option(
        "--batch-export",
        metavar="FILE",
        help="Write the requests as a batch file (OpenAI's JSONL, which vLLM's run_batch "
        "reads) without sending anything; store the results with `annotate llm-import`.",
    ),
]
BatchDiscountOption = Annotated[
    float,
    typer.Option(help="Share of --price-in/--price-out a batch costs (dry run, summaries)."),
]
BatchMaxRequestsOption = Annotated[
    int, typer.Option(help="Requests per batch file; more are split into several batches.")
]
BatchMaxMbOption = Annotated[
    float, typer.Option(help="Megabytes per batch file; larger ones are split.")
]

OFFLINE_URL = "http://offline"
"""The endpoint of --batch-export without --base-url/OPENAI_BASE_URL: requests are
identified with the host ``offline`` (results come from a file, not an endpoint)."""


def check_options(
    *, batch: bool, batch_export: Path | None, batch_cancel: bool, batch_discount: float,
    uncertain_sample: str | None, votes: int, context: int, below: float,
) -> None:  # fmt: skip
    """Refuse options that contradict each other or lie outside their range."""
    if batch and batch_export is not None:
        raise UsageError("--batch and --batch-export are two ways to do one thing: choose one")
    if batch_cancel and not (batch or batch_export is not None):
        raise UsageError("--batch-cancel goes with --batch (or --batch-export FILE)")
    if not 0 < batch_discount <= 1:
        raise UsageError("--batch-discount must be a share between 0 and 1")
    if uncertain_sample and votes < 2:
        raise UsageError(
            "--uncertain-sample needs --votes 2 or more (confidence is the vote share)"
        )
    if context < 0:
        raise UsageError("--context must be 0 or more")
    if not 0 < below <= 1:
        raise UsageError("--below must be a share between 0 and 1")


def by_columns(by: str | None) -> tuple[str, ...]:
    """``--by role,condition`` as columns, refused at once when one is unknown."""
    from annotate.store.analysis import Analysis

    columns = tuple(c.strip() for c in (by or "").split(",") if c.strip())
    unknown = [c for c in columns if c not in Analysis.GROUP_COLUMNS]
    if unknown:
        raise UsageError(
            f"--by: unknown column '{unknown[0]}'",
            hint="choices: " + ", ".join(Analysis.GROUP_COLUMNS),
        )
    return columns


def batch_command(
    options: JobOptions, *, codebook: str, split: str | None, base_url: str | None, db: Path,
    export: Path | None,
) -> str:  # fmt: skip
    """The `llm-label --batch` command that continues this cycle (status shows it): the
    options that make the run what it is, each where it differs from its default."""
    parts = ["annotate llm-label", f"--codebook {codebook}", f"--model {options.model}"]
    for flag, value, default in (
        ("--split", split, None),
        ("--shots", options.shots, DEFAULTS.shots),
        ("--target", options.target, DEFAULTS.target),
        ("--context", options.context, DEFAULTS.context),
        ("--temperature", options.temperature, DEFAULTS.temperature),
        ("--votes", options.votes, DEFAULTS.votes),
        ("--base-url", base_url, None),
        ("--response-format", options.response_format, DEFAULTS.response_format),
        ("--min-kappa", options.min_kappa, DEFAULTS.min_kappa),
    ):
        if value != default:
            parts.append(f"{flag} {value}")
    flags = (("--force", options.force), ("--validate-only", options.validate_only))
    parts += [flag for flag, on in flags if on]
    parts.append(f"--batch-export {export}" if export is not None else "--batch")
    if str(db) != str(DEFAULT_DB_PATH):
        parts.append(f"--db {db}")
    return " ".join(parts)


def dry_config(model: str, base_url: str, timeout: float):
    """Endpoint settings without a key: only used to look requests up in the cache."""
    from llm_coder.client import LLMConfig

    return LLMConfig(model=model, base_url=base_url.rstrip("/"), api_key="", timeout_s=timeout)
