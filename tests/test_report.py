"""report.html: map, metrics and page of a topic run, and a real browser loading it.

The browser test needs Chromium and chromedriver (Debian packages ``chromium``,
``chromium-driver``; ``bash scripts/run-tests.sh --with-browser`` installs them as root) and
selenium (the ``dev`` extra); it is skipped with the reason, and how to enable it, otherwise.
Its screenshot is kept as a test artefact in ``$PHRASEKIT_TEST_ARTIFACTS`` (default
``test-artifacts/`` in the repository).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from phrasekit.io import Document, read_corpus
from phrasekit.phrases import PhraseExtractor, PhraseVocabulary
from phrasekit.topics import PNTM, PhraseTopicModel, write_pntm_outputs, write_topic_outputs
from phrasekit.topics.report import (
    corpus_tokens,
    map_points,
    project_2d,
    render_report,
    run_metrics,
)

FIXTURE = Path(__file__).parent / "fixtures" / "corpus_small.jsonl"
ARTIFACTS = Path(os.environ.get("PHRASEKIT_TEST_ARTIFACTS",
                                Path(__file__).resolve().parents[1] / "test-artifacts"))
_DATA_RE = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def embedded(page: str) -> dict:
    """The JSON payload embedded in a report page."""
    match = _DATA_RE.search(page)
    assert match, "no embedded report data"
    return json.loads(match.group(1))


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return read_corpus(FIXTURE)


@pytest.fixture(scope="module")
def vocab(docs) -> PhraseVocabulary:
    return PhraseExtractor().extract(docs)


@pytest.fixture(scope="module")
def clusters(docs, vocab, glove) -> PhraseTopicModel:
    return PhraseTopicModel(encoder=glove, n_topics=4, min_df=2).fit(docs, vocabulary=vocab)


@pytest.fixture(scope="module")
def clusters_report(clusters, docs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report")
    paths = write_topic_outputs(clusters, docs, out, report=True, title="Fixture <topics>")
    return paths["report"]


def test_project_2d_unit_square() -> None:
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 5, 40):
        xy = project_2d(rng.normal(size=(n, 16)))
        assert xy.shape == (n, 2)
        if n:
            assert xy.min() >= 0.0 and xy.max() <= 1.0
    # two well separated groups stay apart on the map
    X = np.vstack([rng.normal(0, 0.1, (20, 8)) + 5 * np.eye(8)[0],
                   rng.normal(0, 0.1, (20, 8)) + 5 * np.eye(8)[1]])
    xy = project_2d(X)
    within = np.linalg.norm(xy[:20] - xy[:20].mean(0), axis=1).mean()
    between = np.linalg.norm(xy[:20].mean(0) - xy[20:].mean(0))
    assert between > 2 * within


def test_map_points_follow_topics(clusters: PhraseTopicModel) -> None:
    points = map_points(clusters, max_points=60)
    assert 0 < len(points) <= 60
    by_term = {t: k for k in range(clusters.n_topics_) for t in clusters.topic_terms(k)}
    for p in points:
        assert by_term[p["term"]] == p["topic"]
        assert 0 <= p["x"] <= 1 and 0 <= p["y"] <= 1
        assert p["phrase"] == (" " in p["term"])
    assert {p["topic"] for p in points} == set(range(clusters.n_topics_))
    with pytest.raises(TypeError, match="no map"):
        map_points(object())  # type: ignore[arg-type]


def test_run_metrics(clusters: PhraseTopicModel, docs) -> None:
    m = run_metrics(clusters, docs)
    assert -1.0 <= m["npmi"] <= 1.0 and len(m["npmi_per_topic"]) == clusters.n_topics_
    assert 0.0 < m["diversity"] <= 1.0
    assert m["unassigned_docs"] == int((clusters.doc_labels_ < 0).sum())


def test_report_is_self_contained(clusters_report: Path, clusters: PhraseTopicModel) -> None:
    page = clusters_report.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    # nothing is fetched at view time: no external scripts, styles, images or fonts
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', page)
    assert "@import" not in page and "url(" not in page
    assert "<title>Fixture &lt;topics&gt; — phrasekit</title>" in page
    data = embedded(page)
    assert [t["id"] for t in data["topics"]] == list(range(clusters.n_topics_))
    assert data["topics"][0]["top_words"] and data["points"]
    assert data["metrics"]["npmi"] is not None
    assert data["run"]["n_docs"] == 80


def test_embedded_text_cannot_break_out() -> None:
    evil = "</script><script>alert(1)</script><!--"
    data = {"topics": [{"id": 0, "label": evil, "n_docs": 1, "top_words": [], "top_phrases": [],
                        "typical_docs": [{"id": "d", "share": 1.0, "snippet": evil}]}],
            "doc_topics": [], "n_docs": 1}
    page = render_report(data, [], {}, title=evil)
    assert "alert(1)</script>" not in page and "<!--" not in page
    assert embedded(page)["topics"][0]["label"] == evil


def test_pntm_report(docs, vocab, glove, tmp_path: Path) -> None:
    model = PNTM(encoder=glove, n_topics=5, min_df=2, epochs=20).fit(docs, phrases=vocab)
    sentences = [[("a sentence about trees", 0.5)]] * 5
    paths = write_pntm_outputs(model, docs, tmp_path, sentences, report=True)
    data = embedded(paths["report"].read_text(encoding="utf-8"))
    assert data["run"]["method"] == "pntm" and len(data["topics"]) == 5
    assert data["topics"][0]["top_sentences"][0]["text"] == "a sentence about trees"
    assert {p["topic"] for p in data["points"]} <= set(range(5))
    assert len(data["metrics"]["npmi_per_topic"]) == 5


def test_metrics_reuse_the_fits_tokens_only_for_the_same_texts(docs, vocab, glove) -> None:
    model = PNTM(encoder=glove, n_topics=5, min_df=2, epochs=5).fit(docs, phrases=vocab)
    assert corpus_tokens(model, docs) is model.token_docs_
    other = [Document(d.id, d.text + " extra", {}) for d in docs]  # same ids and count
    fresh = corpus_tokens(model, other)
    assert fresh is not model.token_docs_ and fresh[0][-1] == "extra"
    reused = run_metrics(model, docs)
    del model.token_docs_  # tokenized afresh: the same numbers
    assert run_metrics(model, docs) == reused


def test_cli_writes_report(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from phrasekit.cli import app

    runner = CliRunner()
    out = tmp_path / "run"
    res = runner.invoke(app, ["topics", str(FIXTURE), "-m", "glove-50d", "-k", "3",
                              "--min-df", "2", "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert (out / "report.html").is_file() and "report.html" in res.output
    res = runner.invoke(app, ["topics", str(FIXTURE), "-m", "glove-50d", "-k", "3",
                              "--min-df", "2", "--out", str(tmp_path / "plain"), "-q",
                              "--no-report"])
    assert res.exit_code == 0 and not (tmp_path / "plain" / "report.html").exists()


# ------------------------------------------------------------------ browser
#: How to run the browser test, quoted in its skip reasons.
ENABLE_BROWSER = ("to run this test: bash scripts/run-tests.sh --with-browser (as root: installs "
                  "Debian's chromium and chromium-driver with apt-get; selenium comes with "
                  "pip install -e .[dev])")


def _browser():
    """A headless Chromium driven by selenium, or skip with the reason."""
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason=f"selenium is not installed; {ENABLE_BROWSER}")
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not binary or not driver_path:
        pytest.skip(f"Chromium / chromedriver not found; {ENABLE_BROWSER}")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1500"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver_path), options=opts)


def test_report_in_browser(clusters_report: Path, clusters: PhraseTopicModel) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    data = embedded(clusters_report.read_text(encoding="utf-8"))
    driver = _browser()
    try:
        driver.get(clusters_report.resolve().as_uri())
        WebDriverWait(driver, 20).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-rendered"))
        rows = driver.find_elements(By.CSS_SELECTOR, "#topic-list tbody tr")
        assert len(rows) == clusters.n_topics_
        assert clusters.topic_label(0) in rows[0].text or any(
            clusters.topic_label(0) in r.text for r in rows)
        marks = driver.find_elements(By.CSS_SELECTOR, "#map .pt")
        assert len(marks) == len(data["points"]) > 0
        box = marks[0].rect
        assert box["width"] > 0 and box["height"] > 0
        assert len(driver.find_elements(By.CSS_SELECTOR, "article.topic")) == clusters.n_topics_
        # hovering a point shows its term; clicking a topic row highlights its points
        ActionChains(driver).move_to_element(marks[0]).perform()
        tip = driver.find_element(By.ID, "tip")
        assert tip.is_displayed() and data["points"][0]["term"] in tip.text
        rows[0].click()
        assert driver.find_elements(By.CSS_SELECTOR, "#map .pt.on")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "report.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
    finally:
        driver.quit()
