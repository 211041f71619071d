"""Participants' self-reports from structured logs (`annotate import-labels --mapping`).

AI agents in the mental-model studies are probed after every action about the task state,
their partner's intent and their own plan, and the replies are logged as JSON lines beside
the actions. Each line is one reply::

    {"action_id": "...", "participant": "Maya", "question": "task_state",
     "answer": "executing", "text": "we agreed on the route"}

- ``action_id``, or ``session`` and ``seq``: the action the probe followed;
- ``participant``: who was probed (a participant of that action's session); the answers
  are stored as the coder ``self:PARTICIPANT``, with source ``self-report``;
- ``question``: the probe's name in the log (a key of the mapping's ``questions``);
- ``answer``: the reply, a word of the log's own (mapped to a code) or a code as is; a list
  for a multi-select question;
- ``reasons``: for a ``no`` to a yes/no question, the reasons (mapped like answers);
- ``text``: free text: the answer to a text question, the description of an "other", or a
  rationale beside a coded answer (kept in the label's meta);
- ``time`` and ``meta`` (an object): kept in the label's meta. Any other key is an error.

The mapping is a small YAML file naming, for each probe, the codebook question it answers
and how the log's words become the question's codes::

    codebook: mental_model
    questions:
      task_state: {to: Q1, answers: {figuring_out: t1, executing: t3}}
      same_page: {to: Q4, answers: {aligned: "yes", not_aligned: "no"}, reasons: {state: n2}}

Every line is checked before anything is written, and all are written in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from annotate.codebook import NO, OTHER, TYPED_KINDS, Answer, Codebook, LoadedCodebook, Question
from annotate.codebook_yaml import _CodebookLoader, check_size
from annotate.coders import self_coder
from annotate.errors import AnnotateError, ImportFormatError
from annotate.io.importers import fields
from annotate.io.importers.encoding import not_utf8
from annotate.io.label_import import (
    LabelImportResult,
    _content,
    check_applies,
    jsonl_objects,
)
from annotate.io.label_overwrites import plan_import, refuse_overwrites
from annotate.store import LabelWrite, Store

SOURCE = "self-report"
KEYS = (
    "action_id",
    "session",
    "seq",
    "participant",
    "question",
    "answer",
    "reasons",
    "text",
    "time",
    "meta",
)
MAPPING_KEYS = ("codebook", "questions")
PROBE_KEYS = ("to", "answers", "reasons")


# -- the mapping ----------------------------------------------------------------------------


class _MappingLoader(_CodebookLoader):
    """The codebook loader (no aliases, no duplicate keys) that keeps every scalar as the
    text written: YAML 1.1 reads ``yes``, ``no`` and ``on`` as true/false, and a log's
    answer "no" must stay "no"."""


for _tag in ("bool", "int", "float", "null", "timestamp"):
    _MappingLoader.add_constructor(
        f"tag:yaml.org,2002:{_tag}", lambda loader, node: loader.construct_scalar(node)
    )


def _lines(node: yaml.Node, path: str = "") -> Iterator[tuple[str, int]]:
    """Each key path of the YAML document (``questions.task_state.to``) with its line."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            where = f"{path}.{key.value}" if path else str(key.value)
            yield where, key.start_mark.line + 1
            yield from _lines(value, where)


@dataclass(frozen=True)
class Probe:
    """One probe of the log and the codebook question its replies answer."""

    name: str
    question: Question
    answers: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def code(self, raw: str, table: dict[str, str], allowed: list[str]) -> str | None:
        """The code for the log's word ``raw``: mapped, or a code of the question as is."""
        if raw in table:
            return table[raw]
        return raw if raw in allowed else None


@dataclass(frozen=True)
class Mapping:
    path: Path
    probes: dict[str, Probe]


