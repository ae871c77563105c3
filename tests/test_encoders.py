"""The encoder contract, on every registered encoder, with real weights."""

from __future__ import annotations

import numpy as np
import pytest

import phrasekit
from phrasekit.encoders import CharNgramEncoder, validate_texts
from phrasekit.encoders.cache import encode_documents, iter_document_vectors

PHRASES = [
    "natural language processing",
    "machine translation",
    "New York City",
    "the big apple",
    "protein folding",
    "heart attack",
    "myocardial infarction",
    "a",
    "an extremely long phrase " * 40,
]


@pytest.fixture(scope="module", params=["string", "glove-50d", "minilm"])
def encoder(request, minilm, glove):
    return {"string": CharNgramEncoder(), "glove-50d": glove, "minilm": minilm}[request.param]


def test_shape_dtype_and_normalisation(encoder):
    vecs = encoder.encode(PHRASES)
    assert vecs.shape == (len(PHRASES), encoder.dim)
    assert vecs.dtype == np.float32
    norms = np.linalg.norm(vecs, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-4) | (norms == 0))
    assert np.abs(norms[:7] - 1).max() < 1e-4


def test_empty_input_gives_zero_rows(encoder):
    out = encoder.encode([])
    assert out.shape == (0, encoder.dim) and out.dtype == np.float32


def test_order_is_kept_whatever_the_batching(encoder):
    full = encoder.encode(PHRASES, batch_size=64)
    small = encoder.encode(PHRASES, batch_size=2)
    one_by_one = np.vstack([encoder.encode([p]) for p in PHRASES])
    np.testing.assert_allclose(full, small, atol=1e-5)
    np.testing.assert_allclose(full, one_by_one, atol=1e-5)


def test_single_string_is_one_row(encoder):
    assert encoder.encode("heart attack").shape == (1, encoder.dim)


@pytest.mark.parametrize(
    ("bad", "exc", "fragment"),
    [
        (["ok", None], TypeError, "texts[1] is None"),
        (["ok", "fine", 3], TypeError, "texts[2] is int"),
        (["", "x"], ValueError, "texts[0] is empty"),
        (["x", "   "], ValueError, "texts[1] is empty"),
        (None, TypeError, "got None"),
        (b"bytes", TypeError, "decode"),
    ],
)
def test_bad_input_names_the_index(bad, exc, fragment):
    with pytest.raises(exc) as info:
        validate_texts(bad)
    assert fragment in str(info.value)


def test_bad_batch_size(glove):
    with pytest.raises(ValueError, match="batch_size"):
        glove.encode(["a b"], batch_size=0)


def test_minilm_matches_sentence_transformers(minilm):
    """Our mean pooling reproduces SentenceTransformer.encode on the same packaged weights."""
    from sentence_transformers import SentenceTransformer

    from phrasekit.models.backbones import minilm_path

    st = SentenceTransformer(str(minilm_path()), device="cpu")
    ref = st.encode(PHRASES, normalize_embeddings=True, convert_to_numpy=True)
    ours = minilm.encode(PHRASES)
    np.testing.assert_allclose(ours, ref, atol=2e-4)


def test_minilm_semantics(minilm):
    """Synonymous phrases are closer than unrelated ones (a real model, not a mock)."""
    v = minilm.encode(["heart attack", "myocardial infarction", "protein folding"])
    assert v[0] @ v[1] > v[0] @ v[2]


def test_glove_text_without_known_word_gets_its_own_unit_row(glove):
    """Never a zero row (issue 47): the same unknown text repeats its row, another unknown
    text and known ones are far from it, and ``known`` tells them apart."""
    v = glove.encode(["qzxqzxqzx", "heart attack", "qzxqzxqzx", "wvxqq zzqy"])
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-5)
    assert v[0] @ v[2] > 0.9999 and abs(v[0] @ v[3]) < 0.6 and abs(v[0] @ v[1]) < 0.6
    assert glove.known(["qzxqzxqzx", "heart attack"]).tolist() == [False, True]


def test_string_encoder_is_surface_similarity():
    enc = CharNgramEncoder()
    v = enc.encode(["Palmate newt", "Palmate Newt", "Cane toad"])
    assert v[0] @ v[1] > 0.99 and v[0] @ v[2] < 0.5


