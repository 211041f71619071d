"""`annotate import`, `annotate import-labels`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from annotate.commands.common import DEFAULT_DB_PATH, DbOption, console, err_console, open_store
from annotate.errors import UsageError
from annotate.io.importers import PARSERS, ImportOptions
from annotate.io.importers.base import FIELDS, parse_pairs


def import_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders to import.", metavar="PATH")
    ],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="Force a format: " + ", ".join(PARSERS) + " (default: detected per file).",
        ),
    ] = None,
    mapping: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="For jsonl/csv: which source column holds each field, e.g. "
            "'content=text,session=dialogue'; a dotted path reads nested JSON "
            "('content=message.text'), and meta.NAME=PATH keeps a value in meta under NAME "
            "('meta.verifier=feedback.error'). Fields: " + ", ".join(FIELDS) + ", meta.NAME.",
        ),
    ] = None,
    condition: Annotated[
        str | None, typer.Option(help="Condition for actions whose source does not name one.")
    ] = None,
    role: Annotated[
        list[str] | None,
        typer.Option(help="Set a participant's role, e.g. --role Jack=guide (repeatable)."),
    ] = None,
    labels_as: Annotated[
        str | None,
        typer.Option(
            help="Import the labels that come with the data (Map Task's third column, or a "
            "'label' column) as this coder's. Needs --codebook.",
        ),
    ] = None,
    codebook: Annotated[
        str | None, typer.Option(help="Codebook of the labels imported with --labels-as.")
    ] = None,
    question: Annotated[
        str | None, typer.Option(help="Question of --codebook the labels answer (if several).")
    ] = None,
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Import the valid lines; list those skipped.")
    ] = False,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Import action logs. Importing the same file again adds nothing.

    Formats: the collaboration platform's JSONL export (one file per participant; sessions
    are merged and ordered by time), HCRC Map Task `speaker|text|label` files, and generic
    JSONL or CSV. A malformed line stops the import of that file with FILE:LINE and stores
    nothing of it, unless --skip-invalid.
    """
    # here, not at the top: they load the codebook model, which `export` does without
    from annotate.codebook import find_codebook
    from annotate.io.importing import LabelsAs, import_files

    options = ImportOptions(
        mapping=parse_pairs(mapping or [], "--map", FIELDS, ("meta.",)),
        condition=condition,
        roles=parse_pairs(role or [], "--role"),
    )
    labels = None
    if labels_as:
        if not codebook:
            raise UsageError("--labels-as needs --codebook NAME")
        loaded = find_codebook(codebook)
        qid = question or loaded.codebook.questions[0].id
        loaded.codebook.question(qid)
        labels = LabelsAs(labels_as, loaded, qid)
    elif codebook:
        raise UsageError("--codebook goes with --labels-as CODER")
    with open_store(db, create=True) as store:
        results = import_files(
            store, paths, fmt=fmt, options=options, skip_invalid=skip_invalid, labels_as=labels
        )
        total = store.actions.count_actions()
    new = sum(r.new_actions for r in results)
    for r in results:
        for line in r.skipped:
            err_console.print(f"skipped {line}", markup=False, soft_wrap=True)
    extra = ""
    if labels and not any(r.labels for r in results):
        err_console.print("warning: --labels-as: these files carry no labels", markup=False)
    if labels:
        n_labels = sum(r.new_labels for r in results)
        extra = f", {n_labels} new labels by '{labels.coder}' ({labels.codebook.codebook.name})"
    console.print(
        f"{len(results)} file(s): {new} new actions of {sum(r.actions for r in results)}"
        f"{extra}. {db} now holds {total} actions.",
        markup=False,
    )