def load_mapping(path: Path, codebook: Codebook) -> Mapping:
    """Read and check the mapping against the codebook; a mistake is one line naming the
    file, the line and the key."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read ({exc.strerror})") from None
    check_size(len(raw), str(path))
    try:
        text = raw.decode("utf-8-sig")
        node = yaml.compose(text, Loader=_MappingLoader)
        data = yaml.load(text, Loader=_MappingLoader)
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        raise ImportFormatError(
            f"{path}{where}: not valid YAML ({getattr(exc, 'problem', exc)})"
        ) from None
    except RecursionError:
        raise ImportFormatError(f"{path}: not valid YAML (nested too deeply)") from None
    lines = dict(_lines(node)) if node is not None else {}

    def error(key: str, problem: str, hint: str | None = None) -> ImportFormatError:
        line = lines.get(key)
        return ImportFormatError(
            f"{path}:{line}: {key}: {problem}" if line else f"{path}: {key}: {problem}", hint=hint
        )

    if not isinstance(data, dict):
        raise ImportFormatError(f"{path}: a mapping needs the keys codebook and questions")
    for key in data:
        if key not in MAPPING_KEYS:
            raise error(str(key), "unknown key", "keys: " + ", ".join(MAPPING_KEYS))
    named = data.get("codebook")
    if named is not None and str(named) != codebook.name:
        raise error(
            "codebook",
            f"'{named}', but --codebook is '{codebook.name}'",
            "import into the codebook the mapping was written for",
        )
    probes_data = data.get("questions")
    if not isinstance(probes_data, dict) or not probes_data:
        raise error("questions", "expected one entry per probe of the log: NAME: {to: QUESTION}")
    ids = [q.id for q in codebook.questions]
    probes: dict[str, Probe] = {}
    for name, spec in probes_data.items():
        where = f"questions.{name}"
        if not isinstance(spec, dict):
            raise error(where, "expected {to: QUESTION, answers: {...}}")
        for key in spec:
            if key not in PROBE_KEYS:
                raise error(f"{where}.{key}", "unknown key", "keys: " + ", ".join(PROBE_KEYS))
        target = spec.get("to")
        if target is None:
            raise error(where, "missing 'to' (the codebook question it answers)")
        if str(target) not in ids:
            raise error(
                f"{where}.to",
                f"'{target}' is not a question of {codebook.name}",
                "questions: " + ", ".join(ids),
            )
        question = codebook.question(str(target))
        tables: dict[str, dict[str, str]] = {}
        for key, allowed in (("answers", _value_codes(question)), ("reasons", question.set_codes)):
            table = spec.get(key) or {}
            if key in spec and not isinstance(spec[key], dict):
                raise error(f"{where}.{key}", "expected WORD: CODE lines")
            if table and question.kind in TYPED_KINDS:
                what = f"{question.id} is a {question.kind} question: no codes"
                raise error(f"{where}.{key}", what)
            if key == "reasons" and table and question.kind != "yes_no_reasons":
                raise error(f"{where}.reasons", f"{question.id} is not a yes/no question")
            for word, code in table.items():
                if str(code) not in allowed:
                    raise error(
                        f"{where}.{key}.{word}",
                        f"'{code}' is not a code of {codebook.name} {question.id}",
                        "codes: " + ", ".join(allowed),
                    )
            tables[key] = {str(w): str(c) for w, c in table.items()}
        probes[str(name)] = Probe(str(name), question, tables["answers"], tables["reasons"])
    return Mapping(path, probes)


def _value_codes(question: Question) -> list[str]:
    """The codes an ``answer`` may become: the value's codes, or a multi-select's options."""
    return question.set_codes if question.kind == "multi" else question.codes


# -- the report lines -----------------------------------------------------------------------


@dataclass
class ProbeReply:
    """One line, read and mapped; the action is resolved against the store later."""

    line: int
    action_id: str | None
    place: tuple[str, int] | None
    participant: str
    write: LabelWrite


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        yield from jsonl_objects(path)
    except UnicodeDecodeError:
        raise not_utf8(path) from None


def _words(value: Any, key: str) -> list[str]:
    if isinstance(value, list):
        return [str(fields.text(v, key)) for v in value]
    text = fields.text(value, key)
    return [] if text in (None, "") else [text]


def _read(path: Path, line: int, obj: dict[str, Any], mapping: Mapping) -> ProbeReply:
    where = f"{path}:{line}"
    unknown = [k for k in obj if k not in KEYS]
    if unknown:
        raise ImportFormatError(
            f"{where}: unknown key '{unknown[0]}'", hint="keys: " + ", ".join(KEYS)
        )
    try:
        action_id = fields.text(obj.get("action_id"), "action_id") or None
        session = fields.text(obj.get("session"), "session") or None
        seq = None if obj.get("seq") is None else fields.whole_number(obj["seq"], "seq")
        participant = fields.text(obj.get("participant"), "participant")
        probe_name = fields.text(obj.get("question"), "question")
        answers = _words(obj.get("answer"), "answer")
        reasons = _words(obj.get("reasons"), "reasons")
        text = fields.text(obj.get("text"), "text") or None
        time = fields.text(obj.get("time"), "time")
    except ValueError as exc:
        raise ImportFormatError(f"{where}: {exc}") from None
    if action_id is None and (session is None or seq is None):
        raise ImportFormatError(f"{where}: missing key 'action_id' (or 'session' and 'seq')")
    if not participant:
        raise ImportFormatError(f"{where}: missing key 'participant'")
    if not probe_name:
        raise ImportFormatError(f"{where}: missing key 'question'")
    if obj.get("meta") is not None and not isinstance(obj["meta"], dict):
        raise ImportFormatError(f"{where}: key 'meta': expected a JSON object")
    probe = mapping.probes.get(probe_name)
    if probe is None:
        raise ImportFormatError(
            f"{where}: key 'question': '{probe_name}' is not in {mapping.path.name}",
            hint="probes mapped: " + ", ".join(mapping.probes),
        )
    answer, rationale = _answer(where, mapping, probe, answers, reasons, text)
    try:
        answer.check(probe.question)
    except AnnotateError as exc:
        raise ImportFormatError(f"{where}: {exc.message}", hint=exc.hint) from None
    meta: dict[str, Any] = {"file": path.name, "line": line, "probe": probe_name}
    meta |= {"answer": obj["answer"]} if obj.get("answer") is not None else {}
    meta |= {"reasons": obj["reasons"]} if obj.get("reasons") is not None else {}
    meta |= {"text": rationale} if rationale else {}
    meta |= {"time": time} if time else {}
    meta |= {"meta": obj["meta"]} if obj.get("meta") else {}
    write = LabelWrite(
        action_id or "", probe.question.id, self_coder(participant), answer, SOURCE, meta
    )
    place = (session, seq) if session is not None and seq is not None else None
    return ProbeReply(line, action_id, place, participant, write)


def _answer(
    where: str,
    mapping: Mapping,
    probe: Probe,
    answers: list[str],
    reasons: list[str],
    text: str | None,
) -> tuple[Answer, str | None]:
    """The answer, and the free text that is a rationale (kept in meta)."""
    q = probe.question
    if q.kind == "text":
        if answers:
            raise ImportFormatError(
                f"{where}: key 'answer': {q.id} is a text question; give the text as 'text'"
            )
        return Answer(text), None
    if q.kind == "number":
        if len(answers) != 1:
            raise ImportFormatError(f"{where}: key 'answer': {q.id} takes one number")
        try:
            return Answer.number(answers[0], q), text
        except AnnotateError as exc:
            raise ImportFormatError(f"{where}: key 'answer': {exc.message}") from None
    if not answers:
        raise ImportFormatError(f"{where}: missing key 'answer' for {probe.name} ({q.id})")
    codes = []
    for word in answers:
        code = probe.code(word, probe.answers, _value_codes(q))
        if code is None:
            known = list(probe.answers) or _value_codes(q)
            raise ImportFormatError(
                f"{where}: key 'answer': '{word}' is not a code of {q.id} nor in "
                f"questions.{probe.name}.answers of {mapping.path.name}",
                hint="answers: " + ", ".join(known),
            )
        codes.append(code)
    reason_codes = []
    for word in reasons:
        code = probe.code(word, probe.reasons, q.set_codes)
        if code is None:
            known = list(probe.reasons) or q.set_codes
            raise ImportFormatError(
                f"{where}: key 'reasons': '{word}' is not a code of {q.id} nor in "
                f"questions.{probe.name}.reasons of {mapping.path.name}",
                hint="reasons: " + ", ".join(known),
            )
        reason_codes.append(code)
    if q.kind == "multi":
        uses_other = OTHER in codes
        answer = Answer(None, tuple(dict.fromkeys(codes)), text if uses_other else None)
    else:
        if len(codes) > 1:
            raise ImportFormatError(f"{where}: key 'answer': {q.id} takes one answer, not a list")
        uses_other = codes[0] == OTHER or (codes[0] == NO and OTHER in reason_codes)
        answer = Answer(codes[0], tuple(dict.fromkeys(reason_codes)), text if uses_other else None)
    return answer, None if uses_other else text


# -- the import -----------------------------------------------------------------------------


def _resolve(path: Path, store: Store, reports: list[ProbeReply]) -> None:
    """Give every report its action id, and check the action, its session's participants
    and the codebook's reach; raises naming the line."""
    places = store.self_reports.action_ids_at(r.place for r in reports if r.place is not None)
    for r in reports:
        if r.place is None:
            continue
        found = places.get(r.place)
        if found is None:
            raise ImportFormatError(
                f"{path}:{r.line}: no action at session '{r.place[0]}', seq {r.place[1]}",
                hint="import the actions first with `annotate import`",
            )
        if r.action_id is not None and r.action_id != found:
            raise ImportFormatError(
                f"{path}:{r.line}: key 'action_id': '{r.action_id}' is not the action at "
                f"session '{r.place[0]}', seq {r.place[1]} ('{found}')"
            )
        r.action_id = found
    for r in reports:
        r.write = replace(r.write, action_id=str(r.action_id))


