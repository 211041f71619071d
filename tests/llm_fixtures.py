"""Pytest fixtures for the LLM coder: a real chat-completions server on 127.0.0.1.

Either register this module as a plugin (``pytest_plugins = ["tests.llm_fixtures"]`` in the
root conftest) or wrap :func:`running_chat_server` in a local fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.chat_server import ChatServer, ServerState


@contextmanager
def running_chat_server(state: ServerState | None = None) -> Iterator[ChatServer]:
    server = ChatServer(state or ServerState()).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A fresh server per test; steer it through ``chat_server.state``."""
    with running_chat_server() as server:
        yield server
