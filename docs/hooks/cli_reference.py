"""MkDocs hook: the CLI reference page (reference/cli.md), written at build time from the
commands' own help, so that it cannot drift from ``annotate COMMAND --help``.

Each command gets its usage line, its help text (written as Markdown: the CLI's markup mode)
and a table of its arguments and options with their defaults and environment variables, in
the order ``annotate --help`` lists the commands.
"""

from __future__ import annotations

from typing import Any

PAGE = "reference/cli.md"

INTRO = """# CLI reference

Generated from the commands' own help when the site is built: `annotate COMMAND --help` shows
the same text in the terminal. Every command that works on a project file takes `--db PATH`
(or `ANNOTATE_DB`), `./annotate.db` by default.
"""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _names(param: Any) -> str:
    if param.param_type_name == "argument":
        return f"`{param.metavar or param.name.upper()}`"
    names = [*param.opts, *param.secondary_opts]
    return " / ".join(f"`{n}`" for n in names)


def _kind(param: Any, ctx: Any) -> str:
    if getattr(param, "is_flag", False):
        return "flag"
    kind = param.display_type(ctx).strip("<>")  # as --help shows it: int, path, a|b|c
    return " \\| ".join(f"`{k}`" for k in kind.split("|")) if "|" in kind else kind


def _default(param: Any) -> str:
    if param.required:
        return "required"
    default = param.default
    if default is None or default == () or default == []:
        return ""
    if getattr(param, "is_flag", False):
        if not param.secondary_opts:
            return ""
        return f"`{param.opts[0] if default else param.secondary_opts[0]}`"
    return f"`{getattr(default, 'value', default)}`"


def _help(param: Any) -> str:
    text = getattr(param, "help", None) or ""
    envvar = getattr(param, "envvar", None)
    if envvar:
        text += f" Environment variable: `{envvar}`."
    return _cell(text)


def _command(name: str, command: Any, ctx: Any, level: int) -> list[str]:
    import typer._click as click  # typer's own click: the commands' classes come from it

    sub = click.Context(command, info_name=name.split()[-1], parent=ctx)
    usage = " ".join(command.collect_usage_pieces(sub))
    out = [f"{'#' * level} `annotate {name}`", "", f"```\nannotate {name} {usage}\n```", ""]
    if command.help:
        out += [command.help.strip(), ""]
    params = [p for p in command.params if p.name != "help"]
    if params:
        out += ["| argument / option | kind | default | what it does |", "|---|---|---|---|"]
        out += [f"| {_names(p)} | {_kind(p, sub)} | {_default(p)} | {_help(p)} |" for p in params]
        out.append("")
    if hasattr(command, "list_commands"):  # a group: annotate codebooks
        for sub_name in command.list_commands(sub):
            sub_command = command.get_command(sub, sub_name)
            out += _command(f"{name} {sub_name}", sub_command, sub, level + 1)
    return out


def cli_reference() -> str:
    """The reference page as Markdown: every command of ``annotate --help``, in its order."""
    import typer
    import typer._click as click

    from annotate.cli import COMMANDS, app

    root = typer.main.get_command(app)
    ctx = click.Context(root, info_name="annotate")
    out = [INTRO, "| command | what it does |", "|---|---|"]
    out += [f"| [`{n}`](#annotate-{n}) | {_cell(c.summary)} |" for n, c in COMMANDS.items()]
    out.append("")
    for name in COMMANDS:
        out += _command(name, root.get_command(ctx, name), ctx, 2)
    return "\n".join(out) + "\n"


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=cli_reference()))
    return files
