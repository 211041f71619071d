"""Every byte from a provider is parsed defensively: a bad result line is that item's error,
integers are range-checked, and no reply that was paid for is lost to a bad count."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from llm_coder.batch import BadLine, parse_result_line
from llm_coder.batch_api import BatchAPIError, BatchState
from llm_coder.batch_import import result_lines
from llm_coder.calls import read_completion

COMPLETION = {"choices": [{"message": {"content": '{"move": "instruct"}'}}]}


@pytest.mark.parametrize(
    ("usage", "counts"),
    [
        ({"prompt_tokens": 12, "completion_tokens": 3}, (12, 3)),
        ({"prompt_tokens": 2**63, "completion_tokens": 2**70}, (0, 0)),
        ({"prompt_tokens": -5, "completion_tokens": 1.5}, (0, 0)),
        ({"prompt_tokens": "12", "completion_tokens": True}, (0, 0)),
        ("not an object", (0, 0)),
    ],
)
def test_bad_token_counts_never_cost_the_reply(usage, counts) -> None:
    text, tokens_in, tokens_out = read_completion({**COMPLETION, "usage": usage})
    assert text == '{"move": "instruct"}' and (tokens_in, tokens_out) == counts


def test_result_lines_nested_too_deep_or_odd_are_per_line() -> None:
    with pytest.raises(BadLine):
        parse_result_line("[" * 5000 + "]" * 5000)
    odd = {"custom_id": "a", "response": {"status_code": "200", "body": COMPLETION}}
    line = parse_result_line(json.dumps(odd))
    assert line.custom_id == "a" and "status_code '200' is not a number" in line.error
    big = {"custom_id": "b", "response": {"status_code": 200,
           "body": {**COMPLETION, "usage": {"prompt_tokens": 2**64}}}}  # fmt: skip
    assert parse_result_line(json.dumps(big)).tokens_in == 0


def test_a_line_that_is_not_utf8_is_one_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"custom_id": "a"}\n{"custom\xff": 1}\n{"custom_id": "c"}\n')
    lines = list(result_lines(path))
    assert len(lines) == 3 and json.loads(lines[2]) == {"custom_id": "c"}
    with pytest.raises(BadLine):
        parse_result_line(lines[1])


def test_a_batch_of_odd_types_is_read_or_named() -> None:
    odd = SimpleNamespace(
        id="batch-1", status="completed", request_counts=SimpleNamespace(
            total="72", completed=2**64, failed=-1),
        errors=SimpleNamespace(data="oops"), output_file_id=5, error_file_id=None,
    )  # fmt: skip
    state = BatchState.of(odd)
    assert (state.total, state.completed, state.failed) == (0, 0, 0)
    assert state.output_file_id is None and state.errors == ()
    with pytest.raises(BatchAPIError, match="not a batch"):
        BatchState.of("<html>Bad gateway</html>")
