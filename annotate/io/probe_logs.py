"""Probe logs as agent simulations write them (CollabSim, seed 002 §3.3): one JSON line per
turn of an agent, with the action nested (``action{type, content}``) and that agent's probe
answers nested (``probes{task_state, partner_intent, own_plan, confidence}``), imported
unflattened through one mapping file of dotted paths (:mod:`annotate.field_paths`).

Each line becomes an action (id ``SESSION:TURN:AGENT``, numbered in file order within its
session, the turn kept as ``meta.turn``) and, for each mapped probe present on the line, the
agent's own answer (coder ``self:AGENT``): free text for a ``text`` question, a number for a
``number`` question, a code (through the probe's ``answers`` table) otherwise. The mapping:

.. code-block:: yaml

    codebook: collabsim_probes          # a codebook name or YAML path
    fields:                             # our field: the path in a line
      session: session
      turn: turn
      participant: agent
      action_type: action.type
      content: action.content
      condition: condition              # optional, as timestamp, role
      meta: {group_size: config.group_size, model: config.model}
    action_types: {send_message: message, trade: other}   # types that are not ours
    probes:                             # path of an answer: the question it answers
      probes.task_state: Q1
      probes.confidence: conf
      probes.mood: {to: M, answers: {happy: h, sad: s}}

A file is read whole before anything is written, then stored in one transaction: a
mistake is ``file:line: what`` and nothing of the file is stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotate.codebook import TYPED_KINDS, Answer, Codebook, LoadedCodebook, Question, find_codebook
from annotate.codebook_yaml import load_yaml
from annotate.coders import self_coder
from annotate.errors import AnnotateError, ImportFormatError
from annotate.field_paths import lookup
from annotate.io.importers import fields
from annotate.io.label_import import jsonl_objects
from annotate.models import ACTION_TYPES, Action
from annotate.store.labels import LabelWrite

REQUIRED = ("session", "turn", "participant", "action_type")
OPTIONAL = ("content", "condition", "timestamp", "role")
SOURCE = "import"


@dataclass(frozen=True)
class ProbeField:
    path: str
    question: Question
    answers: dict[str, str]


@dataclass(frozen=True)
class ProbeMapping:
    path: Path
    loaded: LoadedCodebook
    fields: dict[str, str]
    meta: dict[str, str]
    action_types: dict[str, str]
    probes: tuple[ProbeField, ...]

    @property
    def codebook(self) -> Codebook:
        return self.loaded.codebook


def _mapping_error(path: Path, where: str, problem: str, hint: str | None = None):
    return ImportFormatError(f"{path.name}: {where}: {problem}", hint=hint)


def read_mapping(path: Path) -> ProbeMapping:
    """The mapping file, checked against its codebook; every mistake names its key."""
    try:
        data = load_yaml(path.read_text(encoding="utf-8"), path.name)
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise _mapping_error(path, "top level", "expected codebook, fields and probes")
    unknown = sorted(set(data) - {"codebook", "fields", "action_types", "probes"})
    if unknown:
        raise _mapping_error(
            path, unknown[0], "unknown key", "keys: codebook, fields, action_types, probes"
        )
    if not data.get("codebook"):
        raise _mapping_error(path, "codebook", "missing (a codebook name or YAML path)")
    name = str(data["codebook"])
    beside = path.parent / name
    loaded = find_codebook(
        str(beside) if beside.suffix in {".yaml", ".yml"} and beside.is_file() else name
    )
    given = data.get("fields") or {}
    if not isinstance(given, dict):
        raise _mapping_error(path, "fields", "expected OUR_FIELD: PATH lines")
    meta = given.pop("meta", None) or {}
    if not isinstance(meta, dict):
        raise _mapping_error(path, "fields.meta", "expected NAME: PATH lines")
    for key in given:
        if key not in REQUIRED + OPTIONAL:
            raise _mapping_error(
                path,
                f"fields.{key}",
                "not a field of an action",
                "fields: " + ", ".join(REQUIRED + OPTIONAL) + ", meta",
            )
    field_paths = {f: str(given.get(f, f)) for f in REQUIRED} | {
        f: str(given[f]) for f in OPTIONAL if f in given
    }
    types = {str(k): str(v) for k, v in (data.get("action_types") or {}).items()}
    for word, ours in types.items():
        if ours not in ACTION_TYPES:
            raise _mapping_error(
                path,
                f"action_types.{word}",
                f"'{ours}' is not an action type",
                "types: " + ", ".join(ACTION_TYPES),
            )
    probes_given = data.get("probes")
    if not isinstance(probes_given, dict) or not probes_given:
        raise _mapping_error(path, "probes", "expected PATH: QUESTION lines")
    probes = []
    for probe_path, spec in probes_given.items():
        where = f"probes.{probe_path}"
        spec = {"to": spec} if isinstance(spec, str) else spec
        if not isinstance(spec, dict) or "to" not in spec:
            raise _mapping_error(path, where, "expected a question id, or {to: ID, answers: {...}}")
        try:
            question = loaded.codebook.question(str(spec["to"]))
        except AnnotateError as exc:
            raise _mapping_error(path, f"{where}.to", exc.message, exc.hint) from None
        answers = {str(k): str(v) for k, v in (spec.get("answers") or {}).items()}
        if answers and question.kind in TYPED_KINDS:
            raise _mapping_error(
                path, f"{where}.answers", f"{question.id} is a {question.kind} question: no codes"
            )
        for word, code in answers.items():
            if code not in question.codes:
                raise _mapping_error(
                    path,
                    f"{where}.answers.{word}",
                    f"'{code}' is not a code of {question.id}",
                    "codes: " + ", ".join(question.codes),
                )
        probes.append(ProbeField(str(probe_path), question, answers))
    return ProbeMapping(
        path, loaded, field_paths, {str(k): str(v) for k, v in meta.items()}, types, tuple(probes)
    )


@dataclass
class ProbeLog:
    """A file read and mapped: its actions and the agents' answers, not yet stored."""

    path: Path
    actions: list[Action]
    writes: list[LabelWrite]


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        yield from jsonl_objects(path)
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path}: not UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror})") from None