@pytest.mark.parametrize(("precision", "min_cos"), [("bf16", 0.995), ("int8", 0.85)])
def test_reduced_precision_stays_close(minilm, precision, min_cos):
    fast = phrasekit.load("minilm", precision=precision)
    a, b = minilm.encode(PHRASES[:7]), fast.encode(PHRASES[:7])
    cos = (a * b).sum(axis=1)
    assert cos.min() > min_cos, cos


@pytest.mark.parametrize("name", ["pearl-minilm", "phrase-bert-minilm"])
def test_phrase_models_in_bf16_stay_close_and_are_named(name):
    """The fine-tuned phrase models cast their backbone after loading their fp32 deltas."""
    full, fast = phrasekit.load(name), phrasekit.load(f"{name}@bf16")
    a, b = full.encode(PHRASES[:7]), fast.encode(PHRASES[:7])
    assert fast.name == f"{name}@bf16" and (a * b).sum(axis=1).min() > 0.995
    assert fast.vector_settings()["precision"] == "bf16"
    assert full.vector_settings().get("precision", "fp32") == "fp32"


def test_similarity_matrix(glove):
    sim = glove.similarity(["heart attack", "car"], ["heart disease"])
    assert sim.shape == (2, 1) and sim[0, 0] > sim[1, 0]


def test_windows_of_a_word_budget_are_even_and_keep_a_short_text_whole():
    """``max_words``: the first words in the fewest windows of at most ``size`` words, of even
    length; without it, consecutive windows of ``size`` (a short tail included)."""
    from phrasekit.encoders.cache import chunk_words

    text = lambda n: " ".join(f"w{i}" for i in range(n))  # noqa: E731
    assert chunk_words(text(130), 150, 2, 200) == [text(130)]
    assert [len(c.split()) for c in chunk_words(text(181), 150, 2, 200)] == [90, 91]
    windows = chunk_words(text(500), 150, 2, 200)
    assert [len(c.split()) for c in windows] == [100, 100]
    assert " ".join(windows) == text(200)  # the first 200 words, in order
    assert [len(c.split()) for c in chunk_words(text(500), 150, 2, 1000)] == [150, 150]
    assert [len(c.split()) for c in chunk_words(text(160), 150, 2)] == [150, 10]
    assert chunk_words("", 150, 2, 200) == [] and chunk_words("   ", 150, 2) == []


def test_document_vectors_of_a_stream_match_the_whole(glove):
    texts = ["heart attack and stroke " * 40, "", "car engine", "   ", "river bank " * 200,
             "stock market crash"]
    blocks = [texts[0:2], [], texts[2:5], texts[5:]]
    for max_words in (None, 120):
        got = list(iter_document_vectors(glove, iter(blocks), lambda b: b, chunk_size=50,
                                         max_chunks=3, max_words=max_words))
        assert [b for b, _ in got] == blocks  # every block, in order, empty ones included
        whole = encode_documents(glove, texts, chunk_size=50, max_chunks=3,
                                 max_words=max_words)
        assert np.array_equal(np.concatenate([X for _, X in got]), whole)
        assert not whole[1].any() and not whole[3].any()  # no words: a zero row


@pytest.mark.parametrize(("flags", "want"), [
    ({"avx2", "fma"}, "fp32"), (set(), "fp32"), ({"avx512f", "avx512_vnni"}, "fp32"),
    ({"avx512f", "avx512_bf16"}, "bf16"), ({"amx_tile", "amx_bf16"}, "bf16")])
def test_auto_precision_never_picks_bf16_without_the_cpu_flags(monkeypatch, flags, want):
    from phrasekit.encoders import transformer

    transformer._auto_precision.cache_clear()
    monkeypatch.setattr(transformer, "cpu_flags", lambda: set(flags))
    try:
        assert transformer.resolve_precision("auto") == want
        assert transformer.resolve_precision("fp32") == "fp32"
    finally:
        transformer._auto_precision.cache_clear()


def test_batches_group_texts_by_tokens_not_characters(minilm):
    """A transformer's batches hold texts of equal token counts, whatever their characters:
    "a.b.c.d.e.f" (11 characters) is 13 tokens, "international organizations" (27) is 4."""
    texts = ["a.b.c.d.e.f", "international organizations", "u.s.-e.u. ties",
             "government departments"]
    counts = [len(ids) for ids in minilm.tokenizer(texts)["input_ids"]]
    assert counts[0] > counts[1] and len(texts[0]) < len(texts[1])
    batches = list(minilm._batches(texts, 2, "t", False))
    assert sorted(sorted(b) for b in batches) == [[0, 2], [1, 3]]
    assert minilm._token_counts(texts) == counts


