"""`annotate audit`: run a rule set over the stored actions and store its answers as a coder.

The actions are read in session order (one episode at a time, a cursor over the file) and
the answers written in batches inside one transaction: the audit is stored whole or not at
all. Each label's ``meta`` holds the provenance: rule, version, parameters, and why (the
request unit read, the matching action, whether the partner acted after the window).
Running it again with other parameters brings every label up to date.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import Any

import msgspec

from annotate.codebook import Answer, LoadedCodebook, find_codebook
from annotate.coders import RULE_PREFIX
from annotate.errors import UsageError
from annotate.rules import RULE_SETS, tgco
from annotate.store import LabelWrite, Store

RULE_SOURCE = "rule"
decode = msgspec.json.Decoder(dict).decode
BATCH = 20_000


def rule_coder(name: str) -> str:
    return RULE_PREFIX + name


@dataclass
class AuditResult:
    rule: str
    coder: str
    version: str
    params: dict[str, Any]
    codebook: str
    codebook_hash: str
    episodes: int = 0
    events: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    changed: int = 0

    @property
    def labelled(self) -> int:
        return sum(self.counts.values())


def _records(rows: Iterator[tuple[Any, ...]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """One episode (session) at a time: its events as records the rule reads paths of."""
    for session, group in groupby(rows, key=itemgetter(1)):
        records = []
        for aid, _, seq, participant, role, action_type, content, meta in group:
            record = decode(meta) if meta and meta != "{}" else {}
            record.update(
                id=aid, seq=seq, type=action_type, content=content, agent=participant or role
            )
            records.append(record)
        yield session, records


def run_audit(
    store: Store,
    rules: str,
    pairs: Mapping[str, str],
    codebook: LoadedCodebook | None = None,
) -> AuditResult:
    """Code every message of every episode with rule set ``rules``; store the answers as
    coder ``rule:NAME`` (codebook ``tgco`` unless another version is given)."""
    if rules not in RULE_SETS:
        raise UsageError(f"--rules: unknown rule set '{rules}'", hint="rule sets: tgco")
    try:
        params = tgco.Params.parse(pairs)
    except ValueError as exc:
        raise UsageError(f"--param: {exc}") from None
    loaded = codebook or find_codebook(tgco.CODEBOOK)
    book = loaded.codebook
    question = book.question(tgco.QUESTION)
    missing = [o for o in tgco.OUTCOMES if o not in question.codes]
    if missing:
        raise UsageError(
            f"codebook {book.name} has no code {', '.join(missing)} for {tgco.QUESTION}",
            hint="the rule answers with the codes of codebooks/tgco.yaml",
        )
    if not book.applies(tgco.MESSAGE) or not question.applies(tgco.MESSAGE):
        raise UsageError(f"codebook {book.name}: {tgco.QUESTION} does not apply to messages")
    if not store.count_actions():
        raise UsageError("no actions to audit", hint="import a trace first (annotate import)")
    coder = rule_coder(rules)
    result = AuditResult(rules, coder, tgco.VERSION, params.to_dict(), book.name, book.version_hash)
    provenance = {"rule": rules, "version": tgco.VERSION, "params": result.params}
    answers = {o: Answer(o) for o in tgco.OUTCOMES}
    writes: list[LabelWrite] = []
    read = tgco.Reader(params).event
    with store.transaction():
        store.register_codebook(loaded)
        with store.trace_rows() as rows:
            for _, records in _records(rows):
                result.episodes += 1
                result.events += len(records)
                events = [read(r) for r in records]
                for d in tgco.audit_episode(events, params.w):
                    result.counts[d.outcome] += 1
                    meta = {
                        **provenance,
                        "reason": d.reason,
                        "request": list(d.request) if d.request else None,
                        "match": d.match,
                        "delayed": d.delayed,
                    }
                    writes.append(
                        LabelWrite(
                            d.action_id, tgco.QUESTION, coder, answers[d.outcome], RULE_SOURCE, meta
                        )
                    )
                if len(writes) >= BATCH:
                    result.changed += store.save_answers(book, writes, provenance=True)
                    writes = []
        result.changed += store.save_answers(book, writes, provenance=True)
    return result
