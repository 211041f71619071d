"""`annotate code`: the coding app, in the terminal or (with --web) in a browser."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Annotated

import typer

from annotate.coders import default_coder
from annotate.commands.code_self import (
    CheckpointsOption,
    MediaPrefixOption,
    MediaRootOption,
    SelfOption,
    SessionOption,
    code_self,
)
from annotate.commands.common import DEFAULT_DB_PATH, DbOption, console, split_list
from annotate.errors import UsageError
from annotate.media import MediaLocator


def code_command(
    codebook: Annotated[
        str, typer.Option(help="Codebook name (see `annotate codebooks list`) or YAML path.")
    ],
    coder: Annotated[
        str | None,
        typer.Option(
            help="Your coder name (not with --self). The same name resumes at your first "
            "item neither coded nor skipped. A name the file has no labels from is refused "
            "with the list of its coders, unless you pass --new-coder (or the file has no "
            "coder yet; a corpus coding brought with `import --labels-as` does not count). 'gold' "
            "and 'llm:...' are reserved, and a name that differs from an existing coder "
            "only in case is refused. Default: $ANNOTATE_CODER, else your login name "
            "(the first line printed says which).",
        ),
    ] = None,
    sample: Annotated[
        str | None,
        typer.Option(help="Sample to code (default: 'main'; see `annotate samples`)."),
    ] = None,
    context: Annotated[
        int, typer.Option(help="Preceding turns shown around the item (PgUp shows more).")
    ] = 8,
    lookahead: Annotated[int, typer.Option(help="Following turns shown after the item.")] = 0,
    show: Annotated[
        str | None,
        typer.Option(
            help="Fields of each turn's meta shown beside it, comma-separated (e.g. "
            "'verifier,recipe_relevant'; dotted paths reach inside). Default: the "
            "codebook's context_fields. The LLM prompt (llm-label --show) shows the same.",
        ),
    ] = None,
    web: Annotated[
        bool, typer.Option("--web", help="Serve the app to a browser on 127.0.0.1 instead.")
    ] = False,
    port: Annotated[
        int, typer.Option(help="Port for --web (one already in use is refused at once).")
    ] = 8000,
    new_coder: Annotated[
        bool,
        typer.Option(
            "--new-coder",
            help="Start a new coder named --coder (needed once the file has coders, so "
            "that a typo does not start a stranger).",
        ),
    ] = False,
    self_: SelfOption = None,
    session: SessionOption = None,
    checkpoints: CheckpointsOption = None,
    media_root: MediaRootOption = None,
    media_prefix: MediaPrefixOption = None,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Code a sample, one keypress per answer. Every answer is saved at once.

    Keys: the option keys shown next to each option answer the question (↑/↓ and Enter
    choose the highlighted one; Space toggles a reason, Esc drops them); Tab/Shift+Tab
    next/previous question; ←/→ back and next item; Backspace undo; s skip; f flag;
    m note; g go to item; j next uncoded item; PgUp/PgDn earlier/later turns;
    ? definition and instructions; F1 all keys; q quit. (If the codebook uses one of these
    letters as an option key, that command moves to its alternative, shown in the app.)
    A multi-question item moves on once all its questions are answered.
    Coding is blind: other coders' labels are never shown. Two coders can code the same
    file at the same time.

    Self-annotation: --self NAME codes every action of participant NAME in time order (not
    a sample), as the coder self:NAME, with their closest checkpoint answer as an anchor
    (e.g. --codebook mental_model_self, which asks for the rationale first). Screenshots
    named by the log are found with --media-root/--media-prefix; v shows them (in --web
    they are shown beside the item).
    """
    media = MediaLocator.from_options(media_root, media_prefix, Path(db))
    if self_ is not None:
        if coder is not None or sample is not None:
            raise UsageError("--self codes your own actions: leave out --coder and --sample")
        code_self(
            db, codebook, self_, session=session, checkpoints=checkpoints, media=media,
            context=context, lookahead=lookahead, web=web, port=port,
        )  # fmt: skip
        return
    if session is not None or checkpoints is not None:
        raise UsageError("--session and --checkpoints go with --self")
    if coder is None:
        coder, origin = default_coder()
        console.print(
            f"Coding as {coder} ({origin}; --coder NAME to code as someone else).",
            markup=False,
        )
    # The collector would scan the session's 100k items (and Textual's import) again and
    # again while they are made, then at every full collection while coding: it is paused
    # while the app is built, and what was built is frozen (kept out of its scans).
    collecting = gc.isenabled()
    gc.disable()
    try:
        from annotate.tui.app import (  # keeps textual off start-up
            check_port,
            end_with_the_server,
            make_app,
            serve_web,
            web_command,
        )

        app = make_app(
            db,
            codebook,
            coder,
            sample,
            context=context,
            lookahead=lookahead,
            show=None if show is None else split_list(show),
            new_coder=new_coder,
            media=media,
        )
    finally:
        if collecting:
            gc.enable()
    gc.freeze()
    session = app.session
    if web:
        # the checks passed; each browser gets its own session, and nothing was coded here
        app.close_session(count_time=False)
        check_port(port)
        command = web_command(
            db,
            codebook,
            coder,
            session.sample,
            context=context,
            lookahead=lookahead,
            new_coder=new_coder,
            extra=[*media.options(), *(["--show", show] if show is not None else [])],
        )
        from annotate.tui.web_server import new_token, web_url

        token = new_token()
        console.print(
            f"Serving the coding app for {coder} on {web_url(port, token)} (Ctrl+C to stop).",
            markup=False,
        )
        serve_web(
            command, port=port, title=f"annotate: {session.codebook.name} · {coder}", token=token
        )
        return
    end_with_the_server()
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
