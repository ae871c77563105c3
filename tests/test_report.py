"""report.html: map, metrics, views and page of a topic run, and a real browser loading it.

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
from phrasekit.text import snippet
from phrasekit.topics import (
    PNTM,
    DocumentTopicModel,
    PhraseTopicModel,
    write_pntm_outputs,
    write_topic_outputs,
)
from phrasekit.topics.outputs.report import (
    corpus_tokens,
    map_points,
    project_2d,
    render_report,
    run_metrics,
)
from phrasekit.topics.outputs.report_views import document_map, topic_tree

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


@pytest.fixture(scope="module")
def documents_model(docs) -> DocumentTopicModel:
    """Document topics fitted on 50 of the 80 abstracts (the other 30 placed afterwards)."""
    return DocumentTopicModel(encoder="glove-50d", n_topics=5, min_df=2, fit_docs=50).fit(docs)


@pytest.fixture(scope="module")
def slice_tables(documents_model, docs) -> dict[str, list[dict]]:
    """Topics per month (from the arXiv ids) and per archive, as the CLI writes them."""
    months = [f"20{d.id[:2]}-{d.id[2:4]}" for d in docs]
    return {"topics_over_time.csv": documents_model.topics_over_time(months, "month"),
            "topics_per_class.csv": documents_model.topics_per_class(
                [d.meta["label"] for d in docs])}


@pytest.fixture(scope="module")
def documents_report(documents_model, docs, slice_tables, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("documents_report") / "run"
    return write_topic_outputs(documents_model, docs, out, report=True,
                               tables=slice_tables)["report"]


def test_project_2d_of_identical_rows_and_of_one_dimension() -> None:
    """Ten identical documents crashed t-SNE (a segfault in `topics apply`); a one-topic saved
    model gave one-column shares, which PCA to two dimensions refused."""
    rng = np.random.default_rng(0)
    X = np.vstack([np.tile(rng.normal(size=16), (30, 1)), rng.normal(size=(12, 16))])
    xy = project_2d(X)
    assert xy.shape == (42, 2) and np.isfinite(xy).all()
    assert (xy[:30] == xy[0]).all()  # identical rows share a point
    assert project_2d(np.ones((30, 16))).shape == (30, 2)
    one = project_2d(rng.uniform(0.1, 1.0, size=(40, 1)))
    assert one.shape == (40, 2) and np.isfinite(one).all()


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


def assert_self_contained(page: str) -> None:
    """Nothing in the page is fetched at view time: no external scripts, styles, images or
    fonts, no request made by script."""
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', page)
    assert "@import" not in page and "url(" not in page
    assert not re.search(r"\b(fetch|XMLHttpRequest|import)\s*\(|https?://(?!www\.w3\.org)",
                         page.split('id="report-data">')[0] + page.split("</script>", 1)[1])


def test_report_is_self_contained(clusters_report: Path, clusters: PhraseTopicModel) -> None:
    page = clusters_report.read_text(encoding="utf-8")
    assert_self_contained(page)
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


def test_report_views_embedded(documents_report: Path, documents_model: DocumentTopicModel,
                               docs, slice_tables) -> None:
    page = documents_report.read_text(encoding="utf-8")
    assert_self_contained(page)
    assert "phrasekitReport" in page and "Intertopic distance map" in page
    views = embedded(page)["views"]
    k = documents_model.n_topics_
    assert [p["topic"] for p in views["topic_map"]] == list(range(k))
    assert all(0 <= p["x"] <= 1 and 0 <= p["y"] <= 1 for p in views["topic_map"])
    tree = views["hierarchy"]["rows"]
    assert len(tree) == k - 1 and tree[-1]["topics"] == list(range(k))
    assert [r["children"] for r in tree] == [
        r["children"] for r in documents_model.hierarchical_topics()]
    assert views["over_time"] == slice_tables["topics_over_time.csv"]
    assert views["per_class"] == slice_tables["topics_per_class.csv"]
    m = views["documents"]  # the 50 fitted documents, each with its topic and snippet
    assert (m["n_docs"], m["n_placeable"], m["n_shown"], m["sampled"]) == (80, 50, 50, False)
    fitted = {documents_model.doc_ids_[i] for i in documents_model.sample_index_}
    assert set(m["id"]) == fitted and len(m["x"]) == len(m["y"]) == len(m["text"]) == 50
    by_id = {d.id: (n, d) for n, d in enumerate(docs)}
    for doc_id, topic, text in zip(m["id"], m["topic"], m["text"], strict=True):
        n, doc = by_id[doc_id]
        assert topic == documents_model.doc_labels_[n] and text == snippet(doc.text, 160)


def test_document_map_samples(documents_model: DocumentTopicModel, docs) -> None:
    m = document_map(documents_model, docs, max_points=20, random_state=1)
    assert (m["n_shown"], m["sampled"], len(set(m["id"]))) == (20, True, 20)
    assert m == document_map(documents_model, docs, max_points=20, random_state=1)
    with pytest.raises(ValueError, match="not the documents"):
        document_map(documents_model, docs[:40], max_points=20)


def test_views_of_a_method_without_centres(clusters_report: Path,
                                           clusters: PhraseTopicModel) -> None:
    views = embedded(clusters_report.read_text(encoding="utf-8"))["views"]
    assert views["hierarchy"] == topic_tree(clusters)
    assert views["hierarchy"]["note"].startswith("No hierarchy") and "rows" not in views[
        "hierarchy"]
    assert views["documents"]["basis"] == "each document's topic shares"
    placed = int((np.abs(clusters.doc_topics_).sum(axis=1) > 0).sum())  # docs with terms
    assert (views["documents"]["n_placeable"], views["documents"]["n_shown"]) == (80, placed)
    assert len(views["topic_map"]) == clusters.n_topics_
    assert "over_time" not in views and "per_class" not in views


def test_views_text_cannot_break_out() -> None:
    evil = "</script><script>alert(1)</script><!--"
    data = {"topics": [], "doc_topics": [], "n_docs": 1}
    views = {"documents": {"x": [0.5], "y": [0.5], "topic": [0], "id": [evil], "text": [evil]},
             "per_class": [{"topic": 0, "label": evil, "class": evil, "frequency": 1,
                            "share": 1.0, "terms": [evil]}]}
    page = render_report(data, [], {}, views=views)
    assert "alert(1)</script>" not in page and "<!--" not in page
    assert embedded(page)["views"] == views


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


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module's browser tests."""
    driver = _browser()
    yield driver
    driver.quit()


