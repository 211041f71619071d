"""Reading a codebook's YAML safely: no duplicate keys, no aliases, a size limit.

A codebook is untrusted input (a colleague's file, a foreign project file's stored copy).
PyYAML's safe loader still expands aliases: a 15 KB file of nested ``*a`` references
becomes gigabytes. Codebooks have no use for anchors and aliases, so an alias is refused
where it stands, before anything is expanded.
"""

from __future__ import annotations

from typing import Any

import yaml

from annotate.errors import CodebookError

MAX_CODEBOOK_BYTES = 2_000_000
"""A 200-option codebook with definitions and examples is about 100 KB."""


class _CodebookLoader(yaml.SafeLoader):
    """A safe loader that refuses aliases and a mapping with the same key twice (PyYAML
    keeps the last)."""

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None,
                None,
                f"alias *{event.anchor} is not allowed (write the value out)",
                event.start_mark,
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key}' appears twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def check_size(size: int, label: str) -> None:
    if size > MAX_CODEBOOK_BYTES:
        raise CodebookError(
            f"{label}: {size:,} bytes is too large for a codebook (at most {MAX_CODEBOOK_BYTES:,})",
            hint="a codebook holds questions, options and definitions, not data",
        )


def load_yaml(text: str, label: str) -> Any:
    """The data of a codebook's YAML text; every problem is ``label[:line]: ...``."""
    check_size(len(text.encode("utf-8", "surrogatepass")), label)
    try:
        return yaml.load(text, Loader=_CodebookLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise CodebookError(
            f"{label}{where}: not valid YAML ({getattr(exc, 'problem', exc)})"
        ) from exc
    except RecursionError:
        raise CodebookError(f"{label}: not valid YAML (nested too deeply)") from None