def _answer(probe: ProbeField, value: Any) -> Answer:
    q = probe.question
    if q.kind == "number":
        return Answer.number(
            value if isinstance(value, str) else fields.number(value, probe.path), q
        )
    if q.kind == "text":
        text = fields.text(value, probe.path)
        return Answer((text or "").strip())
    words = value if isinstance(value, list) else [value]
    codes = [probe.answers.get(str(w), str(w)) for w in words]
    if q.kind == "multi":
        return Answer(None, tuple(dict.fromkeys(codes)))
    if len(codes) != 1:
        raise AnnotateError(f"question {q.id}: takes one answer, not a list")
    return Answer(codes[0])


def read_probe_log(path: Path, mapping: ProbeMapping) -> ProbeLog:
    """Every line of ``path`` mapped, or ImportFormatError naming the first bad one."""
    actions: list[Action] = []
    writes: list[LabelWrite] = []
    seqs: dict[str, int] = {}
    seen: dict[str, int] = {}
    f = mapping.fields
    for lineno, obj in _lines(path):
        where = f"{path}:{lineno}"
        try:
            values = {}
            for name in REQUIRED:
                values[name] = lookup(obj, f[name])
            for name in OPTIONAL:
                if name in f:
                    values[name] = _optional(obj, f[name])
            session = str(fields.text(values["session"], f["session"]))
            participant = str(fields.text(values["participant"], f["participant"]))
            turn = fields.whole_number(values["turn"], f["turn"])
            kind = str(fields.text(values["action_type"], f["action_type"]))
        except KeyError as exc:
            raise ImportFormatError(f"{where}: no field '{exc.args[0]}'") from None
        except ValueError as exc:
            raise ImportFormatError(f"{where}: {exc}") from None
        ours = mapping.action_types.get(kind, kind)
        if ours not in ACTION_TYPES:
            raise ImportFormatError(
                f"{where}: {f['action_type']}: '{kind}' is not an action type of annotate",
                hint=f"map it in {mapping.path.name}: action_types: {{{kind}: message}} "
                f"(types: {', '.join(ACTION_TYPES)})",
            )
        action_id = f"{session}:{turn}:{participant}"
        if action_id in seen:
            raise ImportFormatError(
                f"{where}: turn {turn} of {participant} in session {session} is also on line "
                f"{seen[action_id]}"
            )
        seen[action_id] = lineno
        meta: dict[str, Any] = {"turn": turn}
        if kind != ours:
            meta["action_type"] = kind
        for name, meta_path in mapping.meta.items():
            value = _optional(obj, meta_path)
            if value is not None:
                meta[name] = value
        seq = seqs.get(session, 0)
        seqs[session] = seq + 1
        try:
            actions.append(
                Action(
                    id=action_id,
                    session=session,
                    seq=seq,
                    action_type=ours,
                    content=fields.content(values.get("content")),
                    participant=participant,
                    role=fields.text(values.get("role"), "role"),
                    timestamp=fields.text(values.get("timestamp"), "timestamp"),
                    condition=fields.text(values.get("condition"), "condition"),
                    meta=meta,
                )
            )
        except ValueError as exc:
            raise ImportFormatError(f"{where}: {exc}") from None
        for probe in mapping.probes:
            value = _optional(obj, probe.path)
            if value is None or value == "":
                continue
            try:
                answer = _answer(probe, value)
                answer.check(probe.question)
            except (AnnotateError, ValueError) as exc:
                message = exc.message if isinstance(exc, AnnotateError) else str(exc)
                raise ImportFormatError(f"{where}: {probe.path}: {message}") from None
            writes.append(
                LabelWrite(
                    action_id,
                    probe.question.id,
                    self_coder(participant),
                    answer,
                    SOURCE,
                    {"file": path.name, "line": lineno, "probe": probe.path},
                )
            )
    return ProbeLog(path, actions, writes)


def _optional(obj: dict[str, Any], path: str) -> Any:
    try:
        return lookup(obj, path)
    except KeyError:
        return None


@dataclass(frozen=True)
class ProbeImport:
    path: Path
    n_actions: int
    n_new_actions: int
    n_answers: int
    n_changed: int


def import_probe_logs(store: Any, paths: list[Path], mapping: ProbeMapping) -> list[ProbeImport]:
    """Each file read whole, then stored in one transaction (its actions, the codebook
    version and the agents' answers)."""
    out = []
    for path in paths:
        log = read_probe_log(path, mapping)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        with store.db.transaction():
            n_new = store.actions.add_actions(
                log.actions, path=str(path), sha256=digest, fmt="probes"
            )
            store.codebooks.register_codebook(mapping.loaded)
            changed = store.labels.save_answers(mapping.codebook, log.writes) if log.writes else 0
        out.append(ProbeImport(path, len(log.actions), n_new, len(log.writes), changed))
    return out
