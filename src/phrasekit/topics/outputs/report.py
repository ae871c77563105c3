"""``report.html``: one self-contained page to explore a topic run in a browser.

The page holds its data as embedded JSON and draws everything with a few lines of plain
JavaScript and SVG (no network at view time, no JS library): the run's metrics, an overview of
the topics (size, top words and phrases, typical documents), the views of ``report_views``
(intertopic distance map, term bars, hierarchy, shares over time and per class, document map;
their script and style are package data), a 2-D map of the topics' terms (t-SNE of their
embeddings) coloured by topic with hover labels, and one section per topic.

Works for every topic model: ``DocumentTopicModel`` (``--method documents``, where the map
shows each topic's listed terms, embedded for the map), ``PhraseTopicModel`` (``--method
clusters``), ``PNTM`` and ``UCTopicModel`` (``--method ccl``).
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from markupsafe import Markup

from phrasekit.io import Document, write_text
from phrasekit.phrases import as_documents
from phrasekit.text import TokenDocs, texts_digest, tokenize
from phrasekit.topics.methods.documents import DocumentTopicModel
from phrasekit.topics.methods.model import PhraseTopicModel
from phrasekit.topics.methods.pntm import PNTM
from phrasekit.topics.methods.uctopic import UCTopicModel
from phrasekit.topics.outputs.metrics import (
    npmi_coherence,
    phrase_informativeness,
    topic_diversity,
    word_diversity,
)
from phrasekit.topics.outputs.report_views import project_2d, report_views, view_assets

TopicModel = DocumentTopicModel | PhraseTopicModel | PNTM | UCTopicModel

logger = logging.getLogger(__name__)

#: At most this many terms are drawn on the map (the best of each topic).
MAX_MAP_POINTS = 1000


# ---------------------------------------------------------------- map
def _pick(scores: np.ndarray, labels: np.ndarray, k: int, max_points: int) -> np.ndarray:
    """Indices of the best-scoring terms of each topic, at most ``max_points`` in all."""
    per_topic = max(5, max_points // max(k, 1))
    chosen = []
    for t in range(k):
        members = np.flatnonzero(labels == t)
        chosen.extend(members[np.argsort(-scores[members], kind="stable")][:per_topic])
    return np.asarray(chosen, dtype=np.int64)


def map_points(model: TopicModel, max_points: int = MAX_MAP_POINTS,
               random_state: int = 0) -> list[dict[str, Any]]:
    """The map's points: ``{"term", "topic", "phrase", "x", "y"}`` for the best terms of every
    topic, placed by ``project_2d`` of their embeddings."""
    if isinstance(model, PNTM):
        model._check_fitted()
        vocab = model.term_vocabulary_
        L = model._prepare_terms(model.term_embeddings_)
        known = np.linalg.norm(model.term_embeddings_, axis=1) > 0.5
        scores = L @ model.components_.T
        bonus = model.term_bonus()
        if bonus is not None:
            scores = scores + (bonus.T if bonus.ndim == 2 else bonus[:, None])
        labels = np.where(known, scores.argmax(axis=1), -1)
        best = scores.max(axis=1)
        idx = _pick(best, labels, model.n_topics, max_points)
        terms, E = [vocab.surface[i] for i in idx], L[idx]
        topics, phrase = labels[idx], [i >= vocab.n_words for i in idx]
    elif isinstance(model, PhraseTopicModel):
        model._check_fitted()
        idx = _pick(model.term_scores_, model.labels_, model.n_topics_, max_points)
        terms, E = [model.terms_[i] for i in idx], model.embeddings_[idx]
        topics = model.labels_[idx]
        phrase = [not model.vocabulary_.is_word(int(i)) for i in idx]
    elif isinstance(model, DocumentTopicModel):
        model._check_fitted()
        per_topic = max(5, max_points // max(model.n_topics_, 1))
        listed = [(term, t) for t, ranked in enumerate(model.topics_)
                  for term, _ in ranked[:per_topic]]
        terms, topics = [term for term, _ in listed], np.asarray([t for _, t in listed])
        E = model.encoder_.encode(terms) if terms else np.zeros((0, 2))
        phrase = [len(term.split()) > 1 for term in terms]
    elif isinstance(model, UCTopicModel):
        model._check_fitted()
        idx = _pick(model.term_scores_, model.labels_, model.n_topics_, max_points)
        terms, E = [model.phrase_surface_[i] for i in idx], model.embeddings_[idx]
        topics = model.labels_[idx]
        phrase = [len(model.phrases_[i].split()) > 1 for i in idx]
    else:
        raise TypeError(f"no map for {type(model).__name__}; expected DocumentTopicModel, "
                        "PhraseTopicModel, PNTM or UCTopicModel")
    xy = project_2d(E, random_state=random_state)
    return [
        {"term": term, "topic": int(t), "phrase": bool(p),
         "x": round(float(x), 4), "y": round(float(y), 4)}
        for term, t, p, (x, y) in zip(terms, topics, phrase, xy, strict=True)
    ]


# ---------------------------------------------------------------- metrics
def topic_term_keys(model: TopicModel) -> list[list[str]]:
    """Per topic, its ranked terms as lower-cased token keys (what the metrics count)."""
    if isinstance(model, PNTM):
        return [list(k) for k in model.topic_keys_]
    return [[" ".join(tokenize(term)) for term, _ in topic] for topic in model.topics_]


def corpus_tokens(model: TopicModel, docs: Iterable[Document | str]) -> TokenDocs:
    """The tokenized corpus: the one the fit kept (``token_docs_``) when it was made from these
    very texts (checked by digest, a fraction of a second where tokenizing takes seconds per
    10,000 documents), else tokenized now. A model fitted on a sample of the corpus
    (``sample_index_``) gives its sample's tokens: the metrics are then the sample's."""
    kept = getattr(model, "token_docs_", None)
    sample = getattr(model, "sample_index_", None)
    if isinstance(kept, TokenDocs) and sample is not None and len(sample) < len(model.doc_ids_):
        return kept
    texts = [d.text for d in as_documents(docs)]
    if isinstance(kept, TokenDocs) and kept.source is not None \
            and kept.source == texts_digest(texts):
        return kept
    return TokenDocs(texts)


def run_metrics(model: TopicModel, docs: Iterable[Document | str]) -> dict[str, Any]:
    """Label-free quality numbers of a fit, from the corpus itself: mean and per-topic NPMI of
    the top-10 terms (document co-occurrence), diversity of the top-25, UCTopic's
    informativeness and within-topic word diversity of the top-10, unassigned documents."""
    token_docs = corpus_tokens(model, docs)
    keys = [[k for k in topic if k] for topic in topic_term_keys(model)]
    npmi, per_topic = npmi_coherence(keys, token_docs, top_n=10)
    labels = model.labels_ if isinstance(model, PNTM) else model.doc_labels_
    unassigned = int(np.sum(np.asarray(labels) < 0))
    return {
        "npmi": None if not np.isfinite(npmi) else round(npmi, 4),
        "npmi_per_topic": [None if not np.isfinite(s) else round(s, 4) for s in per_topic],
        "diversity": round(topic_diversity(keys, top_n=25), 4),
        "informativeness": _rounded(phrase_informativeness(keys, token_docs, top_n=10)[0], 5),
        "word_diversity": _rounded(word_diversity(keys, top_n=10)[0], 4),
        "unassigned_docs": unassigned,
        "unassigned_share": round(unassigned / max(len(labels), 1), 4),
        "metric_docs": len(token_docs),
    }


def _rounded(x: float, digits: int) -> float | None:
    return round(float(x), digits) if np.isfinite(x) else None


# ---------------------------------------------------------------- page
def _json_for_script(obj: Any) -> str:
    """JSON safe to embed in a ``<script>`` element (no ``</script>`` or ``<!--`` breakout)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render_report(data: dict[str, Any], points: Sequence[dict[str, Any]],
                  metrics: dict[str, Any] | None = None, title: str = "Topics",
                  views: dict[str, Any] | None = None) -> str:
    """The HTML page for a ``topics.json`` dict (``topics_to_dict`` / ``pntm_to_dict``), the
    map ``points``, the run's ``metrics`` and the ``views`` (``report_views``)."""
    payload = {
        "title": title,
        "generated": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "run": {k: v for k, v in data.items() if k not in ("topics", "doc_topics")},
        "topics": data["topics"],
        "points": list(points),
        "metrics": metrics or {},
        "views": views or {},
    }
    views_js, views_css = view_assets()
    return _page_template().render(title=title, css=Markup(_CSS + views_css), js=Markup(_JS),
                                   views_js=Markup(views_js),
                                   data=Markup(_json_for_script(payload)))


