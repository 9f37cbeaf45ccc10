"""Linked benches and model aliases: exact / edited / fuzzy links, manual links that survive, id types, speed."""
from __future__ import annotations

import json
import random

import pandas as pd
import pytest

from lib import vocab
from lib.analysis import aliases as A
from lib.analysis import linking as L
from lib.cli import main
from lib.errors import UsageError


def put_questions(store, bench: str, questions: list[tuple[str, str, list[str]]]) -> None:
    with store.write() as cur:
        cur.executemany("INSERT INTO questions (source_id, bench, question_id, category, turns) VALUES (1, ?, ?, ?, ?)",
                        [(bench, q, c, t) for q, c, t in questions])


def by_a(df) -> dict:
    return {a: (b, m, s, e) for a, b, m, s, e in zip(df.question_id_a, df.question_id_b, df.method, df.similarity,
                                                      df.edited_turns)}


Q1 = ["三角形の頂点が点 (0, 0)、(-1, 1)、(3, 3) にあるとき、その三角形の面積は何ですか？", "その三角形を外接する円の面積は何ですか？"]
Q2 = ["日本の首都について、歴史的な背景を含めて三段落で説明してください。", "それを小学生向けに書き直してください。"]
Q3 = ["次の文章から登場人物の名前をすべて抜き出し、JSON形式で出力してください。", "年齢も追加してください。"]
Q4 = ["あなたはシェフです。おすすめの冬の料理を紹介してください。", "その料理の材料を箇条書きにしてください。"]


def test_exact_edited_fuzzy_and_unlinked(store):
    put_questions(store, "ja", [("1", "math", Q1), ("2", "writing", Q2), ("3", "extraction", Q3),
                                ("4", "roleplay", Q4)])
    put_questions(store, "fork", [
        # NFKC (full-width digits and parentheses) and whitespace differences only: exact
        ("1", "math", ["三角形の頂点が点　（０, ０）、(-1, 1)、(3,  3) にあるとき、その三角形の面積は何ですか？ ",
                       "その三角形を外接する円の面積は何ですか？"]),
        # same id, turn 2 re-translated: edited
        ("2", "writing", [Q2[0], "それを小学生にもわかるように書き換えてください。"]),
        # a different id, same question slightly reworded: fuzzy
        ("13", "extraction", ["次の文章から登場人物の名前を全て抜き出し、JSON形式で出力して下さい。", "年齢も追加してください。"]),
        # nothing like Q4
        ("9", "stem", ["光合成の仕組みを説明してください。", "葉緑体の役割は？"]),
    ])
    counts = L.link_benches(store, "ja", "fork")
    assert counts == {"exact": 1, "edited": 1, "fuzzy": 1}
    got = by_a(L.links(store, "ja", "fork"))
    assert got["1"] == ("1", "exact", 1.0, [])
    assert got["2"][:2] == ("2", "edited") and got["2"][3] == [2] and 0.35 <= got["2"][2] < 1
    assert got["3"][:2] == ("13", "fuzzy") and got["3"][3] == [1] and got["3"][2] >= 0.6
    assert "4" not in got
    # the same links seen from the other side
    flipped = by_a(L.links(store, "fork", "ja"))
    assert flipped["13"][:2] == ("3", "fuzzy") and flipped["1"][:2] == ("1", "exact")
    # both sides from one read, each the frame ``links`` gives (what a page keeps for either pick of A and B)
    both = L.links_both_ways(store, "fork", "ja")
    assert set(both) == {("ja", "fork"), ("fork", "ja")}
    for (a, b), df in both.items():
        pd.testing.assert_frame_equal(df, L.links(store, a, b))
    # the diff of an edited link shows the changed characters of turn 2 only
    diff = L.link_diff(store, "ja", "2", "fork", "2")
    assert [d["same"] for d in diff] == [True, False]
    assert any(op == "insert" and "わかる" in text for op, text in diff[1]["ops"])


