"""phrasekit keyphrases vs KeyBERT on Inspec, with the same encoder (the packaged MiniLM).

Both systems embed with the very same weights (phrasekit at ``phrasekit keyphrases``' default
precision, ``fast``: bf16 where the CPU has AVX512-BF16 or AMX, else int8 where it measures
faster, else fp32; ``--keybert-bf16`` adds KeyBERT
with its model cast to bf16 too): KeyBERT gets a ``SentenceTransformer`` built
from our encoder's model folder (``encoder.model_path``: Transformer -> mean pooling ->
normalise, the sentence-transformers recipe phrasekit's ``TransformerEncoder`` reimplements;
the script checks the two give the same vectors). Rows:

- ``phrasekit``: ``KeyphraseExtractor`` with its defaults (what ``phrasekit keyphrases`` runs),
  and, as an ablation, plain EmbedRank (noun-chunk candidates, cosine only: no sub-phrases,
  priors or MMR);
- ``KeyBERT`` 0.9 in its usual configurations: ``keyphrase_ngram_range=(1, 1)`` (its default,
  with its default ``stop_words="english"``), ``(1, 3)`` with ``stop_words="english"``, and
  ``(1, 3)`` + ``use_mmr`` at ``diversity=0.5`` (KeyBERT's default) and at the diversity that
  is best on the *dev* split (``--keybert-diversities``; chosen on dev, reported on test).

Metrics: ``phrasekit.eval.keyphrases`` (P/R/F1 at 5 and 10, Porter-stemmed exact match, mean
over documents). Wall time: extraction of the whole split from loaded models (spaCy and
encoders loaded and warmed up on two dev documents first), measured in this run, one torch
thread by default. Writes ``OUT/results.json`` and ``OUT/table.md``. KeyBERT is a
benchmark-only dependency (the ``bench`` extra: ``pip install -e .[bench]``); ``src/`` never
imports it.

Usage: python benchmarks/keyphrases/keyphrases_vs_keybert.py [--split test] [--threads 1]
       [--limit N] [--out runs/keyphrases_vs_keybert]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

from phrasekit.registry import KEYPHRASES_MODEL

KEYBERT_DIVERSITIES = (0.1, 0.2, 0.3, 0.5, 0.7)


def keybert_predict(kw_model, texts: list[str], **options: Any) -> list[list[str]]:
    """KeyBERT's keyphrases for every text (always a list per document)."""
    res = kw_model.extract_keywords(texts, **options)
    if len(texts) == 1 and res and isinstance(res[0], tuple):
        res = [res]
    return [[p for p, _ in r] for r in res]


def tune_keybert_diversity(kw_model, dev_texts: list[str], dev_golds: list[list[str]],
                           top_n: int) -> tuple[float, dict[float, float]]:
    """KeyBERT (1, 3) + MMR: the diversity with the best dev F1@10 (embeddings computed once)."""
    from phrasekit.eval.keyphrases import score_keyphrases

    opts = {"keyphrase_ngram_range": (1, 3), "stop_words": "english"}
    doc_emb, word_emb = kw_model.extract_embeddings(dev_texts, **opts)
    f1: dict[float, float] = {}
    for div in KEYBERT_DIVERSITIES:
        preds = keybert_predict(kw_model, dev_texts, **opts, use_mmr=True, diversity=div,
                                top_n=top_n, doc_embeddings=doc_emb, word_embeddings=word_emb)
        f1[div] = score_keyphrases(preds, dev_golds)["F1@10"]
        logging.info("KeyBERT dev diversity %.1f: F1@10 %.2f", div, f1[div])
    best = max(KEYBERT_DIVERSITIES, key=lambda d: (f1[d], -d))
    return best, f1


