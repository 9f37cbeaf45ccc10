"""Every reader JudgeLens has, in one list (``READERS``), and the questions the importer asks of them.

Adding a harness: its reader module in this folder (a ``READER = Reader(...)``, see ``base.py``), one line in
``READERS``, its sample folder (``Reader.sample``), its rules in ``lib.harness``; ``tests/ingest/test_reader_contract.py``
then runs the reader over its sample (add its expected counts there).
"""
from __future__ import annotations

from pathlib import Path

from lib.ingest.formats import fastchat, fastchat_samples, fastchat_wide, human, inspect_ai, nejumi, shaberi, swallow
from lib.ingest.formats.base import Claim, Reader

READERS: tuple[Reader, ...] = (
    nejumi.READER,      # before fastchat: FastChat's layout, hashed model ids
    fastchat_samples.READER,   # before fastchat: FastChat's layout, list-valued scores
    fastchat_wide.READER,      # before fastchat: one row per question
    fastchat.READER,
    swallow.READER,
    shaberi.READER,
    inspect_ai.READER,
    human.READER,
)


def claim(path: Path, explicit: bool, *, separate: bool | None = None) -> Claim | None:
    """Which reader's file ``path`` is, or None. ``explicit``: the file was given on its own (not found in a folder):
    readers may then look at its content, and ``content_first`` readers are asked by content before any is asked
    by name. ``separate``: only the readers with (True) or without (False) their own import path."""
    readers = [r for r in READERS if separate is None or r.separate == separate]
    if explicit:
        for r in readers:
            if r.content_first and (c := r.by_content(path, True)):
                return c
    for r in readers:
        if c := r.by_name(path):
            return c
    for r in readers:
        if explicit and r.content_first:
            continue  # asked already
        if c := r.by_content(path, explicit):
            return c
    return None


def reader(name: str) -> Reader:
    return next(r for r in READERS if r.name == name)


def kind_order() -> dict[str, int]:
    """Import order of the kinds (the readers' order, each reader's kinds in its own order): prompts and
    questions before the answers and judgments that refer to them."""
    return {k: i for i, k in enumerate(k for r in READERS for k in r.kinds)}


def known_files() -> str:
    """The files the (table) readers read, in words."""
    return " and ".join(r.describes for r in READERS if not r.separate)
