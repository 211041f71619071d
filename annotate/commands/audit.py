"""`annotate audit`."""

from __future__ import annotations

from typing import Annotated

import typer

from annotate.commands.common import (
    DEFAULT_DB_PATH,
    DbOption,
    FormatOption,
    console,
    open_store,
)
from annotate.io.importers.base import parse_pairs
from annotate.render.rows import OutputFormat, print_rows


def audit_command(
    rules: Annotated[str, typer.Option("--rules", help="The rule set to run: tgco.")],
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            help="A parameter of the rule set, NAME=VALUE (repeatable): w (window in "
            "timesteps, default 5) and the field paths timestep, object, request_object, "
            "request_action, request_target, verifier, recipe_relevant.",
        ),
    ] = None,
    codebook: Annotated[
        str | None,
        typer.Option(help="The codebook the answers are stored under (default: tgco)."),
    ] = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Code every message with a rule set and store the answers as coder rule:NAME.

    TGCO (the seed paper's Algorithm 3): for each message, parse its request unit (object,
    action, target: the event's structured `request` field, else the message's words), then
    in this order: none -> Unstructured; target not another agent of the episode, or not
    recipe-relevant -> Ineffective; already done and accepted before the message ->
    Redundant; no accepted matching action by the target within w timesteps -> Ineffective;
    a verifier correction of the target before the match -> Assisted; else Effective. The
    rule's version and parameters are stored with every label; `agree --coders rule:tgco,NAME`
    compares it with any coder.
    """
    from annotate.codebook import find_codebook
    from annotate.rules.audit import run_audit
    from annotate.rules.tgco import Params

    loaded = find_codebook(codebook) if codebook else None
    with open_store(db) as store:
        result = run_audit(store, rules, parse_pairs(param or [], "--param"), loaded)
    rows = [
        {"outcome": outcome, "messages": result.counts.get(outcome, 0)}
        for outcome in _outcomes(result.counts)
    ]
    print_rows(
        console,
        rows,
        ["outcome", "messages"],
        fmt,
        title=f"{result.coder} on {result.episodes} episodes ({result.events} events)",
    )
    if fmt in (OutputFormat.csv, OutputFormat.json):
        return
    defaults = Params().to_dict()
    params = ", ".join(
        f"{k}={v}" for k, v in result.params.items() if k == "w" or v != defaults[k]
    )
    console.print(
        f"stored {result.labelled} labels as {result.coder} ({result.codebook} "
        f"{result.codebook_hash}; {result.changed} new or changed), rule {result.rule} "
        f"{result.version}: {params}.",
        markup=False,
        soft_wrap=True,
    )


def _outcomes(counts: dict[str, int]) -> list[str]:
    from annotate.rules import tgco

    return list(tgco.OUTCOMES) + sorted(set(counts) - set(tgco.OUTCOMES))


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
