"""One answering model under several names: automatic aliases and suggestions.

The same model is ``shisa-ai/shisa-v2-llama3.1-8b`` in the JA harness, ``hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b``
in Swallow (LiteLLM route), ``shisa-ai__shisa-v2-llama3.1-8b`` in a FastChat answer file name. The alias key
``lib.vocab.model_alias_key`` recognises them (NFKC, case folded, ``__`` read as ``/``, leading LiteLLM provider
routes such as ``hosted_vllm/`` dropped); it lives in ``lib/vocab.py`` beside the storage key ``model_key``, which
joins rows within one harness and is a different, stricter rule.

- Names with the same key are aliased automatically (``auto_alias``): ``model_aliases`` maps each to one
  canonical name (the plainest spelling). The user can undo one (``remove_alias``: a ``removed`` mark that
  auto-aliasing respects) or set any alias by hand (``set_alias``: ``manual``, never overwritten).
- Looser matches are only suggestions (``suggestions``): the same last path segment (``Qwen2-7B-Instruct`` vs
  ``qwen/qwen2-7b-instruct``) or a close spelling (rapidfuzz ratio >= 90 on the keys).
"""
from __future__ import annotations

import re

import pandas as pd
from rapidfuzz import fuzz

from lib.errors import UsageError
from lib.store import Store
from lib.vocab import PROVIDER_PREFIXES, model_alias_key

SUGGEST_MIN_RATIO = 90.0
_DIGITS = re.compile(r"\d+")


def _plainness(name: str) -> tuple:
    """Sort key choosing the canonical spelling of a group: no provider route, '/' not '__', short."""
    routed = name.split("/")[0].casefold() in PROVIDER_PREFIXES and "/" in name
    return (routed, "__" in name, len(name), name)


def stored_models(store: Store) -> list[str]:
    with store.read() as cur:
        rows = cur.execute("SELECT DISTINCT model FROM single_judgments UNION SELECT DISTINCT model FROM answers "
                           "UNION SELECT DISTINCT model_1 FROM pair_judgments UNION SELECT DISTINCT model_2 "
                           "FROM pair_judgments").fetchall()
    return sorted(r[0] for r in rows if r[0])


def alias_table(store: Store) -> dict[str, tuple[str, str]]:
    """name -> (canonical, method): the alias table in one read (``names_for(..., table=)`` takes it)."""
    with store.read() as cur:
        return {n: (c, m) for n, c, m in cur.execute("SELECT name, canonical, method FROM model_aliases").fetchall()}


def auto_alias(store: Store, names: list[str] | None = None) -> int:
    """Alias every stored name to the plainest name with the same ``model_alias_key``. Manual aliases and
    removed marks stay. Returns the number of automatic aliases now in the table."""
    names = stored_models(store) if names is None else names
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(model_alias_key(n), []).append(n)
    def write(cur) -> int:  # Store.transaction: may run again on a DuckLake store
        kept = {n for (n,) in cur.execute("SELECT name FROM model_aliases WHERE method <> 'auto'").fetchall()}
        cur.execute("DELETE FROM model_aliases WHERE method = 'auto'")
        rows = []
        for members in groups.values():
            members = sorted(set(members), key=_plainness)
            if len(members) < 2:
                continue
            canonical = members[0]
            rows.extend((n, canonical) for n in members[1:] if n not in kept)
        if rows:
            cur.executemany("INSERT INTO model_aliases (name, canonical, method) VALUES (?, ?, 'auto')", rows)
        return len(rows)

    return store.transaction(write)


def canonical(store: Store, name: str) -> str:
    """The canonical name of ``name`` (itself if it has no alias)."""
    table = alias_table(store)
    return _resolve(table, name)


def canonical_map(store: Store, names=None) -> dict[str, str]:
    """``canonical`` for many names (default: every stored model) with one read of the alias table."""
    table = alias_table(store)
    return {n: _resolve(table, n) for n in (stored_models(store) if names is None else names)}


def _resolve(table: dict[str, tuple[str, str]], name: str) -> str:
    seen = set()
    while name in table and table[name][1] != "removed" and table[name][0] != name and name not in seen:
        seen.add(name)
        name = table[name][0]
    return name


