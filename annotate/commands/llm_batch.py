"""`llm-label --batch`, `--batch-export FILE`, `--batch-cancel` and `annotate llm-import`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from annotate.commands.common import DEFAULT_DB_PATH, DbOption, console, open_store
from annotate.errors import UsageError
from annotate.llm_store import llm_store
from annotate.render.llm import ConsoleReporter
from llm_coder.batch import BatchLimits
from llm_coder.batch_cycle import UNLIMITED, BatchCycle, Collected
from llm_coder.batch_import import Importer, ImportResult, batch_price
from llm_coder.cost import format_cost
from llm_coder.workflow import label_batch

if TYPE_CHECKING:
    from llm_coder.job import LabelJob


def _print(text: str) -> None:
    console.print(text, markup=False, soft_wrap=True, highlight=False)


def vllm_command(batch: dict[str, Any], model: str) -> str:
    """How to run an exported file with vLLM's offline runner and store its results."""
    path = Path(batch["path"])
    results = path.with_name(f"{path.stem}.results{path.suffix}")
    return (
        f"python -m vllm.entrypoints.openai.run_batch -i {path} -o {results} --model {model}"
        f" && annotate llm-import {results}"
    )


def _money(run: dict[str, Any], tokens_in: int, tokens_out: int) -> str:
    price = batch_price(run["settings"] or {})
    if not price.known:
        return ""
    return f", {format_cost(price.cost(tokens_in, tokens_out))} at the batch rate"


def _batch_name(batch: dict[str, Any]) -> str:
    where = batch["provider_id"] or batch["path"]
    return f"batch {batch['id']} ({batch['phase']}, part {batch['part']}, {where})"


class BatchCommand(ConsoleReporter):
    """One invocation of the batch cycle: bring open batches forward, then the next step of
    the workflow (:func:`llm_coder.workflow.label_batch`), shown as it goes."""

    def __init__(
        self,
        job: LabelJob,
        *,
        export: Path | None,
        cancel: bool,
        max_requests: int,
        max_bytes: int,
        command: str,
    ):
        if max_requests < 1 or max_bytes < 1:
            raise UsageError("--batch-max-requests and --batch-max-mb must be positive")
        super().__init__(job.options.price)
        self.job = job
        self.export = export
        self.cancel = cancel
        self.command = command
        kind = "file" if export is not None else "api"
        api = None
        if kind == "api":
            from llm_coder.batch_api import BatchAPI

            assert job.config is not None
            api = BatchAPI(job.config)
        limits = BatchLimits(max_requests, max_bytes) if kind == "api" else UNLIMITED
        self.cycle = BatchCycle(
            job, kind=kind, api=api, export_path=export, limits=limits, command=command,
            log=_print,
        )  # fmt: skip

    def run(self) -> None:
        job, cycle = self.job, self.cycle
        _print(
            f"run {cycle.run_id} (batch): {job.coder} at {job.endpoint_host}, split "
            f"'{job.split.name}' ({len(job.shot_ids)} shots), prompt "
            f"{job.builder.prompt_hash[:12]}, response_format {job.fallback.mode}"
        )
        if self.cancel:
            cancelled = cycle.cancel()
            for b in cancelled:
                _print(f"{_batch_name(b)}: {b['status']}")
            if not cancelled:
                _print("no open batch to cancel.")
            else:
                _print(
                    "Their items stay open: what the provider finished is collected by "
                    f"the next `{self.command}`."
                )
            return
        label_batch(cycle, self)

    def note(self, text: str) -> None:
        _print(text)

    # -- output -------------------------------------------------------------------------

    def collected(self, run: dict[str, Any], c: Collected) -> None:
        b, r = c.batch, c.imported
        parts = [f"{r.stored} replies stored"]
        if r.already:
            parts.append(f"{r.already} already stored")
        if r.errors:
            parts.append(f"{r.errors} errors")
        if c.missing:
            parts.append(f"{c.missing} without a result")
        _print(
            f"{_batch_name(b)}: {b['status']}, {b['n_requests']} requests: {', '.join(parts)}; "
            f"{b['tokens_in']:,} tokens in, {b['tokens_out']:,} out"
            + _money(run, b["tokens_in"], b["tokens_out"])
        )
        if b["message"]:
            _print(f"  the provider says: {b['message']}")
        for example in r.error_examples:
            _print(f"  error: {example}")
        if r.errors or c.missing:
            _print(f"  {r.errors + c.missing} items stay open: they go into the next batch.")

    def waiting(self, batches: list[dict[str, Any]]) -> None:
        for b in batches:
            counts = b.get("counts")
            done = (
                f", {counts.completed} of {counts.total} done, {counts.failed} failed"
                if counts
                else ""
            )
            _print(f"{_batch_name(b)}: {b['status']}{done}")
        if any(b["kind"] == "file" for b in batches):
            for b in batches:
                _print(f"Waiting for the results of {b['path']}. Run it, then store them:")
                _print(f"  {vllm_command(b, self.job.options.model)}")
            _print(f"then run again: {self.command}")
        else:
            _print(f"Run the same command again to collect: {self.command}")

    def submitted(self, phase: str, batches: list[dict[str, Any]]) -> None:
        n = len(batches)
        for b in batches:
            size = b["n_bytes"] / 1024 / 1024
            verb = "wrote" if b["kind"] == "file" else "submitted"
            _print(
                f"{verb} {_batch_name(b)}: {b['n_requests']} requests, {size:.1f} MB"
                + (f" (part {b['part']} of {n})" if n > 1 else "")
                + (f", status {b['status']}" if b["kind"] == "api" else "")
            )
        what = "held-out items (validation comes first)" if phase == "validate" else "rest"
        _print(f"{phase}: the {what} handed over; nothing is waited for.")
        if batches and batches[0]["kind"] == "file":
            _print("Next: run the file(s), store the results, then run this command again:")
            for b in batches:
                _print(f"  {vllm_command(b, self.job.options.model)}")
            _print(f"  {self.command}")
        else:
            _print(f"Next (the provider has up to 24 h): {self.command}")

    def done(self) -> None:
        run = self.cycle.run
        store = self.job.store
        items, valid = store.llm_item_counts(self.cycle.run_id)
        money = f", cost {format_cost(run['cost'] or 0.0)}" if run["cost"] else ""
        batches = store.llm_batches(self.cycle.run_id)
        _print(
            f"Done: run {run['id']} (done), {self.job.coder} labelled {valid} items, "
            f"{items - valid} invalid, through {len(batches)} batches; "
            f"{run['sent']} replies from batches; {run['tokens_in']:,} tokens in, "
            f"{run['tokens_out']:,} out{money}."
        )