def _open(driver, page: Path) -> None:
    """Load a report and wait until its script has drawn every view."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page.resolve().as_uri())
    WebDriverWait(driver, 20).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-rendered"))


def _hover_tip(driver, selector: str) -> tuple[dict, str]:
    """Hover the first mark matching ``selector``: the data of the mark under the pointer
    (marks may overlap) and the text of the views' tooltip."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    mark = driver.find_element(By.CSS_SELECTOR, selector)
    ActionChains(driver).move_to_element(mark).perform()
    under = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return Object.assign({}, document.elementFromPoint(r.x + r.width / 2,"
        " r.y + r.height / 2).dataset);", mark)
    tip = driver.find_element(By.ID, "vtip")
    assert tip.is_displayed(), selector
    return under, " ".join(tip.text.split())


def _assert_clean_load(driver) -> None:
    """No console error, and nothing fetched: the page loaded no resource at all."""
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    fetched = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert fetched == []


def test_report_in_browser(clusters_report: Path, clusters: PhraseTopicModel, browser) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    data = embedded(clusters_report.read_text(encoding="utf-8"))
    driver = browser
    _open(driver, clusters_report)
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
    # the views of a method without topic centres: no dendrogram, a note instead
    assert driver.find_element(By.ID, "hierarchy-note").text.startswith("No hierarchy")
    assert not driver.find_elements(By.ID, "hierarchy")
    shown = data["views"]["documents"]["n_shown"]
    assert len(driver.find_elements(By.CSS_SELECTOR, "#doc-map circle")) == shown > 0
    assert f"{shown} of 80 documents shown" in driver.find_element(By.ID, "doc-map-note").text
    _assert_clean_load(driver)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000


def test_report_views_in_browser(documents_report: Path, documents_model: DocumentTopicModel,
                                 browser) -> None:
    from selenium.webdriver.common.by import By

    data = embedded(documents_report.read_text(encoding="utf-8"))
    views, k = data["views"], documents_model.n_topics_
    _open(browser, documents_report)
    expected = {"#topic-distance circle": k, "#term-bars svg.term-bar": k,
                "#hierarchy path": k - 1,
                "#over-time polyline": len({r["topic"] for r in views["over_time"]}),
                "#per-class rect": len(views["per_class"]),
                "#doc-map circle": views["documents"]["n_shown"]}
    for selector, n in expected.items():  # every view drew every one of its marks
        marks = browser.find_elements(By.CSS_SELECTOR, selector)
        assert len(marks) == n > 0, selector
        assert all(m.rect["width"] + m.rect["height"] > 0 for m in marks[:10]), selector
    # words and phrases are drawn differently in the term bars
    phrases = browser.find_elements(By.CSS_SELECTOR, "#term-bars rect.phrase")
    words = browser.find_elements(By.CSS_SELECTOR, "#term-bars rect.word")
    assert len(phrases) == sum(min(4, len(t["top_phrases"])) for t in data["topics"]) > 0
    assert len(words) == sum(min(6, len(t["top_words"])) for t in data["topics"])
    assert words[0].value_of_css_property("fill-opacity") != \
        phrases[0].value_of_css_property("fill-opacity")
    # hover texts: a document's snippet, a topic's name, a join's name
    under, text = _hover_tip(browser, "#doc-map circle")
    docs_view = views["documents"]
    i = int(under["i"])
    assert docs_view["id"][i] in text and " ".join(docs_view["text"][i][:40].split()) in text
    under, text = _hover_tip(browser, "#topic-distance circle")
    assert documents_model.topic_label(int(under["topic"])) in text
    under, text = _hover_tip(browser, "#hierarchy circle")
    row = next(r for r in views["hierarchy"]["rows"] if r["id"] == int(under["node"]))
    assert row["label"] in text
    for selector, key, table in (("#over-time circle", "timestamp", views["over_time"]),
                                 ("#per-class rect", "class", views["per_class"])):
        under, text = _hover_tip(browser, selector)
        row = table[int(under["row"])]
        assert text.startswith(row[key]) and ", ".join(row["terms"]) in text
    _assert_clean_load(browser)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report_views.png"
    browser.find_element(By.ID, "views").screenshot(str(shot))
    assert shot.stat().st_size > 10_000
