"""PEARL's teacher distillation: name variants, the transfer set, its cached teacher vectors,
the distillation loss, a tiny training run with it; and the mpnet teacher's unpacking."""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from phrasekit.encoders.string import CharNgramEncoder
from phrasekit.phrases.types import PHRASE_TYPES
from phrasekit.training.core.losses import SimilarityDistillationLoss
from phrasekit.training.pearl.distillation import (
    TransferSet,
    name_variants,
    select_transfer_texts,
    teacher_vectors,
)

NAMES = ["University of Chicago", "World Health Organization", "The Beatles", "John Smith",
         "Paris (film)", "Bank of England", "New York Stock Exchange", "Albert Einstein",
         "Museum of Modern Art", "The Rolling Stones", "European Central Bank", "Mount Everest"]
PHRASES = ["graph neural network", "heart attack", "machine learning", "red wine",
           "climate change", "stock market", "quantum field theory", "public transport",
           "ran quickly", "very large", "protein folding", "solar panel", "tax cuts",
           "interest rates", "music festival", "football match"]


def test_name_variants_follow_the_rules_and_never_repeat_the_name():
    assert {"Chicago University", "UC"} <= set(name_variants("University of Chicago"))
    assert "WHO" in name_variants("World Health Organization")
    assert "Beatles" in name_variants("The Beatles")
    assert set(name_variants("John Smith", person=True)) == {"Smith, John", "Smith", "J. Smith"}
    assert "Paris" in name_variants("Paris (film)")
    assert name_variants("music festival") == [] and name_variants("Smith", person=True) == []
    for name in NAMES:
        for person in (False, True):
            variants = name_variants(name, person)
            assert name not in variants and len(variants) == len(set(variants))


def test_distillation_loss_is_zero_for_the_teachers_geometry_in_any_dimension():
    loss = SimilarityDistillationLoss(0.05)
    g = torch.Generator().manual_seed(0)
    student = torch.nn.functional.normalize(torch.randn(12, 8, generator=g), dim=-1)
    teacher = torch.cat([student, student], dim=1) / np.sqrt(2)  # same cosines, 16-d
    other = torch.nn.functional.normalize(torch.randn(12, 16, generator=g), dim=-1)
    assert loss(student, teacher).item() == pytest.approx(0.0, abs=1e-6)
    assert loss(student, other).item() > 0.1
    with pytest.raises(ValueError, match="teacher rows"):
        loss(student, other[:5])


def _types(texts: list[str]) -> np.ndarray:
    org, other = PHRASE_TYPES.index("NP-ORG"), PHRASE_TYPES.index("NP-OTHER")
    return np.array([org if t in NAMES else other for t in texts])


def test_transfer_set_pairs_names_with_variants_and_batches_are_seeded():
    texts = PHRASES + NAMES
    out, n_plain = select_transfer_texts(texts, list(PHRASE_TYPES), _types(texts), n_plain=10,
                                         n_names=5, seed=0, keep=lambda v: v != "WHO")
    assert n_plain == 10 and len(out) == 20
    pairs = list(zip(out[10::2], out[11::2], strict=True))
    assert all(name in NAMES and variant in name_variants(name) for name, variant in pairs)
    assert "WHO" not in out
    ts = TransferSet(out, n_plain, np.eye(len(out), dtype=np.float32))
    rows = ts.batch(3, 8, seed=1)
    assert np.array_equal(rows, ts.batch(3, 8, seed=1))
    assert len(rows) == 8 and np.all(rows[:4] < n_plain)
    assert np.array_equal(rows[6:], rows[4:6] + 1)  # the variants of the batch's names
    assert not np.array_equal(rows, ts.batch(4, 8, seed=1))


