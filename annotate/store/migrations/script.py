"""Running a migration's SQL inside the transaction the runner opened for it."""

from __future__ import annotations

import sqlite3


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run the statements of ``script`` one by one inside the current transaction.

    ``executescript`` would COMMIT first, breaking the one-transaction-per-migration rule;
    the statements are cut where :func:`sqlite3.complete_statement` says one ends (a
    ``;`` inside a trigger's body or a string does not end it)."""
    statement = ""
    for piece in script.split(";"):
        statement += piece + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \t\r\n;"):
                conn.execute(statement)
            statement = ""
    if statement.strip(" \t\r\n;"):
        conn.execute(statement)