def _check_actions(path: Path, store: Store, codebook: Codebook, reports: list[ProbeReply]) -> None:
    actions = store.self_reports.action_sessions(str(r.action_id) for r in reports)
    people = store.self_reports.session_participants(s for s, _ in actions.values())
    for r in reports:
        found = actions.get(str(r.action_id))
        if found is None:
            raise ImportFormatError(
                f"{path}:{r.line}: key 'action_id': unknown action id '{r.action_id}'",
                hint="import the actions first with `annotate import`",
            )
        session, action_type = found
        if r.participant not in people.get(session, []):
            raise ImportFormatError(
                f"{path}:{r.line}: key 'participant': '{r.participant}' has no action in "
                f"session '{session}'",
                hint="participants there: " + (", ".join(people.get(session, [])) or "none"),
            )
        check_applies(f"{path}:{r.line}", codebook, r.write.question, r.action_id, action_type)


def import_self_reports(
    store: Store,
    path: Path,
    mapping_path: Path,
    loaded: LoadedCodebook,
    *,
    replace: bool = False,
) -> LabelImportResult:
    """Check every line, then store them all in one transaction (or none)."""
    cb = loaded.codebook
    mapping = load_mapping(mapping_path, cb)
    if not path.is_file():
        raise ImportFormatError(f"{path}: no such file")
    if path.suffix.lower() == ".csv":
        raise ImportFormatError(
            f"{path}: self-reports are read from JSON lines (one report per line)",
            hint="see `annotate import-labels --help` for the keys of a line",
        )
    reports = [_read(path, n, obj, mapping) for n, obj in _jsonl(path)]
    if not reports:
        raise ImportFormatError(f"{path}: no self-reports")
    _resolve(path, store, reports)
    _check_actions(path, store, cb, reports)
    writes: dict[int, LabelWrite] = {}
    first: dict[tuple[str, str, str], ProbeReply] = {}
    for r in reports:
        w = r.write
        key = (w.action_id, w.question, w.coder)
        if key in first:
            if _content(first[key].write) != _content(w):
                raise ImportFormatError(
                    f"{path}:{r.line}: {w.coder}'s {w.question} for action '{w.action_id}' "
                    f"differs from line {first[key].line}",
                    hint="keep one report per action, probe and participant",
                )
            continue
        first[key] = r
        writes[r.line] = w
    with store.db.transaction():
        plan = plan_import(store, cb, writes)
        refuse_overwrites(path, plan, replace=replace, replace_gold=False)
        store.codebooks.register_codebook(loaded)
        store.labels.save_answers(cb, list(writes.values()))
    return LabelImportResult(path, len(writes), plan, sorted({w.coder for w in writes.values()}))