def format_table(rows: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """The Markdown table of all rows."""
    lines = [
        f"Inspec {params['split']} ({params['n_docs']} documents, uncontrolled gold keyphrases), "
        f"encoder {params['model']} for every row, {params['threads']} torch thread(s); "
        "P/R/F1 in %, Porter-stemmed exact match, mean over documents.",
        "",
        "| system | P@5 | R@5 | F1@5 | P@10 | R@10 | F1@10 | wall s | docs/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['system']} | {r['P@5']:.1f} | {r['R@5']:.1f} | {r['F1@5']:.1f} "
            f"| {r['P@10']:.1f} | {r['R@10']:.1f} | {r['F1@10']:.1f} | {r['seconds']:.1f} "
            f"| {params['n_docs'] / r['seconds']:.1f} |"
        )
    ours = rows[0]["seconds"]
    lines += ["", "phrasekit defaults' documents/s against each KeyBERT row: " + "; ".join(
        f"{r['system']} {r['seconds'] / ours:.2f}x" for r in rows if r["system"].startswith(
            "KeyBERT"))]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run every system on the split, print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="test", choices=("train", "dev", "test"))
    parser.add_argument("--model", default=KEYPHRASES_MODEL,
                        help="a transformer model (name or folder); default: what `phrasekit "
                             "keyphrases` uses (MiniLM at precision fast)")
    parser.add_argument("--limit", type=int, default=None, help="first N documents only")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--keybert-bf16", action="store_true",
                        help="also run KeyBERT (1,3) with its sentence-transformers model cast to "
                             "bfloat16 (the same arithmetic as phrasekit's bf16)")
    parser.add_argument("--no-tune", action="store_true",
                        help="skip the dev tuning of KeyBERT's MMR diversity")
    parser.add_argument("--out", type=Path, default=Path("runs/keyphrases_vs_keybert"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, datefmt="%H:%M:%S",
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    import numpy as np
    import torch

    torch.set_num_threads(max(1, args.threads))

    from keybert import KeyBERT
    from sentence_transformers import SentenceTransformer

    import phrasekit
    from phrasekit.eval.keyphrases import gold_of, load_inspec, score_keyphrases
    from phrasekit.io import write_json, write_text
    from phrasekit.phrases.keyphrases import KeyphraseExtractor

    top_n = 10
    docs = load_inspec(args.split, limit=args.limit)
    texts, golds = [d.text for d in docs], gold_of(docs)
    dev_docs = load_inspec("dev")
    encoder = phrasekit.load(args.model)
    if not hasattr(encoder, "model_path"):
        raise SystemExit(f"{args.model} is not a transformer encoder with a model folder")
    st_model = SentenceTransformer(str(encoder.model_path), device="cpu")
    probe = ["decision support system", "Inspec abstracts with keyphrases assigned by indexers"]
    agree = float(np.min(np.sum(encoder.encode(probe) * st_model.encode(
        probe, normalize_embeddings=True), axis=1)))
    logging.info("phrasekit vs sentence-transformers vectors: min cosine %.6f", agree)
    if agree < (0.95 if encoder.precision == "int8" else 0.999):  # int8: quantised weights
        raise SystemExit(f"the two encoders disagree (cosine {agree:.4f}): not the same model")
    kw_model = KeyBERT(model=st_model)

    systems: list[tuple[str, Any]] = []
    ours = KeyphraseExtractor(encoder, top_n=top_n)
    plain = KeyphraseExtractor(encoder, top_n=top_n, candidates="noun_chunks",
                               sub_phrases=False, position_weight=0.0, frequency_weight=0.0,
                               diversity=0.0)
    p = ours.settings()
    systems.append((f"phrasekit keyphrases (defaults: {p['candidates']}, sub-phrases "
                    f"{p['sub_phrases']}, position {p['position_weight']}, frequency "
                    f"{p['frequency_weight']}, MMR {p['diversity']})", ours))
    systems.append(("phrasekit, plain EmbedRank (noun chunks, cosine only)", plain))
    tuned, dev_f1 = None, {}
    if not args.no_tune:
        dev_golds = gold_of(dev_docs)
        tuned, dev_f1 = tune_keybert_diversity(kw_model, [d.text for d in dev_docs],
                                               dev_golds, top_n)
    kb = [("KeyBERT (1,1) (default)", {"keyphrase_ngram_range": (1, 1)}),
          ("KeyBERT (1,3), stop_words='english'",
           {"keyphrase_ngram_range": (1, 3), "stop_words": "english"}),
          ("KeyBERT (1,3) + MMR, diversity 0.5",
           {"keyphrase_ngram_range": (1, 3), "stop_words": "english", "use_mmr": True,
            "diversity": 0.5})]
    if tuned is not None and tuned != 0.5:
        kb.append((f"KeyBERT (1,3) + MMR, diversity {tuned} (dev-tuned)",
                   {"keyphrase_ngram_range": (1, 3), "stop_words": "english", "use_mmr": True,
                    "diversity": tuned}))
    systems += kb
    if args.keybert_bf16:
        st_bf16 = SentenceTransformer(str(encoder.model_path), device="cpu").to(torch.bfloat16)
        systems.append(("KeyBERT (1,3), stop_words='english', model in bf16",
                        (KeyBERT(model=st_bf16), kb[1][1])))

    warm = [d.text for d in dev_docs[:2]]
    ours.extract(warm)
    keybert_predict(kw_model, warm, top_n=top_n)
    rows: list[dict[str, Any]] = []
    for name, system in systems:
        t0 = time.perf_counter()
        if isinstance(system, KeyphraseExtractor):
            preds = [[ph for ph, _ in r] for r in system.extract(texts)]
        elif isinstance(system, tuple):  # (a KeyBERT of its own, its options)
            preds = keybert_predict(system[0], texts, top_n=top_n, **system[1])
        else:
            preds = keybert_predict(kw_model, texts, top_n=top_n, **system)
        secs = time.perf_counter() - t0
        m = score_keyphrases(preds, golds)
        rows.append({"system": name, **m, "seconds": secs,
                     "example": preds[0] if preds else []})
        logging.info("%s: F1@5 %.2f F1@10 %.2f (%.1fs)", name, m["F1@5"], m["F1@10"], secs)

    params = {"split": args.split, "n_docs": len(docs), "model": args.model,
              "threads": args.threads, "top_n": top_n, "phrasekit_params": p,
              "keybert_dev_diversity_f1@10": dev_f1, "keybert_tuned_diversity": tuned,
              "encoder_agreement_min_cosine": agree}
    table = format_table(rows, params)
    print(table)
    write_text(args.out / "table.md", table)
    write_json(args.out / "results.json", {"params": params, "rows": rows})


if __name__ == "__main__":
    main()
