"""The single-bracket flag (``single_judgments.single_bracket``): written by every insert from
``lib.vocab.single_bracket_only_sql``, filled once in a store made before it (file and DuckLake), carried by the
lake migration, and always equal to the regex the readers used to run over every rationale."""
from __future__ import annotations

import json

import pytest

from conftest import lake_target
from lib.analysis import agreement, flags
from lib.ingest.importer import ingest
from lib.store import Store, migrate
from lib.store.schema import derived_meta_key, upgrade_derived
from lib.vocab import DOUBLE_BRACKET, SINGLE_BRACKET, fastchat_rating, re2_digits

# rationale -> flagged (no [[N]] but a [N]: FastChat's backup regex read the rating from it)
RATIONALES = {
    "[1] The answer is correct.\n[2] It is well written.": True,   # list markers read as the rating
    "Good answer. Rating: [8]": True,
    "Score [8.5] overall": True,
    "Rating: [[8]": True,                                           # a broken double bracket holds a [8]
    "Fine. Rating: [[7]] (see [1])": False,                         # the double bracket wins
    "Rating: [[8.5]]": False,
    "Rating: [[8]]": False,
    "no brackets at all": False,
    "Rating: [ 8 ]": False,
    "評価：[８]": True,                                              # FastChat's \\d is any Unicode digit
    "評価：[[８]]": False,
    "": False,
}
KEY = "single_judgments.single_bracket"


def judgment_file(folder, bad_line: bool = False):
    path = folder / "b" / "model_judgment" / "gpt-4_single.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"question_id": q, "model": "m", "judge": ["gpt-4", "single-v1"], "score": 5, "turn": 1,
                         "judgment": text}) for q, text in enumerate(RATIONALES)]
    if bad_line:
        lines.insert(3, "{not json")
    path.write_text("\n".join(lines) + "\n")
    return path


def stored(store: Store) -> list[bool]:
    """The flag per rationale (RATIONALES order); NULL reads as false."""
    with store.read() as cur:
        return [r[0] for r in cur.execute("SELECT coalesce(single_bracket, false) FROM single_judgments "
                                          "ORDER BY question_id::INT").fetchall()]


def by_regex(store: Store) -> list[bool]:
    """What parse_failures and the flags counted before the flag was stored: the regex over every rationale."""
    with store.read() as cur:
        return [r[0] for r in cur.execute(
            "SELECT coalesce(NOT regexp_matches(rationale, $double) AND regexp_matches(rationale, $single), false) "
            "FROM single_judgments ORDER BY question_id::INT",
            {"double": re2_digits(DOUBLE_BRACKET), "single": re2_digits(SINGLE_BRACKET)}).fetchall()]


EXPECTED = list(RATIONALES.values())


def test_every_import_path_stores_the_regex_flag(tmp_path):
    for bad_line in (False, True):  # the fast path; a bad line sends the file to the line reader
        store = Store(tmp_path / f"s{bad_line}.duckdb")
        ingest(store, [judgment_file(tmp_path / f"in{bad_line}", bad_line)], skip_bad_lines=bad_line)
        assert stored(store) == by_regex(store) == EXPECTED
        # FastChat's own rule (Python) agrees on these texts
        assert [(fastchat_rating(t) or ("",))[0] == "single_bracket_fallback" for t in RATIONALES] == EXPECTED
        pf = agreement.parse_failures(store)
        assert pf["single_bracket_only"].tolist() == [sum(EXPECTED)] == [5]
        found = flags.single_bracket_ratings(store)
        assert sorted(found["question_id"].astype(int)) == [i for i, f in enumerate(EXPECTED) if f]
        store.close()


def make_old(store: Store) -> None:
    """What a store made before the flag looks like: no column, no meta key."""
    with store.write() as cur:
        cur.execute("ALTER TABLE single_judgments DROP COLUMN single_bracket")
        cur.execute("DELETE FROM meta WHERE key = ?", [derived_meta_key("single_judgments", "single_bracket")])


def test_a_store_made_before_the_flag_gets_it_once(tmp_path):
    path = tmp_path / "old.duckdb"
    store = Store(path)
    ingest(store, [judgment_file(tmp_path)])
    make_old(store)
    store.close()
    store = Store(path, read_only=True)  # the CLI's reading commands upgrade it too
    assert stored(store) == EXPECTED
    store.close()
    make_old(Store(path))
    store = Store(path)
    assert stored(store) == EXPECTED
    with store.write() as cur:
        assert cur.execute("SELECT value FROM meta WHERE key = ?", [derived_meta_key(*KEY.split("."))]).fetchone()
        assert upgrade_derived(cur) is False  # once: the rule's SQL is in meta
    store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_lakes_get_the_flag_by_migration_and_by_upgrade(kind, tmp_path, request):
    source = tmp_path / "file.duckdb"
    store = Store(source)
    ingest(store, [judgment_file(tmp_path)])
    make_old(store)  # a file from before the flag: the migration computes it anew
    store.close()
    target, data = lake_target(kind, tmp_path, request)
    lake = Store(target, data_path=data)
    migrate(source, lake)
    assert stored(lake) == by_regex(lake) == EXPECTED
    with lake.write() as cur:  # a lake made before the flag
        cur.execute("ALTER TABLE single_judgments DROP COLUMN single_bracket")
        cur.execute("DELETE FROM meta WHERE key = ?", [derived_meta_key(*KEY.split("."))])
    lake.close()
    lake = Store(target, data_path=data)
    assert stored(lake) == EXPECTED
    assert agreement.parse_failures(lake)["single_bracket_only"].tolist() == [5]
    lake.close()