def test_manual_links_survive_relinking_and_removed_links_stay_removed(store):
    put_questions(store, "ja", [("1", "math", Q1), ("2", "writing", Q2)])
    put_questions(store, "fork", [("1", "math", Q1), ("2", "writing", Q2)])
    L.link_benches(store, "ja", "fork")
    # the user says ja:1 is fork:2 (a deliberate mismatch) and re-links
    link = L.set_link(store, "ja:1", "fork:2")
    assert link["method"] == "manual" and link["edited_turns"] == [1, 2]
    L.link_benches(store, "ja", "fork")
    got = by_a(L.links(store, "ja", "fork"))
    assert got == {"1": ("2", "manual", link["similarity"], [1, 2])}  # ja:2 and fork:1 stay free for the user
    assert L.remove_link(store, "fork:2", "ja:1") and not L.remove_link(store, "ja:1", "fork:2")
    L.link_benches(store, "ja", "fork")
    got = by_a(L.links(store, "ja", "fork"))  # the removed pair is not made again; the true links come back
    assert got == {"1": ("1", "exact", 1.0, []), "2": ("2", "exact", 1.0, [])}
    assert L.remove_link(store, "ja:1", "fork:1")
    L.link_benches(store, "ja", "fork")
    assert "1" not in by_a(L.links(store, "ja", "fork"))  # an automatic link the user removed stays removed
    with pytest.raises(UsageError, match="BENCH:QUESTION_ID"):
        L.set_link(store, "ja1", "fork:2")
    with pytest.raises(UsageError, match="No question '99'"):
        L.set_link(store, "ja:99", "fork:2")


def test_question_id_types(store):
    put_questions(store, "ja", [("007", "math", Q1), ("8", "writing", Q2), ("x-1", "stem", Q3)])
    put_questions(store, "fork", [("7", "math", [Q1[0], Q1[1] + "また、その半径は？"]), ("08", "writing", Q2),
                                  ("x-1", "stem", [Q3[0], "年齢を追加して。"])])
    L.link_benches(store, "ja", "fork")
    got = by_a(L.links(store, "ja", "fork"))
    assert got["007"][:2] == ("7", "edited")     # "007" and "7" are the same id
    assert got["8"][:2] == ("08", "exact")
    assert got["x-1"][:2] == ("x-1", "edited")   # text ids too
    link = L.set_link(store, "ja:7", "fork:8")  # a user may write 7 for "007"; stored as fork < ja
    assert (link["bench_a"], link["question_id_a"], link["bench_b"], link["question_id_b"]) == ("fork", "08", "ja", "007")


def test_equal_texts_prefer_the_same_id(store):
    put_questions(store, "a", [("1", "x", Q1), ("2", "x", Q1)])
    put_questions(store, "b", [("2", "x", Q1), ("1", "x", Q1)])
    L.link_benches(store, "a", "b")
    assert {k: v[0] for k, v in by_a(L.links(store, "a", "b")).items()} == {"1": "1", "2": "2"}


def _text(rng: random.Random, n: int) -> str:
    pool = "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをん日本語文章問題説明 1 2"
    return "".join(rng.choice(pool) for _ in range(n))


