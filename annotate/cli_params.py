"""Typer's checks of a command's values, made without pydantic for the plain kinds of value
the commands take.

Typer checks each value given to a command with a pydantic ``TypeAdapter``: importing pydantic
and building its first adapter is 0.08 s of the 0.21 s in which `annotate export` starts, and
most commands need pydantic for nothing else. A value of a plain kind (a text, a whole or
decimal number, a choice, a path, a list of these) that reads cleanly is made here, with
typer's own functions where it has some (choices, paths). Anything else goes the way typer
goes: another kind of value, a value that does not read (typer's error message then
reports it), or a typer whose internals have changed (nothing is installed). So a command
gets the very values and messages it would get from typer. (A flag needs nothing: typer
takes its True or False as it is.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

try:  # typer's internals (0.2x); with another typer, install() leaves its own checks
    from typer import _param_types
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer.core import _TyperParameter
except ImportError:
    RuntimeParam = None  # type: ignore[assignment,misc]

Leaf = Callable[[Any, Any, Any], Any]
"""(value, parameter, context) -> the value made, or an exception: typer's way then."""

WHOLE = re.compile(r"-?(?:0|[1-9][0-9]*)")
DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")


class Unread(ValueError):
    """Not a value of the plain kind: typer's own check decides."""


def _text(value: Any, param: Any, ctx: Any) -> str:
    if type(value) is not str:
        raise Unread(value)
    return value


def _whole(value: Any, param: Any, ctx: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is str and WHOLE.fullmatch(value):
        return int(value)
    raise Unread(value)


def _decimal(value: Any, param: Any, ctx: Any) -> float:
    if type(value) is float:
        return value
    if type(value) is str and (DECIMAL.fullmatch(value) or WHOLE.fullmatch(value)):
        return float(value)
    raise Unread(value)


def _leaf(annotation: Any, info: Any) -> Leaf | None:
    """How a value of ``annotation`` is made, in the order typer tries the kinds; None for
    a kind left to typer."""
    if info.parser is not None or getattr(info, "formats", None):
        return None
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        choices = tuple(annotation)
        sensitive = info.case_sensitive

        def choice(value: Any, param: Any, ctx: Any) -> Any:
            return _param_types.coerce_cli_choice(
                value, choices=choices, case_sensitive=sensitive, ctx=ctx
            )

        return choice
    if annotation in (int, float):
        if info.min is not None or info.max is not None or info.clamp:
            return None
        return _whole if annotation is int else _decimal
    if annotation is str:
        return _text
    if isinstance(annotation, type) and issubclass(annotation, Path):
        if not _param_types.routes_to_path(annotation, info):
            return None
        path_type = info.path_type or annotation

        def path(value: Any, param: Any, ctx: Any) -> Any:
            if type(value) is str and value and "\x00" not in value:
                value = path_type(value)
            elif not isinstance(value, path_type):
                raise Unread(value)
            return _param_types.coerce_cli_path(
                value, info, path_type=path_type, param=param, ctx=ctx
            )

        return path
    return None


def _plain_runtime_param() -> type | None:
    """The class of the checks, built on typer's (None when typer's is not as expected)."""
    if RuntimeParam is None:
        return None
    try:

        @dataclass(frozen=True, kw_only=True)
        class PlainRuntimeParam(RuntimeParam):  # type: ignore[misc,valid-type]
            """A parameter's check: its plain kind's, else typer's."""

            leaf: Leaf
            many: bool
            descriptor: Any

            def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
                try:
                    if self.many:
                        items = value if isinstance(value, list | tuple) else [value]
                        return [self.leaf(item, param, ctx) for item in items]
                    return self.leaf(value, param, ctx)
                except (ValueError, TypeError):  # typer's value, or its message for the error
                    typer_way = build_runtime_param(self.descriptor)
                    return typer_way._coerce_value(value, param=param, ctx=ctx)

    except (TypeError, AttributeError):
        return None
    return PlainRuntimeParam


PlainRuntimeParam = _plain_runtime_param()


def _plain(param: Any) -> Any | None:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or descriptor.file_annotation is not None:
        return None
    annotation, info = descriptor.annotation, descriptor.parameter_info
    many = get_origin(annotation) is list
    if many:
        (annotation,) = get_args(annotation)
    leaf = _leaf(annotation, info)
    if leaf is None:
        return None
    return PlainRuntimeParam(  # type: ignore[misc]
        parameter_info=info,
        annotation=descriptor.annotation,
        leaf=leaf,
        many=many,
        descriptor=descriptor,
    )


def install(commands: Iterable[Any]) -> None:
    """Give each parameter of these commands (and of their subcommands) that takes a plain
    kind of value the check of this module, typer's as the fallback."""
    if PlainRuntimeParam is None:
        return

    def visit(command: Any) -> None:
        for sub in getattr(command, "commands", {}).values():
            visit(sub)
        for param in command.params:
            if isinstance(param, _TyperParameter) and param._runtime_param is None:
                made = _plain(param)
                if made is not None:
                    param._runtime_param = made

    try:
        for command in commands:
            visit(command)
    except Exception:  # typer's internals moved: what was not installed keeps typer's checks
        return