TOKEN_TEXTS = ["a.b.c.d.e.f", "support vector machine", "naïve café – résumé", "x" * 3000,
               "  spaced   out  ", "word " * 400, "\u200b"]


@pytest.mark.parametrize("max_length", [256, 192, 5])
def test_token_ids_give_the_tokenizers_padded_batches(minilm, max_length):
    """Texts tokenised once (one backend call, flat ids) give every batch exactly the inputs
    ``tokenizer(texts, padding=True, truncation=True)`` gives, and the shared tokenizer's own
    settings are left alone."""
    import torch

    from phrasekit.encoders.base import cap_chars
    from phrasekit.encoders.token_ids import TokenIds

    tok = minilm.tokenizer
    texts = cap_chars(TOKEN_TEXTS, max_length)
    before = (tok.backend_tokenizer.truncation, tok.backend_tokenizer.padding)
    ids = TokenIds.of(tok, texts, max_length)
    assert (tok.backend_tokenizer.truncation, tok.backend_tokenizer.padding) == before
    assert ids is not None and ids.lengths.max() <= max_length
    for part in (texts, texts[2:5], texts[::-1], texts[:1]):
        want = tok(part, padding=True, truncation=True, max_length=max_length,
                   return_tensors="pt")
        got = ids.batch(part, max_length)
        assert set(got) == set(want)
        for name, value in want.items():
            assert torch.equal(got[name], value), name
    assert ids.batch(texts, max_length + 1) is None  # cut at another length: not these ids
    assert ids.batch(["never tokenised"], max_length) is None
    by_given = TokenIds.of(tok, texts, max_length, keys=TOKEN_TEXTS)  # found by the uncut texts
    assert torch.equal(by_given.batch(TOKEN_TEXTS, max_length)["input_ids"],
                       ids.batch(texts, max_length)["input_ids"])


