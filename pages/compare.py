"""Compare: A vs B per category and turn, paired by item, with bootstrap intervals and Holm correction."""
import streamlit as st

from lib.analysis import queries
from lib.render import charts
from lib.analysis import deltas
from pages._common import cached_query, page_start, show_chart, show_table

store, version = page_start("Compare")

loaded = cached_query(queries.judges_by_harness, version)
benches = sorted(loaded["bench"].unique())
bench = st.selectbox("Bench", benches, key="cmp_bench")
here = loaded[loaded["bench"] == bench]
judges, models = sorted(here["judge"].unique()), sorted(here["model"].unique())
mode = st.radio("Compare", ["two judges on the same answers", "two models under one judge"], horizontal=True,
                key="cmp_mode")
c1, c2, c3 = st.columns(3)
if mode == "two judges on the same answers":
    if len(judges) < 2:
        st.info("This bench has one judge. Import another judge's judgments, or re-judge on the Workbench.")
        st.stop()
    ja = c1.selectbox("Judge A", judges, index=0, key="cmp_ja")
    jb = c2.selectbox("Judge B", judges, index=1, key="cmp_jb")
    model = c3.selectbox("Answers of", ["(every model, paired per model)", *models], key="cmp_model")
    a, b = {"bench": bench, "judge": ja}, {"bench": bench, "judge": jb}
    if not model.startswith("("):
        a["model"] = b["model"] = model
else:
    if len(models) < 2:
        st.info("This bench has one model.")
        st.stop()
    judge = c1.selectbox("Judge", judges, key="cmp_judge")
    ma = c2.selectbox("Model A", models, index=0, key="cmp_ma")
    mb = c3.selectbox("Model B", models, index=1, key="cmp_mb")
    a, b = {"bench": bench, "judge": judge, "model": ma}, {"bench": bench, "judge": judge, "model": mb}
if a == b:
    st.info("A and B are the same: pick two different ones.")
    st.stop()

n_boot = st.select_slider("Bootstrap draws", [500, 1000, 2000, 5000], value=2000, key="cmp_boot")
table = deltas.paired_deltas(store, a, b, n_boot=n_boot)
label = deltas.describe_comparison(a, b)
st.subheader(label)
if table.empty:
    st.warning(table.attrs.get("note", "Nothing pairs: A and B share no items."))
    st.stop()
st.caption(
    "Delta = A minus B, per item, averaged. The interval is a 95% percentile bootstrap that redraws whole "
    "questions (both turns and every paired model come along), because those are not independent. "
    "p-values are Holm-corrected within each level of the table. Grey: the interval includes 0, so the "
    "difference is inside the noise; orange: the interval excludes 0 but the difference does not survive Holm; "
    "red: significant after Holm. A category has only 10 questions: expect wide intervals.")
level = st.segmented_control("Rows", ["cell", "category", "turn", "all"], default="category", key="cmp_level",
                             format_func={"cell": "category × turn", "category": "category (both turns)",
                                          "turn": "turn (all categories)", "all": "overall"}.get)
shown = table[table["level"] == (level or "category")]
differs = "judge" if a.get("judge") != b.get("judge") else "model"
show_chart(charts.delta_forest(shown, str(a[differs]), str(b[differs])), f"delta_{bench}")
show_table(shown.drop(columns=["level"]), f"deltas_{bench}",
           column_config={c: st.column_config.NumberColumn(format="%.3f")
                          for c in ("mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_holm")})
