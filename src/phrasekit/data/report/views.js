// phrasekit report.html: the views of topics as a whole (data: D.views, from
// phrasekit.topics.outputs.report_views). Plain JavaScript and SVG, no library, no network.
"use strict";
(function () {
  const R = window.phrasekitReport, D = R.D, V = D.views || {};
  const NS = "http://www.w3.org/2000/svg", host = document.getElementById("views");
  const labelOf = {}, sizeOf = {};
  for (const t of D.topics) { labelOf[t.id] = t.label; sizeOf[t.id] = t.n_docs; }
  const order = D.topics.slice().sort((a, b) => b.n_docs - a.n_docs);
  const topicName = t => t < 0 ? "no topic" : "topic " + t + ": " + (labelOf[t] || "");
  const colourOf = t => t < 0 ? "#bbb" : R.colour(t);
  const pct = x => (100 * x).toFixed(1) + "%";
  const cut = (s, n) => s.length > n ? s.slice(0, n - 1) + "\u2026" : s;

  const svgEl = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svgBox = (id, W, H, label) => svgEl("svg", {id: id, class: "view", role: "img",
    viewBox: "0 0 " + W + " " + H, "aria-label": label});
  const section = (id, title, hint) => {
    const s = R.el("section", {id: id});
    s.append(R.el("h2", {}, title));
    if (hint) s.append(R.el("p", {class: "hint"}, hint));
    host.append(s);
    return s;
  };

  // one tooltip for every view, its text from the hovered mark
  const tip = R.el("div", {id: "vtip"});
  tip.hidden = true;
  document.body.append(tip);
  const hover = (root, textOf) => {
    root.addEventListener("mousemove", ev => {
      const text = textOf(ev.target);
      if (!text) { tip.hidden = true; return; }
      tip.textContent = text; tip.hidden = false;
      tip.style.left = Math.max(4, Math.min(ev.clientX + 14, window.innerWidth - 430)) + "px";
      tip.style.top = (ev.clientY + 16) + "px";
    });
    root.addEventListener("mouseleave", () => { tip.hidden = true; });
  };
  const axisY = (svg, x0, x1, y0, y1, hi, label) => {  // a y axis with 0, hi/2 and hi
    const g = svgEl("g", {class: "axis"});
    g.append(svgEl("line", {x1: x0, y1: y0, x2: x0, y2: y1}));
    for (const f of [0, 0.5, 1]) {
      const y = y0 + (y1 - y0) * f;
      g.append(svgEl("line", {x1: x0 - 4, y1: y, x2: x1, y2: y, class: "grid"}),
        svgEl("text", {x: x0 - 6, y: y + 4, "text-anchor": "end"}, pct(hi * f)));
    }
    g.append(svgEl("text", {x: 12, y: y1 - 6}, label));
    svg.append(g);
  };

  // ---- intertopic distance map
  function distanceMap() {
    const pts = V.topic_map || [];
    if (!pts.length) return;
    const s = section("topic-distance-section", "Intertopic distance map",
      "Each circle is a topic, its area its share of the documents, placed by a 2-D " +
      "projection (t-SNE, or PCA for few topics) of the topic centres: close topics are near. " +
      "Hover for its name; click to mark its terms on the term map below.");
    const W = 1000, H = 560, pad = 100, svg = svgBox("topic-distance", W, H,
      "intertopic distance map");
    const total = Math.max(1, D.topics.reduce((a, t) => a + t.n_docs, 0));
    const big = pts.slice().sort((a, b) => (sizeOf[b.topic] || 0) - (sizeOf[a.topic] || 0));
    for (const p of big) {  // largest first, so small topics stay on top
      const x = pad + p.x * (W - 2 * pad), y = pad + (1 - p.y) * (H - 2 * pad);
      const share = (sizeOf[p.topic] || 0) / total;
      svg.append(svgEl("circle", {cx: x, cy: y, r: Math.min(pad, 6 + 110 * Math.sqrt(share)).toFixed(1),
        fill: colourOf(p.topic), "data-topic": p.topic}));
      svg.append(svgEl("text", {x: x, y: y + 4, class: "id"}, String(p.topic)));
    }
    hover(svg, n => {
      const t = n.dataset ? n.dataset.topic : undefined;
      if (t === undefined) return null;
      return topicName(+t) + " \u2014 " + sizeOf[t] + " documents (" +
        pct((sizeOf[t] || 0) / total) + ")";
    });
    svg.addEventListener("click", ev => {
      const t = ev.target.dataset ? ev.target.dataset.topic : undefined;
      if (t !== undefined) R.focus(+t);
    });
    s.append(svg);
  }

  // ---- term bars per topic
  function termBars() {
    const s = section("term-bars-section", "Top terms per topic",
      "Each topic's 6 best words and 4 best phrases, by their weight (how distinctive of " +
      "the topic they are).");
    const key = R.el("p", {class: "hint"});
    key.append(R.el("span", {class: "keyw word"}), document.createTextNode("word (pale bar)"),
      R.el("span", {class: "keyw phrase"}),
      document.createTextNode("phrase of several words (outlined bar, bold italic)"));
    s.append(key);
    const grid = R.el("div", {id: "term-bars"});
    for (const t of order) {
      const phrases = new Set((t.top_phrases || []).slice(0, 4).map(x => x.term));
      const list = (t.top_words || []).slice(0, 6).concat((t.top_phrases || []).slice(0, 4))
        .sort((a, b) => b.score - a.score);
      if (!list.length) continue;
      const box = R.el("div", {class: "bars", "data-topic": t.id});
      box.append(R.el("h4", {title: t.label}, "Topic " + t.id + ": " + t.label));
      const W = 360, row = 20, left = 175, H = row * list.length + 4;
      const svg = svgEl("svg", {class: "term-bar", viewBox: "0 0 " + W + " " + H, role: "img",
        "aria-label": "top terms of topic " + t.id});
      const hi = Math.max(1e-9, ...list.map(x => Math.max(0, x.score)));
      list.forEach((x, i) => {
        const kind = phrases.has(x.term) || x.term.includes(" ") ? "phrase" : "word";
        const w = Math.max(1, (W - left - 48) * Math.max(0, x.score) / hi), y = i * row;
        const bar = svgEl("rect", {x: left, y: y + 3, width: w.toFixed(1), height: row - 6,
          fill: R.colour(t.id), class: kind});
        bar.append(svgEl("title", {}, x.term + " (" + kind + "): " + R.fmt(x.score, 4)));
        svg.append(svgEl("text", {x: left - 6, y: y + 14, "text-anchor": "end", class: kind},
          cut(x.term, 26)), bar, svgEl("text", {x: left + w + 4, y: y + 14, class: "val"},
          R.fmt(x.score, 3)));
      });
      box.append(svg); grid.append(box);
    }
    s.append(grid);
  }

  // ---- hierarchy as a dendrogram
  function hierarchy() {
    const tree = V.hierarchy || {}, rows = tree.rows || [];
    const s = section("hierarchy-section", "Topic hierarchy", rows.length ?
      "Topics joined from the closest pair up (average linkage of the topic centres; cosine " +
      "distance on the axis). Hover a join for the name of the topics below it." : null);
    if (!rows.length) {
      s.append(R.el("p", {class: "note", id: "hierarchy-note"},
        tree.note || "No hierarchy for this run."));
      return;
    }
    const K = D.topics.length, kids = {}, dist = {}, name = {}, leaves = [];
    for (const r of rows) { kids[r.id] = r.children; dist[r.id] = r.distance; name[r.id] = r; }
    const root = rows[rows.length - 1].id;
    const walk = n => { if (n < K) leaves.push(n); else kids[n].forEach(walk); };
    walk(root);
    const row = 22, left = 340, W = 1000, H = row * leaves.length + 50;
    const X = d => left + (W - left - 30) * d / Math.max(1e-9, dist[root]);
    const yOf = {};
    leaves.forEach((t, i) => { yOf[t] = 16 + i * row + row / 2; });
    const svg = svgBox("hierarchy", W, H, "topic hierarchy");
    const links = svgEl("g"), joins = svgEl("g");
    const place = n => {
      if (n < K) return [X(0), yOf[n]];
      const [a, b] = kids[n].map(place), x = X(dist[n]);
      links.append(svgEl("path", {d: "M" + a[0] + "," + a[1] + "H" + x + "V" + b[1] + "H" + b[0]}));
      joins.append(svgEl("circle", {cx: x, cy: (a[1] + b[1]) / 2, r: 4, "data-node": n}));
      return [x, (a[1] + b[1]) / 2];
    };
    place(root);
    for (const t of leaves) {
      svg.append(svgEl("rect", {x: left - 14, y: yOf[t] - 5, width: 10, height: 10,
        fill: colourOf(t)}), svgEl("text", {x: left - 20, y: yOf[t] + 4, "text-anchor": "end",
        "data-topic": t}, cut(t + ": " + (labelOf[t] || ""), 48)));
    }
    const y = H - 26, g = svgEl("g", {class: "axis"});
    g.append(svgEl("line", {x1: X(0), y1: y, x2: X(dist[root]), y2: y}));
    for (const f of [0, 0.5, 1]) {
      g.append(svgEl("text", {x: X(f * dist[root]), y: y + 16, "text-anchor": "middle"},
        (f * dist[root]).toFixed(2)));
    }
    g.append(svgEl("text", {x: left - 20, y: y + 16, "text-anchor": "end"}, "cosine distance"));
    svg.append(links, joins, g);
    hover(svg, n => {
      if (n.dataset && n.dataset.topic !== undefined) return topicName(+n.dataset.topic);
      const r = n.dataset ? name[n.dataset.node] : undefined;
      return r ? r.label + " \u2014 topics " + r.topics.join(", ") + " joined at distance " +
        r.distance.toFixed(3) : null;
    });
    s.append(svg);
  }

  // the hover text of a slice table's mark: the slice, the topic, its count and its terms
  const sliceTip = (rows, mark, key) => {
    const r = mark.dataset ? rows[mark.dataset.row] : undefined;
    return r ? r[key] + " \u00b7 " + topicName(r.topic) + " \u2014 " + r.frequency +
      " documents (" + pct(r.share) + "); terms: " + r.terms.join(", ") : null;
  };

  // ---- topic shares over time
  function overTime() {
    const rows = V.over_time || [];
    if (!rows.length) return;
    const s = section("over-time-section", "Topic shares over time",
      "Each line is a topic's share of the documents of each time bin; hover a point for its " +
      "count and the topic's most distinctive terms in that bin. Click a topic in the legend " +
      "of the term map to mark it.");
    const bins = [...new Set(rows.map(r => r.timestamp))].sort();
    const at = {}, topics = [...new Set(rows.map(r => r.topic))].sort((a, b) => a - b);
    rows.forEach((r, i) => { at[r.topic + "|" + r.timestamp] = i; });
    const W = 1000, H = 380, L = 60, Rt = 20, T = 15, B = 70;
    const hi = Math.max(1e-9, ...rows.map(r => r.share));
    const X = i => L + (W - L - Rt) * (bins.length > 1 ? i / (bins.length - 1) : 0.5);
    const Y = v => H - B - (H - B - T) * v / hi;
    const svg = svgBox("over-time", W, H, "topic shares over time");
    axisY(svg, L, W - Rt, Y(0), Y(hi), hi, "share");
    const every = Math.ceil(bins.length / 16);
    bins.forEach((b, i) => {
      if (i % every) return;
      svg.append(svgEl("text", {x: X(i), y: H - B + 14, "text-anchor": "end", class: "tick",
        transform: "rotate(-35 " + X(i) + " " + (H - B + 14) + ")"}, b));
    });
    const dots = svgEl("g");  // drawn over every line
    for (const t of topics) {
      const xy = bins.map((b, i) => {
        const r = rows[at[t + "|" + b]];
        return [X(i), Y(r ? r.share : 0)];
      });
      svg.append(svgEl("polyline", {points: xy.map(p => p.join(",")).join(" "),
        stroke: colourOf(t), class: "series"}));
      bins.forEach((b, i) => {
        if (at[t + "|" + b] === undefined) return;
        dots.append(svgEl("circle", {cx: xy[i][0], cy: xy[i][1], r: 3.5, fill: colourOf(t),
          "data-row": at[t + "|" + b]}));
      });
    }
    svg.append(dots);
    hover(svg, n => sliceTip(rows, n, "timestamp"));
    s.append(svg);
  }

  // ---- topic shares per class
  function perClass() {
    const rows = V.per_class || [];
    if (!rows.length) return;
    const s = section("per-class-section", "Topic shares per class",
      "One bar per class, split into its documents' topics; hover a segment for the count and " +
      "the topic's most distinctive terms in that class.");
    const classes = [...new Set(rows.map(r => r["class"]))].sort();
    const row = 26, left = 200, W = 1000, H = row * classes.length + 40;
    const svg = svgBox("per-class", W, H, "topic shares per class");
    classes.forEach((c, i) => {
      const y = 10 + i * row;
      svg.append(svgEl("text", {x: left - 8, y: y + 16, "text-anchor": "end"}, cut(c, 30)));
      let x = left;
      for (const [j, r] of rows.entries()) {
        if (r["class"] !== c) continue;
        const w = (W - left - 20) * r.share;
        svg.append(svgEl("rect", {x: x.toFixed(1), y: y, width: w.toFixed(1), height: row - 6,
          fill: colourOf(r.topic), "data-row": j}));
        x += w;
      }
    });
    const g = svgEl("g", {class: "axis"}), y = H - 18;
    for (const f of [0, 0.5, 1]) {
      g.append(svgEl("text", {x: left + (W - left - 20) * f, y: y + 4, "text-anchor": "middle"},
        pct(f)));
    }
    svg.append(g);
    hover(svg, n => sliceTip(rows, n, "class"));
    s.append(svg);
  }

  // ---- document map
  function docMap() {
    const M = V.documents;
    if (!M || !M.x) return;
    let note = M.n_shown + " of " + M.n_docs + " documents shown";
    if (M.sampled) note += ": a random sample (at most " + M.max_points + " are drawn)";
    else if (M.n_shown < M.n_placeable) note += " (" + (M.n_placeable - M.n_shown) +
      " with no words to place them by are left out)";
    if (M.n_placeable < M.n_docs) note += ", from the " + M.n_placeable +
      " documents the topics were fitted on";
    const s = section("doc-map-section", "Document map",
      "Each point is a document, placed by t-SNE of " + M.basis + " and coloured by topic " +
      "(grey: no topic); hover a point for its topic and the start of its text.");
    s.append(R.el("p", {class: "hint", id: "doc-map-note"}, note + "."));
    const W = 1000, H = 640, pad = 16, svg = svgBox("doc-map", W, H, "document map");
    const r = M.x.length > 1500 ? 2.5 : 4, frag = document.createDocumentFragment();
    for (let i = 0; i < M.x.length; i++) {
      frag.append(svgEl("circle", {cx: (pad + M.x[i] * (W - 2 * pad)).toFixed(1),
        cy: (pad + (1 - M.y[i]) * (H - 2 * pad)).toFixed(1), r: r,
        fill: colourOf(M.topic[i]), "data-i": i}));
    }
    svg.append(frag);
    const legend = R.el("p", {class: "hint"});
    for (const t of order) {
      legend.append(R.el("span", {class: "swatch", style: "background:" + colourOf(t.id)}),
        document.createTextNode(t.id + ": " + cut(t.label, 40) + "\u2003"));
    }
    hover(svg, n => {
      const i = n.dataset ? n.dataset.i : undefined;
      return i === undefined ? null : M.id[i] + " \u00b7 " + topicName(M.topic[i]) + "\n" +
        M.text[i];
    });
    s.append(svg, legend);
  }

  distanceMap();
  termBars();
  hierarchy();
  overTime();
  perClass();
  docMap();
  document.body.setAttribute("data-rendered", "true");
})();