def test_encode_tokenises_each_text_once(minilm, monkeypatch):
    """One ``encode`` call tokenises through the backend once, never through the wrapper,
    with the vectors of the wrapper's path; a text the call did not see falls back to it."""
    calls: list[int] = []
    real = type(minilm.tokenizer).__call__

    def counting(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    texts = [*PHRASES, *TOKEN_TEXTS]
    monkeypatch.setattr(type(minilm.tokenizer), "__call__", counting)
    vecs = minilm.encode(texts, batch_size=4)
    assert calls == []
    from phrasekit.encoders import transformer

    monkeypatch.setattr(transformer.TokenIds, "of", lambda *a, **k: None)
    np.testing.assert_array_equal(vecs, minilm.encode(texts, batch_size=4))
    assert calls  # without the ids, the wrapper counts and builds every batch


def test_long_texts_are_batched_by_a_token_budget_on_the_cpu(minilm, monkeypatch):
    """Batches of long texts stay under ``tokens_per_batch`` on the CPU (large activations
    leave the caches); short texts still fill ``batch_size``; rows keep their order."""
    sizes: list[int] = []
    real = minilm._encode_batch

    def spy(texts):
        sizes.append(len(texts))
        return real(texts)

    monkeypatch.setattr(minilm, "_encode_batch", spy)
    texts = [f"word{i} " + "word " * 200 for i in range(20)] + PHRASES[:7]  # ~252 tokens
    vecs = minilm.encode(texts, batch_size=64)
    tokens = len(minilm.tokenizer(texts[0])["input_ids"])  # every long text has as many
    per_batch = minilm.tokens_per_batch // tokens
    assert per_batch < 20   # (batches may run side by side: their order of start varies)
    assert sorted(sizes, reverse=True) == [per_batch] * (27 // per_batch) + [27 % per_batch]
    monkeypatch.setattr(minilm, "device", "cuda")  # on a GPU the batch size alone counts
    assert [len(b) for b in minilm._batches(texts, 64, "t", False)] == [len(texts)]
    monkeypatch.setattr(minilm, "device", "cpu")
    np.testing.assert_allclose(vecs, minilm.encode(texts, batch_size=1), atol=1e-5)


def test_batches_run_side_by_side_on_one_torch_thread_each_with_the_same_rows(
        minilm, monkeypatch):
    """With two threads, the batches after the first run on two threads of one torch thread
    each; the rows are those of one batch after another; ONNX or one thread: no pool."""
    import threading

    import torch

    from phrasekit.encoders import base
    from phrasekit.threads import limited_threads

    calls: list[tuple[int, int]] = []
    real = minilm._encode_batch

    def spy(texts):
        calls.append((threading.get_ident(), torch.get_num_threads()))
        return real(texts)

    monkeypatch.setattr(minilm, "_encode_batch", spy)
    texts = [f"{p} {i}" for i in range(6) for p in PHRASES[:8]]
    with limited_threads(2):
        side = minilm.encode(texts, batch_size=4)
        assert calls[0] == (threading.get_ident(), 2)
        assert {n for _, n in calls[1:]} == {1}
        assert threading.get_ident() not in {t for t, _ in calls[1:]}   # the pool's threads
        monkeypatch.setattr(base, "SIDE_BY_SIDE_MAX_THREADS", 1)
        calls.clear()
        serial = minilm.encode(texts, batch_size=4)
        assert {c for c in calls} == {(threading.get_ident(), 2)}
    np.testing.assert_allclose(side, serial, atol=1e-5)  # kernels may sum in another order
    monkeypatch.setattr(minilm, "backend", "onnx")
    assert not minilm.side_by_side


def test_keep_freed_memory_sets_glibc_thresholds_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """glibc gets both thresholds, once per process; ``PHRASEKIT_MALLOC=default`` or another C
    library leaves the allocator alone."""
    from phrasekit.encoders import allocator

    calls: list[tuple[int, int]] = []

    class FakeLibc:
        def mallopt(self, param: int, value: int) -> int:
            calls.append((param, value))
            return 1

    monkeypatch.setattr(allocator.ctypes, "CDLL", lambda name: FakeLibc())
    monkeypatch.setattr(allocator.platform, "system", lambda: "Linux")
    monkeypatch.setattr(allocator.platform, "libc_ver", lambda: ("glibc", "2.36"))
    monkeypatch.delenv("PHRASEKIT_MALLOC", raising=False)
    allocator.keep_freed_memory.cache_clear()
    try:
        assert allocator.keep_freed_memory() and allocator.keep_freed_memory()
        assert calls == [(allocator.M_MMAP_THRESHOLD, 32 << 20),
                         (allocator.M_TRIM_THRESHOLD, 256 << 20)]
        calls.clear()
        allocator.keep_freed_memory.cache_clear()
        monkeypatch.setenv("PHRASEKIT_MALLOC", "default")
        assert allocator.keep_freed_memory() is False
        allocator.keep_freed_memory.cache_clear()
        monkeypatch.delenv("PHRASEKIT_MALLOC")
        monkeypatch.setattr(allocator.platform, "libc_ver", lambda: ("musl", "1.2"))
        assert allocator.keep_freed_memory() is False and calls == []
    finally:
        allocator.keep_freed_memory.cache_clear()


def test_cpu_torch_encoders_tune_the_allocator(monkeypatch: pytest.MonkeyPatch, minilm,
                                               glove) -> None:
    """A transformer encoding on the CPU sets the allocator up; word vectors (no torch) do not."""
    import phrasekit.encoders.base as base

    calls: list[bool] = []
    monkeypatch.setattr(base, "keep_freed_memory", lambda: calls.append(True) or True)
    glove.encode(["interest rate"])
    assert calls == []
    minilm.encode(["interest rate"])
    assert calls == [True]


def test_sizes_must_be_integers_and_arrow_arrays_are_read():
    """Batch and chunk sizes must be integers (1.5 and True were taken, NaN failed inside
    int()); an Arrow array is read as its strings."""
    import pyarrow as pa

    enc = CharNgramEncoder()
    for size in (1.5, True, float("nan"), "4"):
        with pytest.raises(TypeError, match="batch_size must be an integer"):
            enc.encode(["a"], batch_size=size)
    with pytest.raises(TypeError, match="chunk_size must be an integer"):
        list(enc.encode_stream(["a", "b"], chunk_size=1.5))
    np.testing.assert_array_equal(enc.encode(pa.array(["heart", "attack"])),
                                  enc.encode(["heart", "attack"]))