def import_labels_command(
    path: Annotated[Path, typer.Argument(help="CSV or JSONL file of labels.", metavar="FILE")],
    codebook: Annotated[str, typer.Option(help="Codebook the labels belong to.")],
    mapping: Annotated[
        Path | None,
        typer.Option(
            "--mapping",
            help="FILE is a log of participants' self-reports (JSON lines: action_id or "
            "session + seq, participant, question, answer, reasons, text); this YAML file "
            "maps each logged question to a codebook question and its answers to codes. "
            "Stored as coders self:PARTICIPANT.",
            metavar="YAML",
        ),
    ] = None,
    replace: Annotated[
        bool,
        typer.Option("--replace", help="Let rows replace coders' stored answers (not gold's)."),
    ] = False,
    replace_gold: Annotated[
        bool,
        typer.Option(
            "--replace-gold",
            help="Let rows replace adjudicated gold labels, and with them the record of who "
            "decided and how.",
        ),
    ] = False,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Import codings made elsewhere (a spreadsheet, another tool).

    Rows: action_id, coder, question, value [, other_text, codes, note]. `codes` is a
    ';'-separated set (the reasons of a 'no' on a yes/no question). Every value is checked
    against the codebook; an unknown action id or code stops the import naming the row, and
    nothing is stored. A row that would change a stored answer stops the import too (the
    error counts them and names the first), unless --replace; gold labels (coder 'gold')
    are changed only with --replace-gold. A new note on a stored answer replaces its note.

    With --mapping, FILE holds per-action self-reports (an agent probed after every
    action, say): each line is stored as the answer of coder self:PARTICIPANT (source
    self-report), after the action, the participant (one of its session's) and the mapped
    answer are checked. A wrong mapping or line stops the import naming the file, the line
    and the key; nothing is stored.
    """
    from annotate.codebook import find_codebook
    from annotate.io.label_import import import_labels
    from annotate.io.self_reports import import_self_reports

    loaded = find_codebook(codebook)
    with open_store(db) as store:
        if mapping is not None:
            if replace_gold:
                raise UsageError("--replace-gold: self-reports are never gold")
            result = import_self_reports(store, path, mapping, loaded, replace=replace)
        else:
            result = import_labels(store, path, loaded, replace=replace, replace_gold=replace_gold)
    console.print(
        f"{result.summary()}; coders: {', '.join(result.coders)} "
        f"({loaded.codebook.name} {loaded.codebook.version_hash}).",
        markup=False,
        soft_wrap=True,
    )


def import_probes_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Probe logs (JSON lines).", metavar="FILE...")
    ],
    mapping: Annotated[
        Path,
        typer.Option(
            "--mapping",
            help="YAML naming the codebook, the dotted path of each action field in a line "
            "(fields: session, turn, participant, action_type, content, ...) and of each "
            "probe answer (probes: PATH: QUESTION).",
            metavar="YAML",
        ),
    ],
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Import agent probe logs as they come (nested actions and probe answers).

    One JSON line per turn of an agent, its action and its probe answers nested
    (action.type, probes.task_state, ...), mapped by dotted paths. Each line becomes an
    action (id SESSION:TURN:AGENT; the turn kept as meta.turn) and the
    agent's own answers, stored as coder self:AGENT: free text, numbers (a confidence) or
    codes, checked against the codebook. A file is read whole first: a bad line stops the
    import naming the file, the line and the path, and nothing of that file is stored.
    Importing a file again adds nothing.
    """
    from annotate.io.probe_logs import import_probe_logs, read_mapping

    probes = read_mapping(mapping)
    with open_store(db, create=True) as store:
        results = import_probe_logs(store, paths, probes)
        total = store.actions.count_actions()
    cb = probes.codebook
    console.print(
        f"{len(results)} file(s): {sum(r.n_new_actions for r in results)} new actions of "
        f"{sum(r.n_actions for r in results)}, {sum(r.n_answers for r in results)} probe "
        f"answers ({sum(r.n_changed for r in results)} new or changed; {cb.name} "
        f"{cb.version_hash}). {db} now holds {total} actions.",
        markup=False,
        soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    app.command("import")(import_command)
    app.command("import-labels")(import_labels_command)
    app.command("import-probes")(import_probes_command)