@functools.cache
def _page_template() -> jinja2.Template:
    """The page as a jinja2 template with HTML autoescaping: values are filled in one pass
    and escaped, so nothing in a title or a topic can become markup or script."""
    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined
                              ).from_string(_TEMPLATE)


def write_report(model: TopicModel, docs: Iterable[Document | str],
                 data: dict[str, Any], path: str | Path, title: str | None = None,
                 max_points: int = MAX_MAP_POINTS,
                 tables: dict[str, list[dict[str, Any]]] | None = None) -> Path:
    """Compute the map, metrics and views of a fitted model and write ``report.html``
    atomically. ``docs`` is read where the metrics need the corpus (``corpus_tokens``) and for
    the document map's snippets; ``tables``: the run's slice tables (``SliceFields.tables``)."""
    seed = int(getattr(model, "random_state", 0) or 0)
    points = map_points(model, max_points=max_points, random_state=seed)
    metrics = run_metrics(model, docs)
    views = report_views(model, docs, tables, random_state=seed)
    path = Path(path)
    write_text(path, render_report(data, points, metrics, title or "Topics", views))
    logger.info("wrote %s (%d map points)", path, len(points))
    return path


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }} — phrasekit</title>
<style>{{ css }}</style>
</head>
<body>
<header><h1 id="title">{{ title }}</h1><p id="subtitle"></p></header>
<main>
<section id="metrics-section"><h2>Run</h2><table id="metrics"></table></section>
<section id="overview"><h2>Topics</h2>
<p class="hint">Click a topic to highlight its terms on the map; click its name to read it.</p>
<table id="topic-list"><thead><tr><th>#</th><th>topic</th><th>docs</th>
<th>top words</th><th>top phrases</th><th>NPMI</th></tr></thead><tbody></tbody></table>
</section>
<div id="views"></div>
<section id="map-section"><h2>Map of terms</h2>
<p class="hint">Each point is one of a topic's best terms (circles: words, squares: multi-word
phrases), placed by t-SNE of its embedding and coloured by topic. Hover for the term.</p>
<div id="map-wrap"><svg id="map" viewBox="0 0 1000 600" role="img"
aria-label="2-D map of terms coloured by topic"></svg><div id="tip" hidden></div></div>
<div id="legend"></div>
</section>
<section id="topics"><h2>Topic by topic</h2></section>
</main>
<footer>Made by phrasekit. Self-contained: data and code are in this file.</footer>
<script type="application/json" id="report-data">{{ data }}</script>
<script>{{ js }}
{{ views_js }}</script>
</body>
</html>
"""

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;
background:#fafafa}
header,main,footer{max-width:1100px;margin:0 auto;padding:0 20px}
header{padding-top:18px}h1{margin:0 0 4px}h2{margin:28px 0 8px;border-bottom:1px solid #ddd}
#subtitle,.hint,footer{color:#666}.hint{font-size:13px;margin:4px 0 8px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eee;vertical-align:top}
#metrics{width:auto}#metrics th{font-weight:600;color:#555}
#topic-list tbody tr{cursor:pointer}#topic-list tbody tr:hover{background:#f0f4ff}
#topic-list tr.on{background:#e6efff}#topic-list td:nth-child(3){white-space:nowrap}
.swatch{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px;
vertical-align:-1px}
.bar{display:inline-block;height:8px;background:#9ab;margin-right:6px;vertical-align:1px}
#map-wrap{position:relative;background:#fff;border:1px solid #ddd}
#map{width:100%;height:auto;display:block}
#map .pt{stroke:#fff;stroke-width:.6;opacity:.85}
#map.focus .pt{opacity:.12}#map.focus .pt.on{opacity:1;stroke:#222}
#map text.lbl{font-size:13px;font-weight:600;fill:#222;paint-order:stroke;stroke:#fff;
stroke-width:3px;pointer-events:none}
#tip{position:absolute;pointer-events:none;background:#222;color:#fff;padding:3px 7px;
border-radius:4px;font-size:13px;white-space:nowrap}
#legend{margin:6px 0;font-size:13px}#legend span{display:inline-block;margin:2px 10px 2px 0;
cursor:pointer}
.topic{background:#fff;border:1px solid #e3e3e3;border-left:6px solid #999;padding:8px 14px;
margin:12px 0}
.topic h3{margin:4px 0}.topic dt{font-weight:600;margin-top:6px}.topic dd{margin:2px 0 0 0}
.topic li{margin:3px 0}.docid{font-family:monospace;color:#555}
footer{padding:30px 20px;font-size:13px}
"""