def names_for(store: Store, name: str, known: list[str] | None = None,
              table: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """Every stored name that means the same model as ``name`` (through aliases), ``name`` included
    when it is stored. A name not stored is matched by its canonical or, failing that, by ``model_alias_key``.
    ``table`` (``alias_table``) saves reading the aliases again when several names are looked up."""
    table = alias_table(store) if table is None else table
    known = stored_models(store) if known is None else known
    target = _resolve(table, name)
    same = [n for n in known if _resolve(table, n) == target]
    if not same:  # e.g. "SHISA-AI/shisa-v2-llama3.1-8b": no such stored name, nothing aliased to it
        key = model_alias_key(name)
        same = [n for n in known if model_alias_key(_resolve(table, n)) == key or model_alias_key(n) == key]
    return sorted(set(same))


def set_alias(store: Store, name: str, canonical_name: str) -> str:
    """``name`` means ``canonical_name`` (manual; never overwritten by auto-aliasing). Setting an alias that
    already exists is not an error. Returns the canonical name stored (resolved through existing aliases)."""
    name, canonical_name = (name or "").strip(), (canonical_name or "").strip()
    if not name or not canonical_name:
        raise UsageError("aliases set needs a NAME and a CANONICAL name.")
    table = alias_table(store)
    target = _resolve(table, canonical_name)
    if target == name and name != canonical_name:
        raise UsageError(f"{canonical_name!r} is already an alias of {name!r}; setting {name!r} -> "
                         f"{canonical_name!r} would make a loop. Remove that alias first.")
    def write(cur) -> None:  # no INSERT OR REPLACE: a DuckLake store has no primary keys
        cur.execute("DELETE FROM model_aliases WHERE name = ?", [name])
        cur.execute("INSERT INTO model_aliases (name, canonical, method) VALUES (?, ?, 'manual')", [name, target])
        # names that pointed at ``name`` now point at its canonical too
        cur.execute("UPDATE model_aliases SET canonical = ? WHERE canonical = ? AND name <> ?", [target, name, name])

    store.transaction(write)
    return target


def remove_alias(store: Store, name: str) -> bool:
    """Undo the alias of ``name``: it stands for itself again, and auto-aliasing leaves it so."""
    table = alias_table(store)
    if name not in table or table[name][1] == "removed":
        return False
    def write(cur) -> None:
        cur.execute("DELETE FROM model_aliases WHERE name = ?", [name])
        cur.execute("INSERT INTO model_aliases (name, canonical, method) VALUES (?, ?, 'removed')", [name, name])

    store.transaction(write)
    return True


def suggestions(store: Store, names: list[str] | None = None) -> pd.DataFrame:
    """Looser matches to confirm with ``set_alias``: name, canonical, similarity (0-1), why."""
    table = alias_table(store)
    names = stored_models(store) if names is None else names
    canon = sorted({_resolve(table, n) for n in names}, key=_plainness)
    removed = {n for n, (_, m) in table.items() if m == "removed"}
    rows = []
    for i, a in enumerate(canon):
        ka = model_alias_key(a)
        for b in canon[i + 1:]:
            if a in removed or b in removed:  # the user undid this alias: do not offer it again
                continue
            kb = model_alias_key(b)
            last_a, last_b = ka.rsplit("/", 1)[-1], kb.rsplit("/", 1)[-1]
            ratio = fuzz.ratio(ka, kb)
            if last_a == last_b and ka != kb:
                why = "same model name after the organisation"
            elif (ratio >= SUGGEST_MIN_RATIO or fuzz.ratio(last_a, last_b) >= SUGGEST_MIN_RATIO + 5) \
                    and _DIGITS.findall(ka) == _DIGITS.findall(kb):  # 8b vs 70b, v2 vs v3: different models
                why = "similar spelling (the same numbers)"
            else:
                continue
            name, target = sorted((a, b), key=_plainness, reverse=True)
            rows.append({"name": name, "canonical": target, "method": "suggested",
                         "similarity": round(max(ratio, fuzz.ratio(last_a, last_b)) / 100, 4), "why": why})
    return pd.DataFrame(rows, columns=["name", "canonical", "method", "similarity", "why"])


ALIAS_COLUMNS = ["name", "canonical", "method", "similarity", "why"]


def aliases(store: Store, with_suggestions: bool = True) -> pd.DataFrame:
    """Aliases in force (auto and manual) and, after them, suggestions to confirm."""
    with store.read() as cur:
        df = cur.execute("""SELECT name, canonical, method, NULL::DOUBLE AS similarity,
                                   CASE method WHEN 'auto' THEN 'equal after normalising (provider route, __, case)'
                                               ELSE 'set by hand' END AS why
                            FROM model_aliases WHERE method IN ('auto', 'manual') AND name <> canonical
                            ORDER BY canonical, name""").df()
    if with_suggestions:
        sug = suggestions(store)
        if not sug.empty:
            df = pd.concat([df, sug], ignore_index=True) if not df.empty else sug
    return df[ALIAS_COLUMNS].reset_index(drop=True)