def test_linking_1000_questions_compares_all_pairs_only_for_what_is_left(store, monkeypatch):
    # Fast because of how the work is cut, asserted on the work itself: exact links come from a hash of the
    # texts, edited links from the same id (one similarity each), and only what those two leave goes to the
    # all-pairs fuzzy scorer (rapidfuzz's cdist): 200 x 200 here, not 1,000 x 1,000.
    rng = random.Random(7)
    qa, qb = [], []
    for i in range(1000):
        turns = [_text(rng, rng.randint(80, 300)), _text(rng, rng.randint(30, 150))]
        qa.append((str(i + 1), "writing", turns))
        kind = i % 10
        if kind < 6:   # exact after normalisation (whitespace and full-width spaces added)
            qb.append((str(i + 1), "writing", ["  " + turns[0].replace(" ", "\u3000 ").replace("1", "１"),
                                               turns[1] + "\n"]))
        elif kind < 8:  # edited: same id, one turn partly re-written
            qb.append((str(i + 1), "writing", [turns[0], turns[1][: len(turns[1]) // 2] + _text(rng, 20)]))
        elif kind == 8:  # fuzzy: another id, a few characters changed
            t0 = list(turns[0])
            for k in rng.sample(range(len(t0)), 5):
                t0[k] = "文"
            qb.append((str(5000 + i), "writing", ["".join(t0), turns[1]]))
        else:  # a question the other bench does not have
            qb.append((str(9000 + i), "writing", [_text(rng, 200), _text(rng, 80)]))
    put_questions(store, "big_a", qa)
    put_questions(store, "big_b", qb)
    ratios, grids = [], []
    real_ratio, real_cdist = L.fuzz.ratio, L.process.cdist

    def ratio(a, b, **kw):
        ratios.append(1)
        return real_ratio(a, b, **kw)

    def cdist(queries, choices, **kw):
        grids.append((len(queries), len(choices)))
        return real_cdist(queries, choices, **{**kw, "scorer": real_ratio})

    monkeypatch.setattr(L.fuzz, "ratio", ratio)
    monkeypatch.setattr(L.process, "cdist", cdist)
    counts = L.link_benches(store, "big_a", "big_b")
    assert counts == {"exact": 600, "edited": 200, "fuzzy": 100}
    assert len(ratios) == 200          # one similarity per same-id pair left after the exact step
    assert grids == [(200, 200)]       # the 100 fuzzy and 100 unmatched questions of each side


# ----------------------------------------------------------------------------------------------
# Aliases

@pytest.mark.parametrize("name,key", [
    ("hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.1-8b"),
    ("shisa-ai__shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.1-8b"),
    ("openai/gpt-4o", "gpt-4o"),
    ("litellm_proxy/hosted_vllm/Qwen/Qwen3-8B", "qwen/qwen3-8b"),
    ("Ｑｗｅｎ/Qwen3-8B", "qwen/qwen3-8b"),
    ("hosted_vllm", "hosted_vllm"),          # a bare provider word is a name, not a route
])
def test_model_alias_key(name, key):
    assert vocab.model_alias_key(name) == key


def test_one_home_for_model_name_keys():
    """Both model-name keys live in lib/vocab.py; aliases uses the alias key from there, keeps no copy of its own."""
    assert not hasattr(A, "model_key") and A.model_alias_key is vocab.model_alias_key
    assert A.PROVIDER_PREFIXES is vocab.PROVIDER_PREFIXES
    # the storage key is stricter: it keeps provider routes and does not NFKC-fold
    assert vocab.model_key("hosted_vllm/Org/M") == "hosted_vllm/org/m" != vocab.model_alias_key("hosted_vllm/Org/M")


def test_aliases_on_the_sample_and_undo(sample_store):
    df = A.aliases(sample_store)
    auto = df[df.method == "auto"]
    assert dict(zip(auto.name, auto.canonical)) == {
        "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b": "shisa-ai/shisa-v2-llama3.1-8b",
        "hosted_vllm/shisa-ai/shisa-v2-llama3.3-70b": "shisa-ai/shisa-v2-llama3.3-70b"}
    assert df[df.method == "suggested"].empty  # 8b and 70b are different models, never suggested
    every = A.canonical_map(sample_store)  # no names: every stored model (the Overview's cached map)
    assert set(every) == set(A.stored_models(sample_store)) and every == A.canonical_map(sample_store, list(every))
    assert every["hosted_vllm/shisa-ai/shisa-v2-llama3.3-70b"] == "shisa-ai/shisa-v2-llama3.3-70b"
    assert A.names_for(sample_store, "shisa-ai/shisa-v2-llama3.1-8b") == [
        "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.1-8b"]
    assert A.names_for(sample_store, "SHISA-AI/shisa-v2-llama3.1-8b") == A.names_for(sample_store,
                                                                                     "shisa-ai/shisa-v2-llama3.1-8b")
    assert A.remove_alias(sample_store, "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b")
    A.auto_alias(sample_store)  # undone stays undone
    assert A.names_for(sample_store, "shisa-ai/shisa-v2-llama3.1-8b") == ["shisa-ai/shisa-v2-llama3.1-8b"]
    A.set_alias(sample_store, "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.1-8b")
    A.set_alias(sample_store, "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.1-8b")
    assert A.canonical(sample_store, "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b") == "shisa-ai/shisa-v2-llama3.1-8b"


def test_alias_suggestions_and_chains(store):
    names = ["jslm-alpha-7b-ja-orca-6k-3ep", "jslma-7b-ja-orca-6k-3ep", "Qwen2-7B-Instruct", "Qwen/Qwen2-7B-Instruct",
             "Qwen__Qwen2-7B-Instruct", "gpt-4o", "gpt-4o-mini"]
    with store.write() as cur:
        cur.executemany("INSERT INTO answers (source_id, harness, bench, model, question_id, sample, turn, text) "
                        "VALUES (1, 'fastchat', 'b', ?, '1', 0, 1, 'x')", [(n,) for n in names])
    A.auto_alias(store)
    assert A.canonical(store, "Qwen__Qwen2-7B-Instruct") == "Qwen/Qwen2-7B-Instruct"
    sug = A.suggestions(store)
    pairs = {frozenset((n, c)) for n, c in zip(sug.name, sug.canonical)}
    assert frozenset(("Qwen2-7B-Instruct", "Qwen/Qwen2-7B-Instruct")) in pairs
    assert frozenset(("jslm-alpha-7b-ja-orca-6k-3ep", "jslma-7b-ja-orca-6k-3ep")) in pairs
    assert frozenset(("gpt-4o", "gpt-4o-mini")) not in pairs
    # confirming a suggestion: names aliased to the confirmed name follow it to the new canonical
    A.set_alias(store, "Qwen/Qwen2-7B-Instruct", "Qwen2-7B-Instruct")
    assert A.canonical(store, "Qwen__Qwen2-7B-Instruct") == "Qwen2-7B-Instruct"
    with pytest.raises(UsageError, match="loop"):
        A.set_alias(store, "Qwen2-7B-Instruct", "Qwen/Qwen2-7B-Instruct")


def test_cli_links_and_aliases(sample_store, capsys):
    db = str(sample_store.path)
    assert main(["links", "--db", db, "--a", "ja_mt_bench", "--b", "japanese_mt_bench", "--auto", "--format",
                 "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data) == 80 and set(data[0]) == {"bench_a", "question_id_a", "bench_b", "question_id_b", "method",
                                                "similarity", "edited_turns"}
    assert {d["method"] for d in data} == {"exact"} and all(d["edited_turns"] == [] for d in data)
    assert data[0]["bench_a"] == "ja_mt_bench" and data[0]["question_id_a"] == "1"
    assert main(["links", "--db", db, "set", "ja_mt_bench:1", "japanese_mt_bench:2", "--format", "json"]) == 0
    link = json.loads(capsys.readouterr().out)
    assert link["method"] == "manual" and link["edited_turns"] == [1, 2]
    assert main(["links", "--db", db, "--a", "japanese_mt_bench", "--b", "ja_mt_bench", "--auto", "--format",
                 "json"]) == 0
    data = {d["question_id_b"]: d for d in json.loads(capsys.readouterr().out)}
    assert data["1"]["question_id_a"] == "2" and data["1"]["method"] == "manual"
    assert main(["links", "--db", db, "remove", "ja_mt_bench:1", "japanese_mt_bench:2"]) == 0
    assert main(["links", "--db", db, "remove", "ja_mt_bench:1", "japanese_mt_bench:2"]) == 2
    assert "no link" in capsys.readouterr().err
    assert main(["aliases", "--db", db, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows if r["method"] == "auto"} == {"hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b",
                                                                  "hosted_vllm/shisa-ai/shisa-v2-llama3.3-70b"}
    for _ in range(2):  # setting an alias that exists is not an error
        assert main(["aliases", "--db", db, "set", "phi-3-dpo", "shisa-ai/shisa-v2-llama3.1-8b"]) == 0
    assert main(["aliases", "--db", db, "remove", "phi-3-dpo"]) == 0
    capsys.readouterr()
    assert main(["aliases", "--db", db, "--format", "json"]) == 0
    assert "phi-3-dpo" not in {r["name"] for r in json.loads(capsys.readouterr().out)}


@pytest.mark.parametrize("lake", [False, True], ids=["file", "lake"])
def test_every_link_and_alias_change_moves_the_cache_key(store, lake_store, lake):
    """Cross-bench results are cached on ``data_version + links_version``: on a DuckDB file links_version moves with
    each link and alias; on a DuckLake store it is empty (no two more table reads per rerun) because every write
    moves data_version there (its write clock), a link or an alias too."""
    s = lake_store if lake else store
    put_questions(s, "ja", [("1", "math", Q1), ("2", "writing", Q2)])
    put_questions(s, "fork", [("1", "math", Q1), ("2", "writing", Q2)])
    assert (L.links_version(s) == ()) == lake
    keys = [s.data_version() + L.links_version(s)]
    for change in (lambda: L.link_benches(s, "ja", "fork"), lambda: L.set_link(s, "ja:1", "fork:2"),
                   lambda: L.remove_link(s, "ja:1", "fork:2"), lambda: A.set_alias(s, "org__m", "org/m"),
                   lambda: A.remove_alias(s, "org__m")):
        change()
        keys.append(s.data_version() + L.links_version(s))
        assert keys[-1] != keys[-2], len(keys)
