"""`annotate agree --disagreements`: every item where the coders differ, with its text and
each coder's answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from annotate.reliability.disagreements import NOT_CODED, SKIPPED
from annotate.render.agree.layout import md_table, rich_table
from annotate.render.agree.words import items_text, short_id
from annotate.render.console import console
from annotate.render.rows import OutputFormat, csv_text, to_json
from annotate.render.terminal import for_display

if TYPE_CHECKING:
    from annotate.reliability.disagreements import DisagreementList

ANSWER_WIDTH = 12  # the disagreement list wraps a longer answer (Other's text)


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
            f"Coders differ on {q.id}: {items_text(len(ds))}"
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
            console.print(md_table(rows, columns, title=title), markup=False, highlight=False,
                          soft_wrap=True)  # fmt: skip
            continue
        for r in rows:
            r["item"] = short_id(r["item"])
        columns = [("n", "#", "right"), ("item", "Item", "left"), ("text", "Text", "left")]
        columns += [(c, c, "left") for c in coders]
        columns.append(("notes", "Notes", "left"))
        wrap = frozenset({"text", "notes", *coders})
        widths = {c: max(len(c), ANSWER_WIDTH) for c in coders}  # long answers wrap first
        console.print(rich_table(title, columns, rows, wrap, max_widths=widths))
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