def test_teacher_vectors_average_the_teachers_cosines_and_are_cached(tmp_path, monkeypatch):
    a, b = CharNgramEncoder(), CharNgramEncoder(ngram_range=(3, 3))
    a.name, b.name = "char-a", "char-b"
    vec = teacher_vectors([a, b], PHRASES, tmp_path, show_progress=False)
    cos_a, cos_b = (e.encode(PHRASES) for e in (a, b))
    expected = (cos_a @ cos_a.T + cos_b @ cos_b.T) / 2
    assert np.allclose(vec @ vec.T, expected, atol=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["teacher-char-a.npz",
                                                          "teacher-char-b.npz"]

    def fail(*args, **kwargs):
        raise AssertionError("a cached text was encoded again")

    monkeypatch.setattr(a, "encode", fail)
    assert np.allclose(teacher_vectors([a, b], PHRASES, tmp_path, show_progress=False), vec)


def _dataset(out: Path) -> None:
    out.mkdir(parents=True)
    texts = PHRASES + NAMES
    with gzip.open(out / "phrases.jsonl.gz", "wt", encoding="utf-8") as fh:
        for t, k in zip(texts, _types(texts), strict=True):
            fh.write(json.dumps({"text": t, "type": PHRASE_TYPES[k]}) + "\n")
    with gzip.open(out / "paraphrases.tsv.gz", "wt", encoding="utf-8") as fh:
        fh.write("heart attack\tmyocardial infarction\n")
    with gzip.open(out / "word_synonyms.json.gz", "wt", encoding="utf-8") as fh:
        json.dump({"large": ["big"]}, fh)
    with gzip.open(out / "hard_negatives.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "red wine", "negatives": ["red wire"]}) + "\n")


def test_training_with_a_teacher_records_the_term_and_resumes_bit_exact(tmp_path):
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.pearl.task import train_pearl

    _dataset(tmp_path / "data")

    def cfg(out: str, steps: int, **kw) -> PearlTrainingConfig:
        return PearlTrainingConfig(
            data_dir=str(tmp_path / "data"), out_dir=str(tmp_path / out), batch_size=6,
            max_steps=steps, checkpoint_every=2, alpha=1.0, max_seq_length=12,
            supersense_weight=0.0, show_progress=False, teachers=("string",),
            distill_batch=8, distill_phrases=10, distill_names=4,
            **{"distill_weight": 1.0, **kw})

    straight = train_pearl(cfg("a", 4))
    assert "distill" in straight["history"][-1]
    assert (tmp_path / "a" / "teachers" / "teacher-string.npz").is_file()
    train_pearl(cfg("b", 2))
    train_pearl(cfg("b", 4))
    from safetensors.torch import load_file

    ta, tb = (load_file(str(tmp_path / r / "checkpoint.safetensors")) for r in "ab")
    assert all(torch.equal(ta[k], tb[k]) for k in ta)
    assert cfg("a", 4).fingerprint() != cfg("a", 4, distill_weight=0.5).fingerprint()
    with pytest.raises(ValueError, match="needs at least one teacher"):
        PearlTrainingConfig(data_dir=".", out_dir="o", distill_weight=1.0).validate()
    with pytest.raises(ValueError, match="precision"):
        PearlTrainingConfig(data_dir=".", out_dir="o", precision="fp8").validate()


def _fake_pieces(tmp_path: Path, weights: bytes) -> list[Path]:
    """A zip of a tiny all-mpnet-base-v2/ folder cut into five pieces, like the packages."""
    joined = tmp_path / "whole.zip"
    with zipfile.ZipFile(joined, "w") as zf:
        zf.writestr("all-mpnet-base-v2/model.safetensors", weights)
        zf.writestr("all-mpnet-base-v2/config.json", "{}")
        zf.writestr("all-mpnet-base-v2/desktop.ini", "")
    data = joined.read_bytes()
    cut = [len(data) * i // 5 for i in range(6)]
    pieces = []
    for i in range(5):
        piece = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        piece.write_bytes(data[cut[i]:cut[i + 1]])
        pieces.append(piece)
    return pieces


def test_mpnet_is_unpacked_once_checked_and_named_by_its_extra(tmp_path, monkeypatch):
    import hashlib

    from phrasekit.models import mpnet

    monkeypatch.setenv("PHRASEKIT_CACHE", str(tmp_path / "cache"))
    weights = b"not really weights" * 100
    pieces = _fake_pieces(tmp_path, weights)
    monkeypatch.setattr(mpnet, "_pieces", lambda: pieces)
    monkeypatch.setattr(mpnet, "WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(ValueError, match="fail their checksum"):
        mpnet.mpnet_path()
    assert list((tmp_path / "cache").iterdir()) == []  # nothing half-made is left
    monkeypatch.setattr(mpnet, "WEIGHTS_SHA256", hashlib.sha256(weights).hexdigest())
    folder = mpnet.mpnet_path()
    assert folder == tmp_path / "cache" / "all-mpnet-base-v2"
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
    monkeypatch.setattr(mpnet, "_pieces", lambda: pytest.fail("unpacked twice"))
    assert mpnet.mpnet_path() == folder


def test_missing_mpnet_packages_name_the_extra(tmp_path, monkeypatch):
    from importlib import metadata

    from phrasekit.models import mpnet

    monkeypatch.setenv("PHRASEKIT_CACHE", str(tmp_path))

    def missing(name: str):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(mpnet.metadata, "distribution", missing)
    with pytest.raises(FileNotFoundError, match=r"phrasekit\[mpnet\]"):
        mpnet.mpnet_path()
    from phrasekit.registry import available_models, installed_models

    assert "mpnet" in available_models() and "mpnet" not in installed_models()
    assert "minilm" in installed_models()
