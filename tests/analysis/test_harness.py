"""Harness vs harness on the bundled sample: runs, pairing across linked benches, the setup table.

The Swallow same-models runs are the JA harness's own answers, judged by a synthetic judge anchored on the
real gpt-4o score with planted rules (data/sample/swallow-same-models/README-same-models.md). On sample 0
the only rules are (a) -2 when under half of the judged answer is Japanese, and the clamp to 1..10; so the
pairing must recover, item by item, exactly that.
"""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from lib.analysis import harness_diff as H
from lib.analysis import linking
from lib.analysis import runs as R
from lib.cli import main
from lib.errors import UsageError
from lib.store import Store, migrate

L8 = "shisa-ai/shisa-v2-llama3.1-8b"
L70 = "shisa-ai/shisa-v2-llama3.3-70b"
FASTCHAT_4O = {"harness": "fastchat", "judge": "gpt-4o"}
SWALLOW = {"harness": "swallow"}


def japanese_ratio(text: str) -> float:
    """Rule (a)'s ratio, as the README defines it (not the fork's japanese_ratio metric)."""
    chars = [c for c in text if not c.isspace()]
    def jp(c):
        o = ord(c)
        return (0x3041 <= o <= 0x309F or 0x30A0 <= o <= 0x30FF or 0xFF66 <= o <= 0xFF9F or 0x4E00 <= o <= 0x9FFF
                or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or 0x3005 <= o <= 0x3007)
    return sum(map(jp, chars)) / len(chars) if chars else 0.0


def test_a_selector_resolves_one_run_through_aliases(sample_store):
    run = R.resolve_run(sample_store, {**SWALLOW, "model": L8})
    assert run == R.Run("swallow", "japanese_mt_bench", "gpt-4o-2024-08-06", "hosted_vllm/" + L8)
    assert R.resolve_run(sample_store, {**FASTCHAT_4O, "model": "shisa-ai__shisa-v2-llama3.1-8b"}).model == L8
    with pytest.raises(UsageError, match="matches 3 runs"):
        R.resolve_run(sample_store, {"harness": "fastchat", "model": L8})
    with pytest.raises(UsageError, match="selects no judged items"):
        R.resolve_run(sample_store, {"model": "no/such-model"})


@pytest.mark.parametrize("model", [L8, L70])
def test_sample_zero_pairing_recovers_the_planted_language_penalty_item_by_item(sample_store, model):
    pairs = R.paired_runs(sample_store, {**FASTCHAT_4O, "model": model}, {**SWALLOW, "model": model},
                          swallow_samples="first")
    assert pairs.attrs["links"] == {"exact": 80}
    with sample_store.read() as cur:
        answers = {(q, t): text for q, t, text in cur.execute(
            "SELECT question_id, turn, text FROM answers WHERE bench = 'ja_mt_bench' AND model = ?", [model]).fetchall()}
        failed = cur.execute("SELECT count(*) FROM single_judgments WHERE harness = 'swallow' AND sample = 0 AND "
                             "model = ? AND score IS NULL", ["hosted_vllm/" + model]).fetchone()[0]
    assert len(pairs) == 160 - failed  # sample 0 without a rating has no score to pair
    fired = 0
    for row in pairs.itertuples():
        penalty = 2 if japanese_ratio(answers[(row.question_id_a, row.turn)]) < 0.5 else 0
        fired += bool(penalty)
        assert row.score_b == min(10, max(1, row.score_a - penalty)), row
    assert fired > 20


def test_compare_runs_per_category_gap(sample_store):
    a, b = {**FASTCHAT_4O, "model": L8}, {**SWALLOW, "model": L8}
    first = R.compare_runs(sample_store, a, b, levels=("category", "all"), swallow_samples="first")
    cat = first[first.level == "category"].set_index("category")
    # rule (a) fires on code, JSON and formula answers; everything else is the same score on sample 0
    for c in ("humanities", "reasoning", "roleplay", "stem"):
        assert cat.loc[c, "delta"] == 0 and not cat.loc[c, "significant"]
    assert cat.loc["coding", "delta"] == pytest.approx(1.6) and cat.loc["coding", "significant"]
    assert cat.loc["extraction", "delta"] == pytest.approx(1.0)
    assert cat.loc["writing", "delta"] == pytest.approx(2 / 19)  # q78 turn 2 (sample 0 of 8b), 19 items
    mean = R.compare_runs(sample_store, a, b, levels=("all",))
    row = mean.iloc[0]
    assert row.n_questions == 80 and row.n_items == 160
    assert row.mean_a == pytest.approx(7.40625)  # the JA harness's gpt-4o overall for 8b
    assert row.delta > 0 and row.ci_low > 0 and row.significant
    # excluding edited/fuzzy links changes nothing here: every link is exact
    assert R.paired_runs(sample_store, a, b, exclude_links=("edited", "fuzzy")).attrs["excluded"] == 0


