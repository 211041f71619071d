"""A corpus coding imported with the data (`import --labels-as`) is not a coder of the file:
the first person to code it needs no --new-coder; once someone has, a new name does."""

from __future__ import annotations

import socket

from annotate.codebook import Answer, find_codebook
from annotate.store import Store
from tests.test_agree_choice import write_dialogue


def busy_port() -> socket.socket:
    """A listening socket: `code --web` on its port stops right after the coder check."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_the_first_coder_after_a_corpus_import_needs_no_flag(cli, db_path, tmp_path) -> None:
    dialogue = write_dialogue(tmp_path, n=12)
    r = cli("import", str(dialogue), "--labels-as", "hcrc", "--codebook", "hcrc_moves")
    assert r.exit_code == 0, r.output
    assert cli("sample", "--n", "6", "--seed", "1", "--name", "main").exit_code == 0
    with Store(db_path) as s:
        assert [tuple(r) for r in s.db.query("SELECT DISTINCT coder, source FROM labels")] == [
            ("hcrc", "corpus")
        ]
    with busy_port() as sock:
        port = str(sock.getsockname()[1])
        code = ("code", "--codebook", "traum", "--web", "--port", port)
        r = cli(*code, "--coder", "ana")
        assert r.exit_code == 1
        assert r.stderr.splitlines()[0] == f"error: port {port} on 127.0.0.1 is already in use"
        # ana answers one item in the coding screen: now the file has a coder
        with Store(db_path) as s:
            item = s.samples.sample_ids("main")[0]
            s.labels.save_answer(
                item, find_codebook("traum").codebook, "act", "ana", Answer("Initiate")
            )
        r = cli(*code, "--coder", "anna")
        assert r.exit_code == 1
        assert r.stderr.splitlines()[0] == (
            "error: unknown coder 'anna' (existing coders: ana; corpus codings: hcrc)"
        )
        r = cli(*code, "--coder", "hcrc")  # continuing a coder with labels is not refused
        assert "already in use" in r.stderr
        r = cli(*code, "--coder", "ben", "--new-coder")
        assert "already in use" in r.stderr
    with Store(db_path) as s:
        assert s.labels.corpus_coders() == ["hcrc"]
        assert s.labels.coders("traum") == ["ana"]
