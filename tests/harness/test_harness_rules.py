"""lib.harness: the registry, the SQL helpers, and the recorded facts checked against the bundled real data."""
from __future__ import annotations

import dataclasses

import pytest

from lib import harness as H
from lib.store import frame


def test_registry_lists_and_finds_the_harnesses():
    # a new harness is one rules module + one reader: every imported harness has a reader and the other way round
    from lib.ingest.formats import registry

    assert H.names()[:2] == ("fastchat", "swallow") and H.names()[-2:] == ("judgelens", "human")
    assert set(H.names(imported=True)) == {r.harness for r in registry.READERS if not r.separate}
    assert H.get("swallow") is H.SWALLOW and H.get("fastchat") is H.FASTCHAT
    assert H.get("no-such-harness") is H.GENERIC and H.get(None) is H.GENERIC
    assert H.GENERIC.own_rule == H.ITEM and not H.GENERIC.multi_sample
    assert H.FASTCHAT in H.where(own_rule=H.SHOW_RESULT) and H.SWALLOW not in H.where(own_rule=H.SHOW_RESULT)
    assert H.where(own_rule=H.CATEGORY_MEANS) == (H.NEJUMI,)
    assert H.NEJUMI.scale_for("japanese_mt_bench") == (0.0, 10.0)
    assert H.SHABERI.scale_for("elyza/ELYZA-tasks-100") == (1.0, 5.0) and H.SHABERI.failure_code is None
    assert {"swallow", "fastchat_samples"} <= {h.name for h in H.where(multi_sample=True)} and not H.FASTCHAT.multi_sample
    assert H.where(turn2_after_sample0=True) == (H.SWALLOW,)
    assert {h.name for h in H.all()} == set(H.names())


def test_records_are_frozen_and_checked():
    with pytest.raises(dataclasses.FrozenInstanceError):
        H.FASTCHAT.samples_per_item = 2  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown own_rule 'median'"):
        H.register(H.Harness(name="x", title="x", imported=False, own_rule="median"))
    assert "x" not in H.names()


def test_sql_helpers_match_nothing_or_everything_when_empty(store):
    assert H.sql_is("h", [H.FASTCHAT, H.SWALLOW]) == "h IN ('fastchat', 'swallow')"
    assert H.sql_is("h", []) == "FALSE" and H.sql_is_not("h", []) == "TRUE"
    with store.read() as cur:
        got = cur.execute(f"SELECT {H.sql_is('h', H.where(multi_sample=True))}, "
                          f"{H.sql_is_not('h', H.where(multi_sample=True))} FROM (VALUES ('swallow'), ('fastchat')) "
                          "t(h) ORDER BY h").fetchall()
    assert got == [(False, True), (True, False)]


def test_template_prefix_only_for_the_harness_that_has_a_japanese_variant():
    assert H.FASTCHAT.template_prefix("ja_mt_bench") == "ja-"
    assert H.FASTCHAT.template_prefix("japanese_mt_bench") == "ja-"
    assert H.FASTCHAT.template_prefix("mt_bench") is None
    assert H.SWALLOW.template_prefix("japanese_mt_bench") is None


def test_swallow_generation_facts_agree_with_its_real_details_files(sample_store):
    """The temperature map, the 5 samples, the copies at temperature 0 and the truncation limit, as the bundled
    Swallow runs recorded them."""
    gen = H.SWALLOW.generation
    answers = frame(sample_store, """
        SELECT category, any_value(a.temperature) AS t, count(DISTINCT a.temperature) AS n_t,
               max(a.max_chars) AS max_chars, max(a.sample) + 1 AS samples
        FROM answers a JOIN current_questions q ON q.bench = a.bench AND q.question_id = a.question_id
        WHERE a.harness = 'swallow' GROUP BY category ORDER BY category""", plain=True)
    assert len(answers) == 8
    for row in answers.itertuples():
        assert row.n_t == 1 and row.t == gen.temperature[row.category], row.category
        assert row.samples == gen.samples == H.SWALLOW.samples_per_item
        assert row.max_chars == gen.truncate_chars
    distinct = frame(sample_store, """
        SELECT a.temperature, max(n) AS most FROM (
            SELECT bench, model, question_id, turn, any_value(temperature) AS temperature,
                   count(DISTINCT text) AS n FROM answers WHERE harness = 'swallow' GROUP BY ALL) a
        GROUP BY 1 ORDER BY 1""", plain=True)
    most = dict(zip(distinct["temperature"], distinct["most"]))
    assert gen.copies_at_zero and most[0.0] == 1   # one call copied to the 5 samples
    assert max(v for t, v in most.items() if t > 0) > 1


def test_temperature_for_a_category_falls_back_to_the_harness_default():
    assert H.FASTCHAT.generation.temperature_for("writing") == 0.7
    assert H.FASTCHAT.generation.temperature_for("stem") == 0.1
    assert H.FASTCHAT.generation.temperature_for("unheard-of") == 0.7   # gen_api_answer's default
    assert H.SWALLOW.generation.temperature_for("unheard-of") == 0.0    # CATEGORY_TEMPERATURE_MAP.get(c, 0.0)
    assert H.SWALLOW.generation.temperature_for(None) == 0.0
    assert (H.FASTCHAT.judge_max_tokens, H.SWALLOW.judge_max_tokens) == (2048, 4096)


def test_swallow_reported_metrics_are_in_its_results_files(sample_store):
    metrics = set(frame(sample_store, "SELECT DISTINCT metric FROM reported_metrics WHERE harness = 'swallow'",
                        plain=True)["metric"])
    assert set(H.SWALLOW.reported_metrics.values()) <= metrics


def test_fastchat_answers_record_no_system_prompt_or_temperature(sample_store):
    """Why the setup table says "not recorded" for FastChat (``stores_system_prompt`` / ``stores_temperature``)."""
    row = frame(sample_store, "SELECT count(system_prompt) AS sp, count(temperature) AS t, count(*) AS n "
                              "FROM answers WHERE harness = 'fastchat'", plain=True).iloc[0]
    assert row["n"] > 0 and row["sp"] == 0 and row["t"] == 0
    assert not H.FASTCHAT.stores_system_prompt and not H.FASTCHAT.stores_temperature
    assert H.SWALLOW.stores_system_prompt and H.SWALLOW.stores_temperature
