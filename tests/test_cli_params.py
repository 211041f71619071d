"""The checks of :mod:`annotate.cli_params` give every command's parameters the values and the
error messages typer's own checks give, and spare the commands pydantic."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from typer import _coercion
from typer._click import Context
from typer.core import _TyperParameter

from annotate.cli import COMMANDS, load_commands

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo"
SAMPLES: dict[str, list[Any]] = {
    "str": ["abc", "", "007", " x ", "-", "é"],
    "int": ["8", "-3", "0", "007", "+8", " 8", "8 ", "1.5", "1e3", "x", "", "٣", 5, True],
    "float": ["0.95", "1", "-2.5", "0.0", ".5", "1.", "1e-3", "nan", "inf", "x", "", 1, 0.5],
    "bool": [True, False, "true", "0", "yes", ""],
    "path": ["a/b.db", "", "-", ".", "/", "x\x00y", Path("p.db")],
}


def _parameters() -> Iterator[tuple[str, Any, Any]]:
    def walk(name: str, command: Any) -> Iterator[tuple[str, Any, Any]]:
        for sub_name, sub in getattr(command, "commands", {}).items():
            yield from walk(f"{name} {sub_name}", sub)
        for param in command.params:
            if isinstance(param, _TyperParameter):
                yield f"{name} {param.name}", command, param

    for module in sorted({c.module for c in COMMANDS.values()}):
        for name, command in load_commands(module).items():
            yield from walk(name, command)


PARAMETERS = list(_parameters())


def _samples(param: Any) -> list[Any]:
    annotation = param.type_descriptor.annotation
    many = getattr(annotation, "__origin__", None) is list
    leaf = annotation.__args__[0] if many else annotation
    if isinstance(leaf, type) and issubclass(leaf, Enum):
        values = [m.value for m in leaf]
        values += [v.upper() for v in values] + [v.title() for v in values]
        values += ["nope", "", *list(leaf)]
    elif isinstance(leaf, type) and issubclass(leaf, Path):
        values = list(SAMPLES["path"])
    else:
        values = list(SAMPLES.get(getattr(leaf, "__name__", ""), []))
    values.append(param.default)
    if many:
        return [tuple(values[:2]), tuple(values[2:4]), (), None]
    return values


def _outcome(runtime: Any, value: Any, param: Any, ctx: Context) -> tuple[str, Any]:
    try:
        made = runtime.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # the very error is what is compared
        return "error", (type(exc).__name__, str(exc))
    return "value", (type(made), repr(made))  # repr: nan is not nan


def test_almost_every_parameter_is_made_without_pydantic() -> None:
    """Flags are left out: typer takes their True or False without a check."""
    valued = [(n, p) for n, _, p in PARAMETERS if p.type_descriptor.annotation is not bool]
    left = [n for n, p in valued if not type(p._runtime_param).__name__.startswith("Plain")]
    assert len(left) <= 0.05 * len(valued), left


@pytest.mark.parametrize(("name", "command", "param"), PARAMETERS, ids=[p[0] for p in PARAMETERS])
def test_each_value_comes_out_as_typer_makes_it(name: str, command: Any, param: Any) -> None:
    typer_way = _coercion.build_runtime_param(param.type_descriptor)
    ours = param._runtime_param or typer_way
    ctx = Context(command)
    for value in _samples(param):
        assert _outcome(ours, value, param, ctx) == _outcome(typer_way, value, param, ctx), (
            name,
            value,
        )


def test_a_bad_value_gets_typer_message(cli, db_path: Path) -> None:
    result = cli("agree", "--n-boot", "many", "--db", str(db_path))
    assert result.exit_code == 2
    assert "Invalid value for '--n-boot'" in result.output
    assert "'many'" in result.output or "valid integer" in result.output


def test_export_and_samples_start_without_pydantic(cli, db_path: Path, tmp_path: Path) -> None:
    assert cli("import", str(DEMO)).exit_code == 0
    db = db_path
    code = (
        "import sys\n"
        "from annotate.cli import main\n"
        "export = ['export', '--what', 'actions', '--out', sys.argv[2]]\n"
        "for argv in (['samples', '--db', sys.argv[1]], [*export, '--db', sys.argv[1]]):\n"
        "    sys.argv = ['annotate', *argv]\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, exc.code\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
    )
    out = tmp_path / "a.csv"
    result = subprocess.run(
        [sys.executable, "-c", code, str(db), str(out)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith("id,")
