"""Work claims (table ``work_claims``): one holder at a time for a piece of work, across threads, processes and
machines (``Store.claim`` / ``Store.release``)."""
from __future__ import annotations

import os
import time

CLAIM_STALE_S = 6 * 3600  # a claim held from another machine counts as abandoned after this long
_LIVE_CLAIMS: set[str] = set()  # claims this process holds and has not released


def _claim_alive(host: str, pid: int, claimed_at: float, token: str) -> bool:
    """Whether a claim's holder may still be working: this process (a claim it has not released), another live
    process on this host, or another host within ``CLAIM_STALE_S``."""
    import socket

    if host != socket.gethostname():
        return time.time() - claimed_at < CLAIM_STALE_S
    if pid == os.getpid():
        return token in _LIVE_CLAIMS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim(store, name: str, note: str = "") -> tuple[str | None, dict | None]:
    """Take the claim ``name`` in ``store`` (a ``Store``): ``(token, None)``, or ``(None, holder)`` while a live
    holder has it (a dict with ``host``, ``pid``, ``claimed_at``, ``note``). Atomic: on a DuckDB file under the write lock, on
    DuckLake by the write clock (two claimers at once conflict; the re-run sees the winner). A holder is dead
    when its process on this host is gone, or, from another host, after ``CLAIM_STALE_S``. Give the claim
    back with ``release``."""
    import socket
    import uuid

    host, pid = socket.gethostname(), os.getpid()
    token = f"{host}:{pid}:{uuid.uuid4().hex}"

    def take(cur):
        holders = cur.execute("SELECT token, host, pid, claimed_at, note FROM work_claims WHERE claim = ?",
                              [name]).fetchall()
        for tok, h, p, at, n in holders:
            if _claim_alive(h, int(p), float(at), tok):
                return None, {"host": h, "pid": int(p), "claimed_at": float(at), "note": n}
        cur.execute("DELETE FROM work_claims WHERE claim = ?", [name])  # dead holders' claims
        cur.execute("INSERT INTO work_claims VALUES (?, ?, ?, ?, ?, ?)", [name, token, host, pid, time.time(), note])
        return token, None

    got, holder = store.transaction(take)
    if got:
        _LIVE_CLAIMS.add(got)
    return got, holder


def release(store, name: str, token: str) -> None:
    _LIVE_CLAIMS.discard(token)
    store.transaction(lambda cur: cur.execute("DELETE FROM work_claims WHERE claim = ? AND token = ?",
                                              [name, token]))
