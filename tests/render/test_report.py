"""The HTML report: right numbers, escaped text, and it loads nothing from the network."""
import html
import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from conftest import ROOT
from lib.analysis import agreement
from lib.ingest.importer import ingest
from lib.reports import build_report

JUDGES = ["gpt-4o", "gpt-4.1-2025-04-14"]


def test_report_holds_the_agreement_numbers_and_the_worst_items(sample_store):
    text = build_report(sample_store, JUDGES, bench="ja_mt_bench", top=3)
    table = agreement.agreement(sample_store, JUDGES, bench="ja_mt_bench")
    row = table.iloc[0]
    assert f"<td>{row.pearson:.3f}</td>" in text and f"<td>{row.qwk:.3f}</td>" in text
    worst = agreement.disagreements(sample_store, JUDGES, bench="ja_mt_bench", limit=3)
    for r in worst.itertuples():
        assert f"question {r.question_id} · turn {r.turn}" in text
    assert text.count('class="item"') == 3
    assert "Per-category deltas" in text                      # two judges: the delta table is there
    assert text.count("<script") >= 3                         # plotly.js inlined once + one script per chart


def test_report_is_self_contained(sample_store):
    text = build_report(sample_store, JUDGES, bench="ja_mt_bench", top=2)
    assert "default-src 'none'" in text                       # the CSP forbids every fetch
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)=["']?https?:""", text)