# -- llm-import -------------------------------------------------------------------------


def llm_import_command(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Results files (JSONL): vLLM run_batch output, or a provider's output or "
            "error file."
        ),
    ],
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Store batch results made from `llm-label --batch-export` requests.

    Each line is matched to its request by custom_id and stored as an online reply would
    be (request cache, item result, llm:MODEL label, provenance). Replies that are not JSON
    or use codes outside the codebook are stored as invalid with their raw text; lines with
    an error leave their items open for the next export. Importing a file again adds
    nothing.
    """
    for path in files:
        if not path.is_file():
            raise UsageError(f"{path}: no such file")
    with open_store(db) as store:
        for path in files:
            importer = Importer(llm_store(store))
            with open(path, encoding="utf-8") as f:
                importer.add(f)
            result = importer.finish()
            _print(_import_line(path, result))
            for example in result.error_examples:
                _print(f"  error: {example}")
            commands = {
                b["command"]
                for b in (store.llm_batches.llm_batch(i) for i in sorted(result.batches))
                if b["command"]
            }
            for command in sorted(commands):
                _print(f"Next: {command}")
        if result.unknown and not result.batches:
            raise UsageError(
                f"{path}: no line matches a request of this project file",
                hint="import into the project file the requests were exported from (--db)",
            )


def _import_line(path: Path, r: ImportResult) -> str:
    parts = [f"{r.stored} replies stored"]
    for n, what in (
        (r.already, "already stored"),
        (r.errors, "errors (items stay open)"),
        (r.unknown, "not from this project file"),
        (r.bad, "not batch results"),
    ):
        if n:
            parts.append(f"{n} {what}")
    money = f", {format_cost(r.cost)} at the batch rate" if r.cost else ""
    return (
        f"{path}: {r.lines} lines: {', '.join(parts)}; {r.items} items coded "
        f"({r.valid} valid, {r.invalid} invalid); {r.tokens_in:,} tokens in, "
        f"{r.tokens_out:,} out{money}."
    )


def register(app: typer.Typer) -> None:
    app.command("llm-import")(llm_import_command)
