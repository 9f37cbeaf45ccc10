"""Review: your queue of the largest disagreements you have not decided, every analyst's verdicts, sharing them,
and the pairwise agreement of imported MT-Bench human judgments.

Verdicts are recorded on the Item view (keyboard: 1-9, 0 = 10). They count as judge human:<author> on every page.
"""
import json

import streamlit as st

from lib.analysis import item_view, ppi
from lib.judging import human
from app_pages._state import keep_values
from app_pages._store import cached_query, page_start
from app_pages._widgets import show_table
from app_pages._item_view_extras import author_sidebar

store, version = page_start("Review")
name = author_sidebar()
# Lazy tabs: only the open tab's content runs and is sent, so a new browser tab draws the queue alone.
tab_queue, tab_random, tab_all, tab_pairs = st.tabs(
    ["My review queue", "Random sample: judge vs me", "All verdicts", "Pairwise human judgments"],
    key="rv_tab", on_change="rerun")



def bench_and_size(bench_key: str, size_key: str, label: str, default: int, most: int, least: int = 1):
    """A bench and a number of items, side by side; the number kept across pages (``keep_values``)."""
    c1, c2 = st.columns([2, 1])
    bench = c1.selectbox("Bench", cached_query(item_view.benches, version), key=bench_key)
    st.session_state.setdefault(size_key, default)
    keep_values(size_key)
    return bench, int(c2.number_input(label, least, most, key=size_key))


def show_items(frame, name: str) -> None:
    """``frame`` (rows with bench, question_id, turn, model) as a table whose second column opens each item."""
    shown = frame.copy()
    shown.insert(1, "open", [item_view.link(item_view.link_params(r.bench, r.question_id, r.turn, r.model))
                             for r in frame.itertuples()])
    show_table(shown, name, column_config={"open": st.column_config.LinkColumn("open", display_text="open ↗")})


with tab_queue:
    if tab_queue.open:
        bench, n = bench_and_size("rv_bench", "jl_queue_n", "Queue length (largest disagreements)", 20, 1000)
        if not name:
            st.info("Set your name in the sidebar: the queue shows what you have decided.")
        elif bench:
            queue = cached_query(human.review_queue, version, author=name, bench=bench, n=n)
            if queue.empty:
                st.info("This bench needs two or more judges scoring the same items to have disagreements.")
            else:
                done = int(queue["decided"].sum())
                st.progress(done / len(queue), text=f"{done} of {len(queue)} decided by human:{name}")
                show_items(queue, f"review_queue_{bench}")
                nxt = human.next_undecided(queue)
                if nxt:
                    st.page_link("app_pages/item_view.py", label="Open the first undecided item",
                                 icon=":material/skip_next:", query_params=item_view.link_params(bench, nxt[0], nxt[1], nxt[2]))

with tab_random:
    if tab_random.open:
        st.caption("The largest disagreements show where judges fail, but they are not typical items, so they cannot "
                   "measure a judge's bias. Score this random sample (a fixed random order of the bench's items, the "
                   "same for everyone) to see how far each judge is from you, and what each model's mean would be "
                   "with the judge's bias taken out.")
        rbench, rn = bench_and_size("rv_rand_bench", "rv_rand_n", "Sample size", 40, 2000, least=2)
        if not name:
            st.info("Set your name in the sidebar: the sample shows what you have scored.")
        elif rbench:
            me = human.judge_name(name)
            sample = cached_query(ppi.random_sample, version, human_judge=me, bench=rbench, n=rn)
            done = int(sample["decided"].sum())
            st.progress(done / max(len(sample), 1), text=f"{done} of {len(sample)} scored by {me}")
            if len(sample) and done < len(sample):
                first = sample[~sample["decided"]].iloc[0]
                st.page_link("app_pages/item_view.py", label="Score the next sampled item", icon=":material/skip_next:",
                             query_params=item_view.link_params(rbench, first["question_id"], int(first["turn"]),
                                                                first["model"]))
            gaps = sample["decided"].to_numpy()
            if done and not gaps[:done].all():
                st.warning("Score the sample in its order: skipping items that are hard to score would make the "
                           "scored ones less typical.", icon=":material/warning:")
            show_items(sample, f"random_sample_{rbench}")
            llm_judges = [j for j in cached_query(ppi.bench_judges, version, bench=rbench)]
            if done >= 2 and llm_judges:
                result = cached_query(ppi.judge_vs_human, version, judges=llm_judges, human_judge=me, bench=rbench,
                                      n=rn)
                st.markdown("**Each judge against you** on the sampled items you scored (95% intervals, bootstrap "
                            "over questions)")
                if len(result["agreement"]):
                    show_table(result["agreement"], f"judge_vs_human_{rbench}",
                               column_config={c: st.column_config.NumberColumn(format="%.3f")
                                              for c in result["agreement"].columns if c not in ("judge_a", "judge_b",
                                                                                               "n", "n_questions")})
                st.markdown("**Judge-corrected model means** (prediction-powered)")
                st.caption(ppi.PPI_NOTE)
                show_table(result["corrected"], f"corrected_means_{rbench}",
                           column_config={c: st.column_config.NumberColumn(format="%.3f")
                                          for c in ("judge_mean", "correction", "corrected_mean", "ci_low", "ci_high",
                                                    "human_mean_sampled")})
            else:
                st.info("Score at least two sampled items to compare the judges with you.")

with tab_all:
    if tab_all.open:
        # one read of the verdict table per author shown and data version (human.all_verdicts)
        everyone = cached_query(human.all_verdicts, version, author=None)["authors"]
        who = st.selectbox("Author", ["(everyone)", *everyone], key="rv_author")
        full = st.toggle("Whole history (every edit, as recorded)", key="rv_history",
                         help="Off: each author's current verdict per item, each field their latest value for it (a "
                              "label recorded after a score keeps the score).")
        shown = cached_query(human.all_verdicts, version, author=None if who == "(everyone)" else who)
        show_table(shown["history"] if full else shown["latest"], "verdicts")
        records = shown["records"]
        st.download_button("Export as JSONL (import elsewhere on the Import page or with ingest)",
                           data="".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode(),
                           file_name="verdicts.jsonl", mime="application/jsonl", on_click="ignore",
                           icon=":material/download:", disabled=not records)

with tab_pairs:
    if tab_pairs.open:
        st.caption("Files in the public MT-Bench human-judgment format (question_id, model_a, model_b, winner, judge, "
                   "turn, conversations) imported on the Import page. Agreement as FastChat's compute_agreement.py "
                   "computes it (MT-Bench paper, table 2): votes keyed by question and model pair, per turn; "
                   "'without ties' leaves out pairs where either vote is a tie; human = expert_* judges.")
        table = cached_query(human.pair_agreement, version)
        if table.empty:
            st.info("No pairwise human judgments imported yet.")
        else:
            show_table(table, "human_pair_agreement",
                       column_config={"ratio": st.column_config.NumberColumn(format="%.3f")})