def test_report_escapes_hostile_text(tmp_path, store):
    bench = tmp_path / "evil" / "model_judgment"
    bench.mkdir(parents=True)
    hostile = "<script>alert(1)</script><img src=http://127.0.0.1:9/x.png>"
    rows = [{"question_id": 1, "model": "m", "judge": [j, "single-v1"], "user_prompt": "p",
             "judgment": f"{hostile} Rating: [[{s}]]", "score": s, "turn": 1} for j, s in (("a", 2), ("b", 9))]
    (bench / "x_single.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    ingest(store, [bench.parent])
    text = build_report(store, ["a", "b"], top=5)
    assert hostile not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=http://127.0.0.1:9/x.png&gt;" in text


def test_cli_report_writes_the_file(sample_store, tmp_path):
    path = sample_store.path
    sample_store.close()
    out = tmp_path / "r.html"
    done = subprocess.run([sys.executable, "-m", "lib.cli", "report", "--db", str(path), "--compare",
                           ",".join(JUDGES), "--out", str(out), "--top", "2"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "opens offline" in done.stdout
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_cli_report_unknown_judge_is_refused(sample_store, tmp_path):
    path = sample_store.path
    sample_store.close()
    done = subprocess.run([sys.executable, "-m", "lib.cli", "report", "--db", str(path), "--compare", "gpt-4o,nobody",
                           "--out", str(tmp_path / "r.html")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2
    assert "Unknown judge(s): nobody" in done.stderr


@pytest.mark.browser
def test_report_opens_offline_in_chromium(sample_store, tmp_path, chromium):
    out = tmp_path / "report.html"
    out.write_text(build_report(sample_store, JUDGES, bench="ja_mt_bench", top=2), encoding="utf-8")
    page = chromium.new_page()
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    page.wait_for_function("() => document.querySelectorAll('.plotly-graph-div .main-svg').length >= 3")
    page.close()
    assert requests == [out.as_uri()]


def test_report_has_intervals_and_alpha(sample_store):
    from lib.analysis import agreement as ag
    from lib.analysis import agreement_ci, reliability

    judges = ["gpt-4o", "gpt-4.1-2025-04-14"]
    text = build_report(sample_store, judges, bench="ja_mt_bench", top=1)
    matrix = ag.item_matrix(sample_store, judges, bench="ja_mt_bench")
    row = agreement_ci.interval_text(agreement_ci.pairwise_agreement_ci(matrix, judges)).iloc[0]
    assert "<h3>95% intervals</h3>" in text and f"<td class=\"t\">{row['qwk']}</td>" in text
    alpha = reliability.krippendorff_alpha(matrix, judges)
    assert "Krippendorff" in text and f"{alpha:.3f}" in text


def test_report_opens_with_a_summary_and_inlines_plotly_once_compressed(sample_store):
    text = build_report(sample_store, JUDGES, bench="ja_mt_bench", top=2)
    summary = re.search(r'<p class="summary">(.*?)</p>', text).group(1)
    assert summary.startswith(f"Compares 2 judges ({JUDGES[0]}, {JUDGES[1]}) on ")
    assert "quadratic weighted kappa" in summary and f"On ja_mt_bench, {JUDGES[0]} minus {JUDGES[1]} = " in summary
    assert text.index('class="summary"') < text.index("<h2>")            # it opens the report
    assert text.count("const packed = ") == 1                            # plotly.js once, gzip + base64
    assert "Plotly.newPlot" not in text.split('type="text/x-judgelens-chart"')[0]  # charts wait for it
    assert len(text.encode()) < 2_500_000                                 # 4.9 MB with plotly.js as text


def test_harness_report_opens_with_the_gap(sample_store):
    from lib.reports import harness_report

    model = "shisa-ai/shisa-v2-llama3.1-8b"
    text = harness_report(sample_store, {"harness": "fastchat", "judge": "gpt-4o", "model": model},
                          {"harness": "swallow", "model": model})
    summary = html.unescape(re.search(r'<p class="summary">(.*?)</p>', text).group(1))
    assert summary.startswith(f"Compares {model} under A = fastchat · ja_mt_bench · gpt-4o · {model} and B = swallow")
    assert "A − B = +" in summary and "Largest categories: coding" in summary
    assert "The two setups differ in: judge_model, judge_prompt" in summary


def test_report_of_a_pair_with_no_shared_item(sample_store):
    """A judge of the store that scored nothing under the filter (gpt-4 judged another bench): its pair has no
    item, its numbers are blank (n = 0), and the report and the intervals are made, not an error."""
    from lib.analysis import agreement_ci
    ci = agreement_ci.agreement_ci(sample_store, ["gpt-4o", "gpt-4"], bench="ja_mt_bench")
    assert ci["n"].tolist() == [0] and ci["n_questions"].tolist() == [0] and ci.drop(
        columns=["judge_a", "judge_b", "n", "n_questions"]).isna().all().all()
    text = build_report(sample_store, ["gpt-4o", "gpt-4"], bench="ja_mt_bench", top=3)
    assert "gpt-4o vs gpt-4" in text


def test_report_given_the_pages_table_intervals_and_heatmap_is_the_same_report(sample_store):
    """The page passes its cached agreement table, intervals (a bootstrap per pair) and kappa heatmap instead of
    having the report compute them again: the same file, the Generated minute and the charts' random ids aside."""
    import pickle

    from lib.analysis import agreement_ci
    from lib.render import charts

    judges = ["gpt-4o", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14"]
    filters = {"bench": "ja_mt_bench", "model": None, "turn": 2, "category": None}
    # as the page's cache hands them over: pickled and unpickled (the intervals' note travels in attrs)
    table = pickle.loads(pickle.dumps(agreement.agreement(sample_store, judges, **filters)))
    intervals = pickle.loads(pickle.dumps(agreement_ci.agreement_ci(sample_store, judges, **filters)))
    varying = re.compile(r"Generated [0-9: -]+ ·|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # chart ids
    own = varying.sub("", build_report(sample_store, judges, **filters, top=2))
    given = varying.sub("", build_report(sample_store, judges, **filters, top=2, table=table, intervals=intervals,
                                         heatmap=charts.agreement_heatmap(table, "qwk")))
    assert given == own
    assert agreement_ci.CI_NOTE.format(n_boot=agreement_ci.N_BOOT, method="expanded percentile") in html.unescape(own)


def test_a_page_offering_a_report_packs_plotly_js_in_the_background_once():
    """The Agreement page starts packing plotly.js (gzip -9, a fifth of a CPU-second or more) while it draws the
    report button: the report opened later inlines that result, which unpacks to plotly.js itself."""
    import base64
    import gzip
    import threading
    from importlib import resources

    from lib.render import charts

    charts.pack_plotly_js_soon()
    for thread in [t for t in threading.enumerate() if t.name == "pack-plotly-js"]:
        thread.join()
    charts.pack_plotly_js_soon()                                          # packed: no second thread
    assert not [t for t in threading.enumerate() if t.name == "pack-plotly-js"]
    scores = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.0, 3.0, 2.0]})
    html_text = charts.report_figures_html(
        [("a chart", charts.agreement_heatmap(agreement.pairwise_agreement(scores, ["a", "b"]), "qwk"))])
    packed = re.search(r'const packed = "([^"]+)"', html_text).group(1)
    assert gzip.decompress(base64.b64decode(packed)) == \
        resources.files("plotly").joinpath("package_data", "plotly.min.js").read_bytes()
