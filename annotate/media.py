"""Where an action's screenshot is on this computer.

The platform export names each action's screenshot (``screenshot``, and ``html_snapshot``
for the page) as the platform stored it: a relative path, an absolute one, or a URL such as
``s3://bucket/run1/shot.png``. The importers keep these references in the action's
``meta``; this module finds the file: a URL or path that starts with a ``--media-prefix
PREFIX=DIR`` is read from DIR, a relative path from each ``--media-root DIR`` (then from
the project file's folder), an absolute path only when it lies in one of those folders. A
log is data from elsewhere: a reference that leads out of its folder (``../``, a link, an
absolute path elsewhere) is never opened. A file that cannot be found is "missing", never
an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from annotate.errors import UsageError
from annotate.models import Action

SCREENSHOT_KEYS = ("screenshot",)


@dataclass(frozen=True)
class Screenshot:
    ref: str
    path: Path | None
    """The file, or None when it is missing."""

    @property
    def missing(self) -> bool:
        return self.path is None


def screenshot_ref(action: Action) -> str | None:
    return meta_screenshot_ref(action.meta)


def meta_screenshot_ref(meta: dict[str, object]) -> str | None:
    """The screenshot an action's meta names (None when it names none)."""
    for key in SCREENSHOT_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def parse_prefix(text: str) -> tuple[str, Path]:
    """``s3://bucket/run1/=/data/shots`` -> (``s3://bucket/run1/``, Path)."""
    prefix, sep, folder = text.rpartition("=")
    if not sep or not prefix or not folder:
        raise UsageError(
            f"--media-prefix '{text}' is not PREFIX=DIR",
            hint="e.g. --media-prefix s3://bucket/screens/=./screens",
        )
    return prefix, Path(folder)


@dataclass(frozen=True)
class MediaLocator:
    roots: tuple[Path, ...] = ()
    prefixes: tuple[tuple[str, Path], ...] = ()
    project_root: Path | None = None
    """The project file's folder: relative paths are tried there last."""

    @classmethod
    def from_options(
        cls, roots: list[Path] | None, prefixes: list[str] | None, project: Path | None = None
    ) -> MediaLocator:
        for root in roots or []:
            if not root.is_dir():
                raise UsageError(f"--media-root {root}: no such folder")
        return cls(
            tuple(roots or []),
            tuple(parse_prefix(p) for p in prefixes or []),
            project.resolve().parent if project else None,
        )

    def candidates(self, ref: str) -> list[tuple[Path, Path]]:
        """Each place ``ref`` may be, with the folder it must stay inside."""
        for prefix, folder in sorted(self.prefixes, key=lambda p: -len(p[0])):
            if ref.startswith(prefix):
                return [(folder / ref[len(prefix) :].lstrip("/"), folder)]
        if "://" in ref:
            return []
        path = Path(ref)
        last = (self.project_root,) if self.project_root else ()
        roots = (*self.roots, *last)
        if path.is_absolute():
            return [(path, root) for root in roots]
        return [(root / path, root) for root in roots]

    def locate(self, ref: str) -> Path | None:
        """The file ``ref`` names, or None: missing, or outside the folder it was looked for in."""
        if "\x00" in ref:
            return None
        for path, folder in self.candidates(ref):
            try:
                inside = path.resolve().is_relative_to(folder.resolve())
            except (OSError, RuntimeError):  # a loop of links, a name too long
                continue
            if inside and path.is_file():
                return path
        return None

    def screenshot(self, action: Action) -> Screenshot | None:
        """The action's screenshot (None when the log names none)."""
        ref = screenshot_ref(action)
        return Screenshot(ref, self.locate(ref)) if ref else None

    def options(self) -> list[str]:
        """The same locator as ``annotate code`` options (for --web's child processes)."""
        argv: list[str] = []
        for prefix, folder in self.prefixes:
            argv += ["--media-prefix", f"{prefix}={folder.resolve()}"]
        for root in self.roots:
            argv += ["--media-root", str(root.resolve())]
        return argv
