"""What ``llm-label`` codes: each item with the actions around it (:class:`Sessions`), the
target ids read from SQL a page at a time (:class:`TargetIds`), the request cache read a
chunk ahead (:class:`PrefetchedCache`)."""

from __future__ import annotations

import itertools
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from annotate.models import Action
from llm_coder.prompt import (
    Item,
)

if TYPE_CHECKING:
    from llm_coder.ports import LLMStore

T = TypeVar("T")


class Sessions:
    """Each item's action and the actions before it in its session (its context), read by
    index when asked for. A session with many items in one chunk (``--target all`` streams
    them in session order) is read once, whole; only the last few such are held."""

    KEEP_SESSIONS = 4
    CHUNK = 500
    WHOLE_SESSION = 16
    """Items of one session in a chunk from which its actions are read in one query."""

    def __init__(self, store: LLMStore, context: int, lookahead: int = 0, show: Sequence[str] = ()):
        self.store = store
        self.context = context
        self.lookahead = lookahead
        self.show = tuple(show)
        self._sessions: OrderedDict[str, tuple[list[Action], dict[str, int]]] = OrderedDict()

    def action(self, action_id: str) -> Action:
        return self.store.action(action_id)

    def item(self, action_id: str) -> Item:
        return self._item(self.action(action_id))

    def items(self, ids: Iterable[str]) -> Iterator[Item]:
        """The items of ``ids`` in order, their actions read a chunk at a time."""
        for chunk in chunked(ids, self.CHUNK):
            actions = self.store.actions_by_ids(chunk)
            if self.context or self.lookahead:
                per_session = Counter(a.session for a in actions)
                for session, n in per_session.items():
                    if n >= self.WHOLE_SESSION and session not in self._sessions:
                        self._hold(session)
            for action in actions:
                yield self._item(action)

    def _hold(self, session: str) -> None:
        actions = self.store.session_actions(session)
        self._sessions[session] = (actions, {a.id: i for i, a in enumerate(actions)})
        while len(self._sessions) > self.KEEP_SESSIONS:
            self._sessions.popitem(last=False)

    def _item(self, action: Action) -> Item:
        held = self._sessions.get(action.session)
        if held is None:
            around: list[Action] = []
            if self.context or self.lookahead:
                around = self.store.context(action, before=self.context, after=self.lookahead)
            before = tuple(a for a in around if a.seq < action.seq)
            after = tuple(a for a in around if a.seq > action.seq)
            return Item(action, before, after, self.show)
        self._sessions.move_to_end(action.session)
        actions, index = held
        i = index[action.id]
        return Item(
            action,
            tuple(actions[max(0, i - self.context) : i]),
            tuple(actions[i + 1 : i + 1 + self.lookahead]),
            self.show,
        )


def chunked(values: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for value in values:
        chunk.append(value)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class PrefetchedCache:
    """A run's request cache with the replies of the next chunk of requests read ahead in
    one query; any other request goes to the cache as usual."""

    def __init__(self, store: LLMStore, cache: Any):
        self.store = store
        self.cache = cache
        self._ready: dict[str, Any] = {}

    def prefetch(self, hashes: Iterable[str]) -> None:
        self._ready.update(self.store.cached_replies(list(hashes)))

    def get(self, request_hash: str) -> Any:
        reply = self._ready.pop(request_hash, None)
        return reply if reply is not None else self.cache.get(request_hash)

    def put(self, record: Any) -> None:
        self.cache.put(record)


class TargetIds:
    """The ids of the actions ``llm-label`` codes after validation, read from SQL a page at
    a time: never all in memory. ``len()`` is one count query."""

    PAGE = 2000

    def __init__(
        self,
        store: LLMStore,
        split: str,
        sample: str | None,
        types: list[str] | None,
        left_of_run: int | None = None,
    ):
        self.store = store
        self.split = split
        self.sample = sample
        self.types = types
        self.left_of_run = left_of_run
        """A resumed run: only the targets it has not stored (an anti-join in SQL)."""
        self._len: int | None = None

    def __len__(self) -> int:
        if self._len is None:
            self._len = self.store.count_targets(
                self.split, self.sample, self.types, self.left_of_run
            )
        return self._len

    def __iter__(self) -> Iterator[str]:
        after: tuple[Any, ...] | None = None
        while True:
            page = self.store.target_page(
                self.split, self.sample, self.types, after, self.PAGE, self.left_of_run
            )
            for row in page:
                yield row[0]
            if len(page) < self.PAGE:
                return
            after = tuple(page[-1][1:])

    def every(self, step: int) -> list[str]:
        """Every ``step``-th id in id order (ids are random, so a sample of the targets
        spread over every session), read from an index without visiting the actions."""
        ids = self.store.target_ids_unordered(self.split, self.sample, self.types)
        return list(itertools.islice(ids, 0, None, step))