def test_unlinked_benches_say_how_to_link(sample_store):
    with sample_store.write() as cur:
        cur.execute("DELETE FROM question_links")
    pairs = R.paired_runs(sample_store, {**FASTCHAT_4O, "model": L8}, {**SWALLOW, "model": L8})
    assert pairs.empty and "links --a ja_mt_bench --b japanese_mt_bench --auto" in pairs.attrs["note"]


def test_harness_matrix_lines_up_one_model_across_harnesses(sample_store):
    wide = R.matrix_wide(R.harness_matrix(sample_store)).set_index("model")
    assert wide.loc[L8, "fastchat · ja_mt_bench · gpt-4o"] == pytest.approx(7.40625)
    swallow = "swallow · japanese_mt_bench · gpt-4o-2024-08-06"
    assert wide.loc[L8, f"{swallow} (harness)"] == pytest.approx(6.79375)   # results file 0.679375 x 10
    assert wide.loc[L8, swallow] > wide.loc[L8, f"{swallow} (harness)"]      # -1 left out vs averaged in
    assert "hosted_vllm/" + L8 not in wide.index


def test_setup_table_on_the_same_models(sample_store):
    df = H.harness_diff(sample_store, {**FASTCHAT_4O, "model": L8}, {**SWALLOW, "model": L8})
    assert list(df.area) == list(H.AREAS)
    t = df.set_index("area")
    assert (t.loc["judge_model", "a"], t.loc["judge_model", "b"], t.loc["judge_model", "differs"]) == (
        "gpt-4o", "gpt-4o-2024-08-06", True)
    assert t.loc["judge_prompt", "differs"] and "only in B: “The expected language is Japanese.”" in t.loc[
        "judge_prompt", "evidence"]
    assert "Your evaluation should also consider whether the prompt responded in the correct language" in t.loc[
        "judge_prompt", "evidence"]  # the JA harness's own language sentence
    assert t.loc["system_prompt", "a"].startswith("not recorded") and t.loc["system_prompt", "differs"] is None
    assert "あなたは誠実で優秀な日本人のアシスタントです。" in t.loc["system_prompt", "b"]
    assert t.loc["samples", "a"].startswith("1 sample(s)") and t.loc["samples", "differs"]
    assert "5 sample(s) per item; identical copies on 80 of 160 items (coding, extraction, math, reasoning)" in t.loc[
        "samples", "b"]
    assert "Sample 0 of B is the same text as A's answer on 160 of 160 linked items" in t.loc["samples", "evidence"]
    assert t.loc["temperature", "a"].startswith("not recorded") and "writing 0.7" in t.loc["temperature", "b"]
    assert "longest answer 2,519 chars" in t.loc["truncation", "a"] and "cut at 8,192" in t.loc["truncation", "b"]
    assert "cannot explain a gap" in t.loc["truncation", "evidence"]
    assert t.loc["reasoning", "a"] == "0 of 160 judged answers contain <think>" and not t.loc["reasoning", "differs"]
    assert t.loc["references", "differs"] is False and "differ on 0" in t.loc["references", "evidence"]
    assert t.loc["parse_failures", "b"].startswith("19 of 800 judgments without a rating (2.4%)")
    assert t.loc["parse_failures", "example"].startswith("item_view?bench=japanese_mt_bench&")
    assert "0-1" in t.loc["scale", "b"]
    assert "80 linked: 80 exact, 0 edited, 0 fuzzy" in t.loc["questions", "evidence"]
    prompts = H.judge_prompt_diff(sample_store, {**FASTCHAT_4O, "model": L8}, {**SWALLOW, "model": L8})
    assert [p["kind"] for p in prompts] == ["single-math-v1", "single-math-v1-multi-turn", "single-v1",
                                           "single-v1-multi-turn"]
    single = prompts[2]
    assert "{question}" in single["a"]["text"] and "{answer}" in single["b"]["text"]
    assert "The expected language is Japanese." in single["only_b"]


