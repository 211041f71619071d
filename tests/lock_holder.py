"""A second process that holds a project file's write lock: ``python -m tests.lock_holder
DB SECONDS`` takes the lock (BEGIN IMMEDIATE), prints ``locked``, sleeps, then commits."""

from __future__ import annotations

import sqlite3
import sys
import time


def main(db: str, seconds: float) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(seconds)
    conn.execute("COMMIT")
    conn.close()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
