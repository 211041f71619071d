"""The CLI starts NumPy with one OpenBLAS thread unless the user chose a number (see
annotate.cli.single_threaded_blas): the thread pool is half of NumPy's import time."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = (
    "import os, sys\n"
    "from annotate.cli import main\n"
    "sys.argv = ['annotate', '--version']\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
)


def _threads_seen(env: dict[str, str]) -> str:
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()[-1]


def test_the_cli_asks_for_one_blas_thread() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _threads_seen(env) == "1"


def test_a_users_choice_is_kept() -> None:
    assert _threads_seen({**os.environ, "OPENBLAS_NUM_THREADS": "3"}) == "3"