def test_setup_table_finds_truncation_and_reasoning(sample_store):
    """The generated Swallow runs: Chat-8B has 23 answers cut at 8,192 characters."""
    df = H.harness_diff(sample_store, {"model": "hosted_vllm/fake-org/Fake-JA-Chat-8B"},
                        {**FASTCHAT_4O, "model": L8}).set_index("area")
    assert "23 at exactly 8,192" in df.loc["truncation", "a"] and df.loc["truncation", "example"]
    assert "23 (A) and 0 (B) answers are exactly at a limit" in df.loc["truncation", "evidence"]


def count_queries(store: Store) -> list[str]:
    """Every statement run through ``store``'s reads from now on (appended to the returned list)."""
    from contextlib import contextmanager

    seen, make = [], store.read

    class Counted:
        def __init__(self, cur):
            self._cur = cur

        def __getattr__(self, name):
            return getattr(self._cur, name)

        def execute(self, sql, *args):
            seen.append(sql)
            return self._cur.execute(sql, *args)

    @contextmanager
    def counted_read():
        with make() as cur:
            yield Counted(cur)

    store.read = counted_read
    return seen


def test_setup_table_reads_each_table_once_and_a_lake_gives_the_same_table(sample_store, tmp_path):
    """On a DuckLake store every query pays catalog look-ups and reads whole Parquet column chunks, so the setup
    table reads each table once for both runs (it ran 38 queries, 7x slower on a lake than on the file at 100k
    judgments); a DuckLake copy of the store gives the same table, example links included, and each example is
    the first item in question order that shows the thing (the parse-failure example is a failed judgment)."""
    pairs = [({**FASTCHAT_4O, "model": L8}, {**SWALLOW, "model": L8}),
             ({"model": "hosted_vllm/fake-org/Fake-JA-Chat-8B"}, {**FASTCHAT_4O, "model": L8}),
             ({**SWALLOW, "model": L70}, {**FASTCHAT_4O, "model": L70})]
    seen = count_queries(sample_store)
    H.harness_diff(sample_store, *pairs[0])
    assert 0 < len(seen) <= 12, seen  # the stored prompts in two reads: their keys, then the chosen rows
    on_file = [(H.harness_diff(sample_store, a, b), H.judge_prompt_diff(sample_store, a, b)) for a, b in pairs]

    table = on_file[0][0].set_index("area")
    example = dict(p.split("=") for p in table.loc["parse_failures", "example"].split("?")[1].split("&"))
    with sample_store.read() as cur:
        failed = cur.execute("""SELECT question_id, turn, sample FROM single_judgments
                                WHERE harness = 'swallow' AND model = ? AND parse_status <> 'ok'
                                ORDER BY TRY_CAST(question_id AS BIGINT), turn, sample LIMIT 1""",
                             ["hosted_vllm/" + L8]).fetchone()
    assert (example["q"], int(example["turn"]), int(example.get("sample", 0))) == (failed[0], failed[1], failed[2])

    sample_store.close()
    with Store(f"ducklake:sqlite:{tmp_path / 'lake.sqlite'}", data_path=tmp_path / "lake-data") as lake:
        migrate(sample_store.path, lake)
        for (a, b), (file_table, file_prompts) in zip(pairs, on_file):
            pd.testing.assert_frame_equal(H.harness_diff(lake, a, b), file_table)
            assert H.judge_prompt_diff(lake, a, b) == file_prompts


