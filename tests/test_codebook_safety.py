"""A codebook is untrusted input: no alias bombs, no huge files, no shortcut keys that are
the coding screen's own (space, Tab, Enter, Esc, Backspace)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.codebook import parse_codebook
from annotate.codebook_yaml import MAX_CODEBOOK_BYTES
from annotate.errors import CodebookError

BODY = (
    'title: T\nversion: "1"\nquestions:\n  - id: q\n    prompt: Which?\n    options:\n'
    "      - {code: a, label: A, key: KEY}\n      - {code: b, label: B, key: x}\n"
)


def _bomb(levels: int = 12) -> str:
    """Each level lists the one before nine times: 9**levels strings once expanded."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_it_expands(cli, tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text("name: bomb\n" + _bomb() + BODY.replace("KEY", "k"))
    assert path.stat().st_size < 2_000  # 9**12 (282 billion) strings once expanded
    r = cli("codebooks", "validate", str(path), db=None)
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == (
        "error: bomb.yaml:3: not valid YAML (alias *l0 is not allowed (write the value out))"
    )


def test_any_alias_is_refused_even_a_harmless_one() -> None:
    text = "name: al\n" + BODY.replace("KEY", "k").replace("label: A", "label: &lab A")
    text = text.replace("label: B", "label: *lab")
    with pytest.raises(CodebookError, match=r"al.yaml:9: not valid YAML \(alias \*lab"):
        parse_codebook(text, "al.yaml")


def test_a_huge_codebook_file_is_refused_by_its_size(cli, tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("name: huge\n" + BODY.replace("KEY", "k") + "# " + "x" * MAX_CODEBOOK_BYTES)
    r = cli("codebooks", "validate", str(path), db=None)
    assert r.exit_code == 1
    assert r.stderr.startswith("error: huge.yaml: 2,000,1")
    assert "too large for a codebook" in r.stderr


@pytest.mark.parametrize(
    ("yaml_key", "shown"),
    [('" "', "' '"), ('"\\t"', "'\\t'"), ('"\\r"', "'\\r'"), ('"\\e"', "'\\x1b'"),
     ('"\\b"', "'\\x08'"), ('"\\x7f"', "'\\x7f'")],
    ids=["space", "tab", "enter", "esc", "backspace", "delete"],
)  # fmt: skip
def test_a_key_the_coding_screen_binds_is_not_a_shortcut(
    cli, tmp_path: Path, yaml_key: str, shown: str
) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text("name: keys\n" + BODY.replace("KEY", yaml_key))
    r = cli("codebooks", "validate", str(path), db=None)
    assert r.exit_code == 1
    assert r.stderr.startswith(
        f"error: keys.yaml: questions[0].options[0].key: Value error, {shown} cannot be a "
        "shortcut: space, Tab, Enter, Esc, Backspace"
    ), r.stderr


@pytest.mark.parametrize("field", ["other_key", "yes_key", "no_key"])
def test_special_keys_follow_the_same_rule(field: str) -> None:
    text = "name: sk\n" + BODY.replace("KEY", "k") + f'    allow_other: true\n    {field}: " "\n'
    with pytest.raises(CodebookError, match=rf"questions\[0\]\.{field}: Value error, ' ' cannot"):
        parse_codebook(text, "sk.yaml")


def test_printable_keys_stay_allowed() -> None:
    for key in ("1", "é", "?", "s", "Ā"):
        assert parse_codebook("name: ok\n" + BODY.replace("KEY", f'"{key}"'), "ok.yaml")