_JS = r"""
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const run = D.run, M = D.metrics || {};
  const palette = ["#4e79a7","#f28e2b","#e15759","#76b7b2","#59a14f","#edc948","#b07aa1",
    "#ff9da7","#9c755f","#bab0ac","#1f77b4","#2ca02c","#d62728","#9467bd","#8c564b",
    "#e377c2","#17becf","#bcbd22","#7f7f7f","#aec7e8"];
  const colour = t => t < palette.length ? palette[t]
    : "hsl(" + Math.round((t * 137.508) % 360) + ",55%,50%)";
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const terms = list => (list || []).map(x => x.term).join(", ") || "\u2014";
  const fmt = (x, d) => (x === null || x === undefined || Number.isNaN(x)) ? "\u2014"
    : Number(x).toFixed(d === undefined ? 3 : d);

  document.getElementById("subtitle").textContent =
    ({pntm: "PNTM (neural topic model)", ccl: "UCTopic (CCL-fine-tuned span embeddings)",
      documents: "Document clusters named by words and phrases"}
      [run.method] || "Phrase-embedding clusters") +
    " \u00b7 encoder " + (run.encoder || "?") + " \u00b7 generated " + D.generated;

  // ---- run metrics
  const mt = document.getElementById("metrics");
  const rows = [
    ["documents", run.n_docs], ["topics", run.n_topics],
    ["terms (phrases)", run.n_terms + " (" + run.n_phrases + ")"],
    ["NPMI of top-10 terms (mean)" + (M.metric_docs < run.n_docs
      ? ", over the " + M.metric_docs + " documents topics were fitted on" : ""), fmt(M.npmi)],
    ["diversity of top-25 terms", fmt(M.diversity)],
    ["informativeness (word tf-idf) of top-10 terms", fmt(M.informativeness, 4)],
    ["word diversity within a topic's top-10", fmt(M.word_diversity)],
    ["documents in no topic", M.unassigned_docs === undefined ? "\u2014"
      : M.unassigned_docs + " (" + fmt(100 * M.unassigned_share, 1) + "%)"],
  ];
  if (run.timings_s) rows.push(["time", Object.entries(run.timings_s)
    .map(([k, v]) => k + " " + fmt(v, 1) + "s").join(", ")]);
  for (const [k, v] of rows) {
    const tr = el("tr"); tr.append(el("th", {}, k), el("td", {}, String(v))); mt.append(tr);
  }
  // ---- the score of every K tried, the chosen one marked
  const curve = run.k_scores || [];
  if (curve.length > 1) {
    const ks = curve.map(r => r.k), ys = curve.map(r => r.score);
    const lo = Math.min(...ys), hi = Math.max(...ys), W = 360, H = 80, P = 6;
    const X = k => P + (W - 2 * P) * (k - ks[0]) / Math.max(1, ks[ks.length - 1] - ks[0]);
    const Y = y => H - P - (H - 2 * P) * (hi > lo ? (y - lo) / (hi - lo) : 0.5);
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H); svg.setAttribute("width", W);
    svg.setAttribute("role", "img"); svg.setAttribute("aria-label", "score per K");
    const line = document.createElementNS(svg.namespaceURI, "polyline");
    line.setAttribute("points", curve.map(r => X(r.k) + "," + Y(r.score)).join(" "));
    line.setAttribute("fill", "none"); line.setAttribute("stroke", "#555");
    svg.append(line);
    for (const r of curve) {
      const c = document.createElementNS(svg.namespaceURI, "circle");
      const chosen = r.k === run.n_topics;
      c.setAttribute("cx", X(r.k)); c.setAttribute("cy", Y(r.score));
      c.setAttribute("r", chosen ? 4 : 2); c.setAttribute("fill", chosen ? "#d62728" : "#555");
      const tip = document.createElementNS(svg.namespaceURI, "title");
      tip.textContent = "K=" + r.k + ": " + fmt(r.score, 4); c.append(tip); svg.append(c);
    }
    const tr = el("tr"), td = el("td");
    td.append(svg, el("div", {class: "hint"}, "K from " + ks[0] + " to " + ks[ks.length - 1]
      + "; chosen K=" + run.n_topics + " (red)" + (run.k_rule ? ": " + run.k_rule : "")));
    tr.append(el("th", {}, "K chosen by " + run.k_chosen_by), td); mt.append(tr);
  }

  // ---- overview table
  const order = D.topics.slice().sort((a, b) => b.n_docs - a.n_docs);
  const maxDocs = Math.max(1, ...D.topics.map(t => t.n_docs));
  const body = document.querySelector("#topic-list tbody");
  const rowsById = {};
  for (const t of order) {
    const tr = el("tr", {"data-topic": t.id});
    const name = el("td");
    name.append(el("span", {class: "swatch", style: "background:" + colour(t.id)}));
    const a = el("a", {href: "#topic-" + t.id}, t.label); name.append(a);
    const docs = el("td");
    docs.append(el("span", {class: "bar", style: "width:" +
      Math.round(60 * t.n_docs / maxDocs) + "px"}), document.createTextNode(String(t.n_docs)));
    const npmi = (M.npmi_per_topic || [])[t.id];
    tr.append(el("td", {}, String(t.id)), name, docs,
      el("td", {}, terms((t.top_words || []).slice(0, 8))),
      el("td", {}, terms((t.top_phrases || []).slice(0, 6))), el("td", {}, fmt(npmi)));
    tr.addEventListener("click", ev => { if (ev.target.tagName !== "A") focus(t.id); });
    rowsById[t.id] = tr; body.append(tr);
  }

  // ---- map
  const svg = document.getElementById("map"), NS = "http://www.w3.org/2000/svg";
  const W = 1000, H = 600, pad = 24, tip = document.getElementById("tip");
  const byTopic = {};
  const labelOf = {}; for (const t of D.topics) labelOf[t.id] = t.label;
  for (const p of D.points) {
    const x = pad + p.x * (W - 2 * pad), y = pad + (1 - p.y) * (H - 2 * pad);
    let s;
    if (p.phrase) {
      s = document.createElementNS(NS, "rect");
      s.setAttribute("x", x - 4); s.setAttribute("y", y - 4);
      s.setAttribute("width", 8); s.setAttribute("height", 8);
    } else {
      s = document.createElementNS(NS, "circle");
      s.setAttribute("cx", x); s.setAttribute("cy", y); s.setAttribute("r", 4);
    }
    s.setAttribute("class", "pt t" + p.topic); s.setAttribute("fill", colour(p.topic));
    s.addEventListener("mouseenter", () => {
      tip.textContent = p.term + "  \u2014  topic " + p.topic + ": " + (labelOf[p.topic] || "");
      tip.hidden = false;
      const r = svg.getBoundingClientRect();
      tip.style.left = (x / W * r.width + 10) + "px";
      tip.style.top = (y / H * r.height - 28) + "px";
    });
    s.addEventListener("mouseleave", () => { tip.hidden = true; });
    s.addEventListener("click", () => focus(p.topic));
    svg.append(s);
    (byTopic[p.topic] = byTopic[p.topic] || []).push([x, y]);
  }
  for (const [t, xy] of Object.entries(byTopic)) {  // topic number at the median point
    const xs = xy.map(v => v[0]).sort((a, b) => a - b);
    const ys = xy.map(v => v[1]).sort((a, b) => a - b);
    const lbl = document.createElementNS(NS, "text");
    lbl.setAttribute("x", Math.min(W - 90, Math.max(90, xs[xs.length >> 1])));
    lbl.setAttribute("y", ys[ys.length >> 1]); lbl.setAttribute("text-anchor", "middle");
    lbl.setAttribute("class", "lbl");
    lbl.textContent = t + " " + (labelOf[t] || "").split(", ").slice(0, 2).join(", ");
    svg.append(lbl);
  }
  const legend = document.getElementById("legend");
  for (const t of order) {
    const s = el("span", {"data-topic": t.id});
    s.append(el("span", {class: "swatch", style: "background:" + colour(t.id)}),
      document.createTextNode(t.id + ": " + t.label));
    s.addEventListener("click", () => focus(t.id)); legend.append(s);
  }
  let focused = null;
  function focus(t) {
    focused = focused === t ? null : t;
    svg.classList.toggle("focus", focused !== null);
    for (const n of svg.querySelectorAll(".pt"))
      n.classList.toggle("on", focused !== null && n.classList.contains("t" + focused));
    for (const [id, tr] of Object.entries(rowsById)) tr.classList.toggle("on", +id === focused);
  }

  // ---- topic sections
  const sec = document.getElementById("topics");
  for (const t of order) {
    const box = el("article", {class: "topic", id: "topic-" + t.id,
      style: "border-left-color:" + colour(t.id)});
    box.append(el("h3", {}, "Topic " + t.id + ": " + t.label));
    box.append(el("p", {class: "hint"}, t.n_docs + " documents" +
      (t.n_terms !== undefined ? ", " + t.n_terms + " terms" : "") + " \u00b7 NPMI " +
      fmt((M.npmi_per_topic || [])[t.id])));
    const dl = el("dl");
    const add = (k, v) => { dl.append(el("dt", {}, k)); const dd = el("dd"); dd.append(v);
      dl.append(dd); };
    add("Top words", document.createTextNode(terms(t.top_words)));
    add("Top phrases", document.createTextNode(terms(t.top_phrases)));
    if (t.top_sentences && t.top_sentences.length) {
      const ul = el("ul"); for (const s of t.top_sentences) ul.append(el("li", {}, s.text));
      add("Nearest sentences", ul);
    }
    if (t.typical_docs && t.typical_docs.length) {
      const ul = el("ul");
      for (const d of t.typical_docs) {
        const li = el("li"); li.append(el("span", {class: "docid"}, d.id),
          document.createTextNode(" (" + Math.round(100 * d.share) + "%): " + d.snippet));
        ul.append(li);
      }
      add("Typical documents", ul);
    }
    box.append(dl); sec.append(box);
  }
  window.phrasekitReport = {D: D, colour: colour, el: el, fmt: fmt, focus: focus};
})();
"""