def test_cli_harness_diff_json(sample_store, capsys):
    assert main(["harness-diff", "--db", str(sample_store.path), "--a",
                 f"harness=fastchat,judge=gpt-4o,model={L8}", "--b", f"harness=swallow,model={L8}", "--format",
                 "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["area"] for d in data] == list(H.AREAS)
    assert all(set(d) == {"area", "a", "b", "differs", "evidence"} for d in data)
    assert data[0]["differs"] is True and data[2]["differs"] is None
    assert "Example: item_view?" in data[1]["evidence"]
    assert main(["harness-diff", "--db", str(sample_store.path), "--a", f"model={L8}", "--b", "harness=swallow"]) == 2
    assert "matches" in capsys.readouterr().err


def test_cli_compare_across_linked_benches(sample_store, capsys):
    a, b = f"harness=fastchat,judge=gpt-4o,model={L8}", f"harness=swallow,model={L8}"
    assert main(["compare", "--db", str(sample_store.path), "--a", a, "--b", b, "--level", "category",
                 "--swallow-samples", "first", "--format", "json"]) == 0
    out = capsys.readouterr()
    rows = json.loads(out.out)
    assert set(rows[0]) == {"model", "level", "category", "turn", "n_questions", "n_items", "mean_a", "mean_b",
                            "delta", "ci_low", "ci_high", "p_value", "p_adjusted", "significant"}
    got = {r["category"]: r["delta"] for r in rows}
    assert got["coding"] == pytest.approx(1.6) and got["humanities"] == 0
    assert "pair by linked question" in out.err and "80 exact" in out.err
    # the same numbers as the page's function
    lib = R.compare_runs(sample_store, {**FASTCHAT_4O, "model": L8}, {**SWALLOW, "model": L8}, levels=("category",),
                         swallow_samples="first")
    assert [r["delta"] for r in rows] == pytest.approx(lib["delta"].tolist())
    assert main(["compare", "--db", str(sample_store.path), "--a", a, "--b", b, "--per-model"]) == 2


PLAIN_PROMPT_ROWS = """
    SELECT harness, bench, judge, model, prompt_name, arg_min(question_id, k), arg_min(turn, k),
           arg_min(sample, k), arg_min(judge_prompt, k), count(*)
    FROM (SELECT *, {'k': coalesce(TRY_CAST(question_id AS BIGINT), 0) * 10 + turn, 'q': question_id,
                     'src': source_id, 'p': judge_prompt} AS k
          FROM single_judgments WHERE judge_prompt IS NOT NULL AND sample = 0 AND harness = ? AND judge = ?
          AND model = ?)
    GROUP BY ALL ORDER BY prompt_name"""


def test_the_prompt_row_read_in_two_steps_is_the_lowest_row_with_a_prompt(sample_store):
    """The setup table's example prompt per run and prompt name is the lowest row by (question x 10 + turn, question,
    source, prompt text) among the rows with a prompt; found without reading every prompt text of the run, it is the
    same row the rule picks written plainly: also when the lowest rows have no prompt (the next row's is taken) and
    when one file holds the lowest item three times with different prompts (the lowest text wins: a leading space)."""
    run = R.Run("fastchat", "ja_mt_bench", "gpt-4o", L8)
    where = "harness = 'fastchat' AND judge = 'gpt-4o' AND model = ? AND sample = 0"
    with sample_store.write() as cur:
        lowest = cur.execute(f"SELECT question_id, turn FROM single_judgments WHERE {where} "
                             "ORDER BY TRY_CAST(question_id AS BIGINT), turn LIMIT 2", [L8]).fetchall()
        (q1, t1), (q2, t2) = lowest
        cur.execute(f"UPDATE single_judgments SET judge_prompt = NULL WHERE {where} AND question_id = ? AND turn = ?",
                    [L8, q1, t1])  # the lowest item lost its prompt: the next one is the example
        cur.execute(f"""INSERT INTO single_judgments SELECT * REPLACE (' lower text ' || judge_prompt AS judge_prompt)
                        FROM single_judgments WHERE {where} AND question_id = ? AND turn = ?""", [L8, q2, t2])
        cur.execute(f"""INSERT INTO single_judgments SELECT * REPLACE ('Z higher text ' || judge_prompt AS judge_prompt)
                        FROM single_judgments WHERE {where} AND question_id = ? AND turn = ?
                        AND NOT starts_with(judge_prompt, ' lower')""", [L8, q2, t2])
        plain = cur.execute(PLAIN_PROMPT_ROWS, ["fastchat", "gpt-4o", L8]).fetchall()
    templates = {t["prompt_name"]: t for t in H.prompt_templates(sample_store, run).values()}
    assert len(plain) == len(templates) == 4
    for name, qid, turn, sample, _prompt, _n in (row[4:] for row in plain):
        assert templates[name]["example"] == (qid, turn, sample)
    shown = [t for t in templates.values() if t["example"][:2] == (q2, t2)]
    assert shown and all(" lower text " in t["text"] and "Z higher" not in t["text"] for t in shown)

def _prompt_rows_by_one_query(store: Store, run: R.Run) -> list[tuple]:
    """(prompt name, question, turn, sample) of the stored prompt per name, as one query over every prompt text of
    the run chose it (the lowest question and turn of sample 0 with a stored prompt, ties down to the text)."""
    with store.read() as cur:
        return [tuple(r) for r in cur.execute("""
            SELECT prompt_name, arg_min(question_id, k), arg_min(turn, k), arg_min(sample, k)
            FROM (SELECT prompt_name, question_id, turn, sample, judge_prompt,
                         {'k': coalesce(TRY_CAST(question_id AS BIGINT), 0) * 10 + turn, 'q': question_id,
                          'src': source_id, 'p': judge_prompt} AS k
                  FROM single_judgments WHERE harness = ? AND bench = ? AND judge = ? AND model = ?
                    AND judge_prompt IS NOT NULL AND sample = 0)
            GROUP BY ALL ORDER BY prompt_name""", list(run.selector.values())).fetchall()]


def _rebuilt_from(store: Store, run: R.Run) -> list[tuple]:
    """(prompt name, question, turn, sample) of the stored prompt each of the run's templates was rebuilt from."""
    return sorted((t["prompt_name"], *t["example"]) for t in H.prompt_templates(store, run).values())


def test_setup_table_reads_only_the_chosen_prompts_and_picks_the_same_ones(sample_store):
    """The prompt per name is chosen by its keys and only those rows' texts are read (a text costs its whole
    vector: reading every prompt of two runs was most of a Compare click at 1M); the rows are those one query over
    every text picks, also when the lowest question's row stored no prompt (then the next one that did)."""
    picked = [R.Run(*row) for row in R.runs(sample_store)[["harness", "bench", "judge", "model"]].itertuples(index=False)
              if not row.judge.startswith("human:")]
    assert len(picked) >= 6
    for run in picked:
        assert _rebuilt_from(sample_store, run) == _prompt_rows_by_one_query(sample_store, run), run
    run = next(r for r in picked if r.harness == "fastchat" and r.judge == "gpt-4o")
    first = _prompt_rows_by_one_query(sample_store, run)[0]
    with sample_store.write() as cur:  # the first row of a name without its prompt
        cur.execute("UPDATE single_judgments SET judge_prompt = NULL WHERE harness = ? AND bench = ? AND judge = ? "
                    "AND model = ? AND prompt_name = ? AND question_id = ? AND turn = ? AND sample = 0",
                    [*run.selector.values(), *first[:3]])
    after = _prompt_rows_by_one_query(sample_store, run)
    assert after[0][:3] != first[:3] and after[0][0] == first[0]  # the same name, from the next question
    assert _rebuilt_from(sample_store, run) == after
    seen = count_queries(sample_store)
    H.prompt_templates(sample_store, picked[0])
    prompts = [sql for sql in seen if "FROM single_judgments" in sql]
    assert len(prompts) == 2 and "judge_prompt" not in prompts[0]  # the keys alone, then the chosen rows' texts
    assert "judge_prompt FROM single_judgments WHERE harness IN (?) AND bench IN (?)" in prompts[1]


def test_setup_table_from_answers_kept_per_model_is_the_same_table(sample_store):
    """A page keeps each model's answers (``model_answers``, per bench and model) and hands them to the setup table:
    the same table as the one that reads them, across harnesses and for two judges of one model alike."""
    every = [R.Run(*r) for r in R.runs(sample_store)[["harness", "bench", "judge", "model"]].itertuples(index=False)]
    fc = [r for r in every if r.harness == "fastchat" and r.model == L8]
    sw = next(r for r in every if r.harness == "swallow" and r.model.endswith(L8))
    assert len(fc) >= 2
    for a, b in [(fc[0], sw), (fc[1], sw), (fc[0], fc[1])]:
        kept = tuple(H.model_answers(sample_store, r.bench, r.model) for r in (a, b))
        pd.testing.assert_frame_equal(H.harness_diff(sample_store, a, b, answers=kept), H.harness_diff(sample_store, a, b))


def test_setup_table_with_the_benches_kept_reads_only_the_runs_and_is_the_same_table(sample_store):
    """A page keeps what no pick of a run changes (``setup_context``: the benches' questions, references and links,
    every judge prompt's system prompt, the reported metrics' counts) per data version: the setup table then reads
    none of it again (on a lake each query pays its catalog look-ups), and is the same table; a bench the context
    lacks is read as before."""
    every = [R.Run(*r) for r in R.runs(sample_store)[["harness", "bench", "judge", "model"]].itertuples(index=False)]
    fc = [r for r in every if r.harness == "fastchat" and r.model == L8]
    sw = next(r for r in every if r.harness == "swallow" and r.model.endswith(L8))
    other = next(r for r in every if r.harness == "fastchat" and r.model != L8)
    pairs = [(fc[0], sw), (fc[1], sw), (fc[0], fc[1]), (other, fc[0])]
    expected = [H.harness_diff(sample_store, a, b) for a, b in pairs]
    kept = H.setup_context(sample_store, (fc[0].bench, sw.bench))
    assert set(kept["questions"]) == {fc[0].bench, sw.bench} and kept["questions"][sw.bench]
    assert any(kept["references"].values()) and kept["system_prompts"] and kept["reported"]
    assert not kept["links"][(fc[0].bench, sw.bench)].empty
    only_fc = H.setup_context(sample_store, (fc[0].bench,))
    seen = count_queries(sample_store)
    shared = re.compile(r"FROM (current_questions|reference_answers|judge_prompts|question_links|reported_metrics)\b")
    for (a, b), table in zip(pairs, expected):
        del seen[:]
        pd.testing.assert_frame_equal(H.harness_diff(sample_store, a, b, context=kept), table)
        assert not [q for q in seen if shared.search(q)], seen
        pd.testing.assert_frame_equal(H.harness_diff(sample_store, a, b, context=only_fc), table)
    together = H.harness_diffs(sample_store, pairs, context=kept)
    for got, table in zip(together, expected):
        pd.testing.assert_frame_equal(got, table)
    # the links are kept both ways: with B's bench first (another pick of run A) nothing shared is read either
    turned = H.harness_diff(sample_store, sw, fc[0])
    del seen[:]
    pd.testing.assert_frame_equal(H.harness_diff(sample_store, sw, fc[0], context=kept), turned)
    assert not [q for q in seen if shared.search(q)], seen


@pytest.mark.parametrize("samples", R.SAMPLE_MODES)
def test_compare_runs_with_the_benches_kept_reads_the_two_runs_once_and_gives_the_same_table(sample_store, samples):
    """The two-harness view keeps ``setup_context`` of every bench of the model's runs: the gap table then reads the
    two runs' item scores in one query and no question or link (on a lake each query pays its catalog look-ups),
    across linked benches (either bench first) and within one bench, and gives the same pairs and table."""
    every = [R.Run(*r) for r in R.runs(sample_store)[["harness", "bench", "judge", "model"]].itertuples(index=False)]
    fc = [r for r in every if r.harness == "fastchat" and r.model == L8]
    sw = next(r for r in every if r.harness == "swallow" and r.model.endswith(L8))
    kept = H.setup_context(sample_store, tuple(sorted({fc[0].bench, sw.bench})))
    for x, y in [(fc[0].bench, sw.bench), (sw.bench, fc[0].bench)]:  # the caption over the gap, either way round
        assert H.link_summary_of(kept, x, y) == linking.link_summary(sample_store, x, y)
    for a, b in [(fc[0], sw), (sw, fc[1]), (fc[0], fc[1])]:
        expected = R.compare_runs(sample_store, a, b, levels=("all", "category"), swallow_samples=samples)
        pairs = R.paired_runs(sample_store, a, b, swallow_samples=samples)
        seen = count_queries(sample_store)
        got = R.compare_runs(sample_store, a, b, levels=("all", "category"), swallow_samples=samples, context=kept)
        assert len(seen) == 1 and "FROM question_links" not in seen[0] and "r(side," in seen[0], seen
        del sample_store.read  # count_queries set it on the instance
        pd.testing.assert_frame_equal(got, expected)
        assert got.attrs == expected.attrs
        pd.testing.assert_frame_equal(R.paired_runs(sample_store, a, b, swallow_samples=samples, context=kept), pairs)
        assert len(pairs) > 100
