"""`annotate code`: the coding app, in the terminal or (with --web) in a browser."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from annotate.commands.common import DEFAULT_DB_PATH, DbOption, console


def code_command(
    codebook: Annotated[
        str, typer.Option(help="Codebook name (see `annotate codebooks list`) or YAML path.")
    ],
    coder: Annotated[
        str,
        typer.Option(
            help="Your coder name. A new name starts a new coder; the same name resumes at "
            "your first uncoded item. 'gold' and 'llm:...' are reserved, and a name that "
            "differs from an existing coder only in case is refused.",
        ),
    ],
    sample: Annotated[
        str | None,
        typer.Option(help="Sample to code (default: 'main'; see `annotate samples`)."),
    ] = None,
    context: Annotated[
        int, typer.Option(help="Preceding turns shown around the item (PgUp shows more).")
    ] = 8,
    lookahead: Annotated[int, typer.Option(help="Following turns shown after the item.")] = 0,
    web: Annotated[
        bool, typer.Option("--web", help="Serve the app to a browser on 127.0.0.1 instead.")
    ] = False,
    port: Annotated[int, typer.Option(help="Port for --web.")] = 8000,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Code a sample, one keypress per answer. Every answer is saved at once.

    Keys: the option keys shown next to each option answer the question; ←/→ back and
    next; Backspace undo; s skip; f flag; m note; g go to item; j next uncoded;
    ? definition and instructions; F1 all keys; q quit. (If the codebook uses one of these
    letters as an option key, that command moves to its alternative, shown in the app.)
    Coding is blind: other coders' labels are never shown. Two coders can code the same
    file at the same time.
    """
    from annotate.tui.app import make_app, serve_web, web_command  # keeps textual off start-up

    app = make_app(db, codebook, coder, sample, context=context, lookahead=lookahead)
    session = app.session
    if web:
        app.close_session()  # the checks passed; each browser gets its own session
        command = web_command(
            db, codebook, coder, session.sample, context=context, lookahead=lookahead
        )
        console.print(
            f"Serving the coding app for {coder} on http://127.0.0.1:{port} (Ctrl+C to stop).",
            markup=False,
        )
        serve_web(command, port=port, title=f"annotate: {session.codebook.name} · {coder}")
        return
    app.run()
    if os.environ.get("TEXTUAL_DRIVER"):
        return  # served by --web: stdout belongs to textual-serve's protocol
    counts = session.counts()
    console.print(
        f"{coder}: {counts.coded} of {counts.n} coded, {counts.skipped} skipped, "
        f"{counts.flagged} flagged in sample '{session.sample}' ({session.codebook.name}). "
        "Everything answered is saved.",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command("code")(code_command)
