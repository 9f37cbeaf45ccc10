"""Setup-difference warnings next to agreement and Compare numbers (lib.analysis.setup_warnings)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pandas as pd

from conftest import reads_counted
from lib.analysis import setup_warnings as sw
from lib.ingest.importer import ingest

JA = Path(__file__).resolve().parents[2] / "data" / "sample" / "shisa-ja-mt-bench-harness"
JUDGES = ["gpt-4o", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14"]


def test_the_sample_judges_share_one_setup(sample_store):
    assert sw.pair_warnings(sample_store, JUDGES, bench="ja_mt_bench").empty


def with_one_more_judge(tmp_path: Path, like: str, name: str, prompt) -> Path:
    """A copy of the JA harness where judge ``name`` judged as ``like`` did, every judge prompt ``prompt(old)``."""
    root = tmp_path / "ja"
    shutil.copytree(JA, root)
    judged = root / "ja_mt_bench" / "model_judgment"
    lines = []
    for line in (judged / f"{like}_single.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        rec["judge"][0] = name
        rec["user_prompt"] = prompt(rec["user_prompt"])
        lines.append(json.dumps(rec, ensure_ascii=False))
    (judged / f"{name}_single.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_a_judge_with_an_extra_prompt_sentence_is_flagged(store, tmp_path):
    """A copy of the JA harness where one more judge ran with a sentence added to every judge prompt."""
    ingest(store, [with_one_more_judge(tmp_path, "gpt-4.1-mini-2025-04-14", "mini-english",
                                       lambda p: p + "\n\nAlways answer in English.")])
    found = sw.pair_warnings(store, ["gpt-4o", "mini-english", "gpt-4.1-mini-2025-04-14"], bench="ja_mt_bench")
    assert found[["judge_a", "judge_b"]].values.tolist() == [["gpt-4o", "mini-english"],
                                                             ["mini-english", "gpt-4.1-mini-2025-04-14"]]
    row = found.iloc[0]
    assert row["areas"] == "judge prompt"
    assert row["line"] == ("gpt-4o vs mini-english: set up differently (judge prompt); the numbers compare the "
                           "setups as much as the judges. See the setup table.")
    link = urlparse(row["link"])
    params = parse_qs(link.query)
    assert link.path == "compare" and params["view"] == ["harness"]
    assert params["a"] == [f"fastchat · ja_mt_bench · gpt-4o · {row['model']}"]
    assert params["b"] == [f"fastchat · ja_mt_bench · mini-english · {row['model']}"]
    # a human judge has no setup: never flagged
    assert sw.pair_warnings(store, ["human:ana", "mini-english"], bench="ja_mt_bench").empty
    # the bench's questions, references and judge prompts kept per data version (the Compare page): the same lines
    from lib.analysis import harness_diff

    kept = harness_diff.setup_context(store, ("ja_mt_bench",))
    again = sw.pair_warnings(store, ["gpt-4o", "mini-english", "gpt-4.1-mini-2025-04-14"], bench="ja_mt_bench",
                             context=kept)
    pd.testing.assert_frame_equal(again, found)
    # which models each judge scored, kept per data version (the agreement page): the same lines for every pick of
    # model and judges, and a pick reads no item_scores (one catalog round less on a lake)
    scored = sw.scored_models(store, "ja_mt_bench")
    models = sorted(scored["gpt-4o"])
    assert len(models) >= 2 and all(scored[j] == sw.scored_models(store, "ja_mt_bench", [j])[j] for j in scored)
    picks = [(["gpt-4o", "mini-english", "gpt-4.1-mini-2025-04-14"], None), (["mini-english", "gpt-4o"], models[1]),
             (["gpt-4o", "gpt-4.1-mini-2025-04-14"], models[0]), (["gpt-4o", "mini-english"], "no-such-model")]
    for judges, model in picks:
        want = sw.pair_warnings(store, judges, bench="ja_mt_bench", model=model, context=kept)
        with reads_counted(store) as seen:
            got = sw.pair_warnings(store, judges, bench="ja_mt_bench", model=model, context=kept, scored=scored)
            reads = len(seen)
        with reads_counted(store) as seen:
            sw.pair_warnings(store, judges, bench="ja_mt_bench", model=model, context=kept)
            assert reads == len(seen) - 1
        pd.testing.assert_frame_equal(got, want)
    assert sw.pair_warnings(store, ["mini-english", "gpt-4o"], bench="ja_mt_bench", model=models[1],
                            scored=scored)["model"].tolist() == [models[1]]


def test_agreement_and_compare_pages_say_so_next_to_the_numbers(store, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    ingest(store, [with_one_more_judge(tmp_path, "gpt-4o", "gpt-4o-strict", lambda p: "Be strict.\n\n" + p)])
    db = store.path
    store.close()
    monkeypatch.setenv("JUDGELENS_DB", str(db))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120).run()
    at.switch_page("app_pages/agreement.py").run()
    assert not at.exception
    lines = [w.value.replace("\\", "") for w in at.warning if "set up differently" in w.value]
    assert len(lines) == 3 and all("(judge prompt)" in line and "[Setup table](compare?view=harness" in line
                                   for line in lines)     # the names are md_escape'd; the link is not
    at.switch_page("app_pages/compare.py").run()
    at.selectbox(key="cmp_ja").set_value("gpt-4o").run()
    at.selectbox(key="cmp_jb").set_value("gpt-4o-strict").run()
    assert not at.exception
    assert any("gpt-4o vs gpt-4o-strict: set up differently (judge prompt)" in w.value.replace("\\", "")
               for w in at.warning)
    at.selectbox(key="cmp_jb").set_value("gpt-4.1-2025-04-14").run()
    assert not any("set up differently" in w.value for w in at.warning)


def test_the_setup_tables_of_many_pairs_read_each_table_once(sample_store):
    """``harness_diffs`` (the agreement page's setup lines: one table per judge pair) gives what ``harness_diff``
    gives pair by pair, across harnesses and benches too, with each table read once for every run: the number
    of queries does not grow with the pairs."""
    import pandas as pd

    from lib.analysis import harness_diff, runs

    table = runs.runs(sample_store)
    every = [runs.Run(*r) for r in table[["harness", "bench", "judge", "model"]].itertuples(index=False)]
    ja = [r for r in every if r.bench == "ja_mt_bench" and r.model == every[0].model][:3]
    other = next(r for r in every if r.harness == "swallow")
    pairs = [(ja[0], ja[1]), (ja[0], ja[2]), (ja[1], ja[2]), (ja[0], other)]
    assert len(ja) == 3
    with reads_counted(sample_store) as seen:
        together = harness_diff.harness_diffs(sample_store, pairs)
        queries_all = len(seen)
        del seen[:]
        harness_diff.harness_diffs(sample_store, pairs[:1])
        assert queries_all <= len(seen) + 2  # the other bench's links and questions: not one set per pair
    for (a, b), got in zip(pairs, together):
        pd.testing.assert_frame_equal(got, harness_diff.harness_diff(sample_store, a, b))
        assert got.attrs == harness_diff.harness_diff(sample_store, a, b).attrs


def test_the_setup_lines_compute_only_the_areas_that_can_differ(sample_store):
    """Two judges of one model on one bench read the same answers, so the answer areas never differ between them:
    the setup lines leave those out (and the answer texts unread, the prompt examples' answers read on their own)
    and the rows they compute are the full table's rows, example prompts rebuilt the same."""
    import pandas as pd
    import pytest

    from lib.analysis import harness_diff, runs

    table = runs.runs(sample_store)
    every = [runs.Run(*r) for r in table[["harness", "bench", "judge", "model"]].itertuples(index=False)]
    pairs = [(a, b) for a in every for b in every
             if a.judge < b.judge and (a.bench, a.model) == (b.bench, b.model)][:6]
    assert len(pairs) >= 3
    areas = ("judge_prompt", "references", "scale")
    restricted = harness_diff.harness_diffs(sample_store, pairs, areas)
    for (a, b), got in zip(pairs, restricted):
        full = harness_diff.harness_diff(sample_store, a, b)
        assert not (full[full["area"].isin(harness_diff.ANSWER_AREAS)]["differs"] == True).any()  # noqa: E712
        want = full[full["area"].isin(areas)].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want)
    prompts = [harness_diff.judge_prompt_diff(sample_store, a, b) for a, b in pairs]  # the examples read on their own
    assert any("{answer" in d["a"]["text"] for p in prompts for d in p if d["a"])
    with pytest.raises(ValueError, match="unknown setup area"):
        harness_diff.harness_diffs(sample_store, pairs, ("judge_prompts",))
