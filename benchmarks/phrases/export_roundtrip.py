"""``phrasekit export`` round trip on the benchmark strings: each model is exported to a
temporary sentence-transformers folder, loaded back by ``SentenceTransformer`` and both encode
every BiRD phrase and every AutoFJ left and right title; the minimum and mean cosine between
the two are printed per model.

    python benchmarks/phrases/export_roundtrip.py pearl-minilm phrase-bert-minilm minilm
"""

from __future__ import annotations

import csv
import sys
import tempfile
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

import phrasekit
from phrasekit.encoders import export_sentence_transformers
from phrasekit.eval.bird import load_bird
from phrasekit.settings import data_dir


def benchmark_strings() -> list[str]:
    """BiRD's phrases and every AutoFJ table's left and right titles, distinct, sorted."""
    data = data_dir()
    strings = {s for a, b, _ in load_bird(data) for s in (a, b)}
    for table in sorted(p for p in (data / "autofj").iterdir() if p.is_dir()):
        for side in ("left.csv", "right.csv"):
            with open(table / side, newline="", encoding="utf-8") as fh:
                strings.update(r["title"] for r in csv.DictReader(fh) if r.get("title"))
    return sorted(s for s in strings if s.strip())


def main() -> None:
    strings = benchmark_strings()
    print(f"{len(strings)} strings (BiRD phrases, AutoFJ left and right titles)")
    print("| model | min cosine | mean cosine |\n|---|---:|---:|")
    for name in sys.argv[1:] or ["pearl-minilm"]:
        encoder = phrasekit.load(name, device="cpu")
        with tempfile.TemporaryDirectory() as tmp:
            folder = export_sentence_transformers(encoder, Path(tmp) / "model")
            model = SentenceTransformer(str(folder), device="cpu", trust_remote_code=True)
            theirs = model.encode(strings, batch_size=128)
        cos = np.sum(encoder.encode(strings) * theirs, axis=1)
        print(f"| {name} | {cos.min():.6f} | {cos.mean():.6f} |")


if __name__ == "__main__":
    main()
