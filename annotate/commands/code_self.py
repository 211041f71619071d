"""`annotate code --self NAME`: a participant annotates their own actions (and the options
that say where screenshots are, shared with the sampled mode)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from annotate.commands.common import console
from annotate.media import MediaLocator

SelfOption = Annotated[
    str | None,
    typer.Option(
        "--self",
        metavar="NAME",
        help="Annotate the own actions of this participant (name or id; with --session "
        "also a role), in time order, as the coder self:NAME.",
    ),
]
SessionOption = Annotated[
    str | None, typer.Option(metavar="SESSION", help="With --self: only this session's actions.")
]
CheckpointsOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="With --self: checkpoint answers as anchors, CSV or JSONL with session, "
        "participant, time (ISO 8601 or seconds into the session), answers[, label]. "
        "Actions of type checkpoint in the log are used too.",
    ),
]
MediaRootOption = Annotated[
    list[Path] | None,
    typer.Option(
        metavar="DIR", help="Folder that relative screenshot paths are read from (repeatable)."
    ),
]
MediaPrefixOption = Annotated[
    list[str] | None,
    typer.Option(
        metavar="PREFIX=DIR",
        help="PREFIX=DIR: screenshots whose path or URL starts with PREFIX (e.g. "
        "s3://bucket/shots/) are read from DIR (repeatable).",
    ),
]


def code_self(
    db: Path,
    codebook: str,
    who: str,
    *,
    session: str | None,
    checkpoints: Path | None,
    media: MediaLocator,
    context: int,
    lookahead: int,
    web: bool,
    port: int,
) -> None:
    from annotate.tui.app import (  # keeps textual off start-up
        check_port,
        end_with_the_server,
        serve_web,
    )
    from annotate.tui.self_app import make_self_app, self_web_command

    app = make_self_app(
        db,
        codebook,
        who,
        session=session,
        checkpoints=checkpoints,
        context=context,
        lookahead=lookahead,
        media=media,
    )
    coding = app.session
    if web:
        app.close_session(count_time=False)
        check_port(port)
        command = self_web_command(
            db,
            codebook,
            who,
            session=session,
            checkpoints=checkpoints,
            context=context,
            lookahead=lookahead,
            extra=media.options(),
        )
        from annotate.tui.web_server import new_token, web_url

        token = new_token()
        console.print(
            f"Serving self-annotation for {coding.coder} on {web_url(port, token)} "
            "(Ctrl+C to stop).",
            markup=False,
        )
        serve_web(
            command,
            port=port,
            title=f"annotate: {coding.codebook.name} · {coding.coder}",
            token=token,
        )
        return
    end_with_the_server()
    app.run()
    if os.environ.get("TEXTUAL_DRIVER"):
        return  # served by --web: stdout belongs to textual-serve's protocol
    counts = coding.counts()
    console.print(
        f"{coding.coder}: {counts.coded} of {counts.n} own actions annotated, "
        f"{counts.skipped} skipped, {counts.flagged} flagged ({coding.codebook.name}). "
        "Everything answered is saved.",
        markup=False,
    )
