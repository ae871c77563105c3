"""The Markdown renderings of topic outputs (``topics.md``) and the timing line: every text
from a corpus (labels, terms, snippets, document ids) escaped, on one line, and without
bidirectional controls, so a document cannot add headings, links or HTML to the file."""

from __future__ import annotations

import re
from typing import Any

from phrasekit.text import md_escape, md_plain


def _terms_line(entries: list[dict[str, Any]]) -> str:
    return ", ".join(e["term"] for e in entries) if entries else "—"


def _md_code(text: str) -> str:
    """``text`` (a document id) as a code span that nothing inside it can close: fenced by one
    backtick more than its longest run of them, so Markdown and HTML in it stay text."""
    text = md_plain(text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def topics_to_markdown(data: dict[str, Any]) -> str:
    """Render the dict of ``topics_to_dict`` as readable Markdown."""
    lines = ["# Topics", ""]
    n_assigned = sum(t["n_docs"] for t in data["topics"])
    how = "fixed" if data["k_chosen_by"] == "fixed" else f"chosen by {data['k_chosen_by']}"
    n_fit = data.get("n_fit_docs", data["n_docs"])
    sampled = (f" Topics were fitted on a seeded sample of {n_fit} documents; the others "
               "were placed in their nearest topic.") if n_fit < data["n_docs"] else ""
    lines.append(
        f"{data['n_topics']} topics ({how}) of {data['n_docs']} documents ({n_assigned} placed "
        f"in a topic), named from {data['n_terms']} frequent terms ({data['n_words']} words, "
        f"{data['n_phrases']} multi-word phrases; {data['n_generic']} set aside as generic); "
        f"encoder `{data['encoder']}`.{sampled}"
    )
    if data["k_scores"]:
        curve = ", ".join(f"K={row['k']}: {row['score']:.3f}" for row in data["k_scores"])
        rule = f" K is {data['k_rule']}." if data.get("k_rule") else ""
        lines += ["", f"{data['k_chosen_by'].capitalize()} per K: {curve}.{rule}"]
    if data["generic_terms"]:
        lines += [
            "",
            f"Generic terms (in no topic): {md_escape(', '.join(data['generic_terms']))}.",
        ]
    if data.get("timings_s"):
        lines += ["", f"Time: {format_timings(data['timings_s'])}."]
    for topic in data["topics"]:
        lines += [
            "",
            f"## Topic {topic['id']}: {md_escape(topic['label'])}",
            "",
            f"*{topic['n_docs']} documents, {topic['n_terms']} terms"
            + (": miscellaneous, its best terms are mostly generic*" if topic["miscellaneous"]
               else ": mixed, its best terms are not distinctive or do not co-occur*"
               if topic.get("mixed") else "*"),
            "",
            f"- **Top words:** {md_escape(_terms_line(topic['top_words']))}",
            f"- **Top phrases:** {md_escape(_terms_line(topic['top_phrases']))}",
        ]
        if topic["typical_docs"]:
            lines += ["- **Typical documents:**"]
            for doc in topic["typical_docs"]:
                lines.append(
                    f"    - {_md_code(str(doc['id']))} (share {doc['share']:.0%}): "
                    f"{md_escape(doc['snippet'])}"
                )
    return "\n".join(lines) + "\n"


def pntm_to_markdown(data: dict[str, Any]) -> str:
    """Render ``pntm_to_dict`` output as Markdown: per topic its nearest terms (words and
    phrases mixed), words, phrases, sentences if any, and typical documents."""
    intro = (f"{data['n_topics']} topics read from {data['n_terms']} terms ({data['n_phrases']} "
             f"phrases) by nearest neighbours of the topic embeddings; {data['n_docs']} "
             f"documents ({data['n_unassigned']} empty, unassigned); encoder "
             f"`{data['encoder']}`.")
    return _ranked_topics_markdown("Topics (PNTM)", intro, "Nearest terms", data)


def _ranked_topics_markdown(title: str, intro: str, first: str, data: dict[str, Any]) -> str:
    """Markdown of a ``topics.json`` dict whose topics carry ranked ``top_terms`` /
    ``top_words`` / ``top_phrases`` (PNTM, UCTopic), largest topic first."""
    lines = [f"# {title}", "", intro, "", f"Time: {format_timings(data['timings_s'])}."]
    for topic in sorted(data["topics"], key=lambda t: -t["n_docs"]):
        lines += [
            "",
            f"## Topic {topic['id']}: {md_escape(topic['label'])}",
            "",
            f"*{topic['n_docs']} documents*",
            "",
            f"- **{first}:** {md_escape(_terms_line(topic['top_terms']))}",
            f"- **Words:** {md_escape(_terms_line(topic['top_words']))}",
            f"- **Phrases:** {md_escape(_terms_line(topic['top_phrases']))}",
        ]
        if topic.get("top_sentences"):
            lines.append("- **Sentences:**")
            lines += [f"    - {md_escape(s['text'])}" for s in topic["top_sentences"]]
        if topic["typical_docs"]:
            lines.append("- **Typical documents:**")
            lines += [f"    - {_md_code(str(d['id']))} ({d['share']:.0%}): "
                      f"{md_escape(d['snippet'])}"
                      for d in topic["typical_docs"]]
    return "\n".join(lines) + "\n"


def uctopic_to_markdown(data: dict[str, Any]) -> str:
    """Render ``uctopic_to_dict`` output as Markdown."""
    how = "chosen by silhouette" if data["k_chosen_by"] == "silhouette" else "fixed"
    intro = (f"{data['n_topics']} topics ({how}) of {data['n_phrases']} noun-chunk phrases "
             f"({data['n_occurrences']} occurrences in {data['n_sentences']} sentences; "
             f"{data['n_instances_encoded']} instances encoded and fine-tuned on with CCL); "
             f"{data['n_docs']} documents ({data['n_unassigned']} without a phrase); encoder "
             f"`{data['encoder']}`.")
    if data["silhouette"]:
        intro += "\n\nSilhouette (cosine) per K: " + ", ".join(
            f"K={k}: {v:.3f}" for k, v in sorted(data["silhouette"].items())) + "."
    return _ranked_topics_markdown("Topics (UCTopic)", intro, "Top phrases", data)


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 120 else f"{seconds / 60:.1f}min"


def format_timings(timings: dict[str, float], total: bool = True) -> str:
    """``extraction 12.3s, encoding 4.0s, clustering 9.9s (total 26.2s)``; without the total
    when ``total`` is false (a caller that prints its own)."""
    parts = ", ".join(f"{k} {_fmt_seconds(v)}" for k, v in timings.items())
    return parts + (f" (total {_fmt_seconds(sum(timings.values()))})" if total else "")
