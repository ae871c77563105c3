"""ONNX Runtime backend: the exported graph reproduces torch, is rebuilt when damaged or stale,
int8 runs there, and ``backend="auto"`` picks the runtime measured faster."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import phrasekit
from phrasekit.encoders import onnx_graph, transformer
from phrasekit.encoders.onnx_graph import (
    OnnxBackbone,
    cpu_speedups,
    graph_folder,
    onnx_available,
)
from phrasekit.encoders.transformer import TransformerEncoder, resolve_backend
from phrasekit.models.backbones import minilm_path

pytestmark = pytest.mark.skipif(not onnx_available(), reason="onnxruntime is not installed")

TEXTS = ["heart attack", "New York Stock Exchange", "a", "myocardial infarction",
         "the quick brown fox jumps over the lazy dog " * 30, "Zürich café", "COVID-19 vaccine"]


@pytest.fixture(scope="module")
def onnx_fp32():
    return TransformerEncoder(minilm_path(), name="minilm-onnx", backend="onnx")


def test_exported_graph_reproduces_torch_vectors(minilm, onnx_fp32):
    a, b = minilm.encode(TEXTS), onnx_fp32.encode(TEXTS)
    assert onnx_fp32.backend == "onnx" and onnx_fp32.precision == "fp32"
    assert (a * b).sum(axis=1).min() >= 0.9999
    assert onnx_fp32.vector_settings()["backend"] == "onnx"  # cached apart from torch's
    assert "backend" not in minilm.vector_settings()


def test_int8_runs_on_onnx_runtime_and_stays_close(minilm):
    fast = phrasekit.load("minilm@int8")
    assert fast.backend == "onnx" and fast.name == "minilm@int8"
    assert fast._onnx is None  # the session opens on first use
    assert fast.vector_settings()["int8_weight_bits"] in (7, 8)
    cos = (minilm.encode(TEXTS) * fast.encode(TEXTS)).sum(axis=1)
    assert cos.min() > 0.9, cos
    assert json.loads((fast._onnx.folder / "manifest.json").read_text())["files"].keys() == {
        "model.onnx"}
    with pytest.raises(ValueError, match="int8 runs on ONNX Runtime"):
        TransformerEncoder(minilm_path(), precision="int8", backend="torch")


def test_a_fine_tuned_model_exports_its_own_weights():
    """Phrase-BERT's deltas are added in fp32, then its graph is exported from the sum."""
    full = phrasekit.load("phrase-bert-minilm")
    onnx = phrasekit.load("phrase-bert-minilm", backend="onnx")
    a, b = full.encode(TEXTS), onnx.encode(TEXTS)
    assert onnx.backend == "onnx" and (a * b).sum(axis=1).min() >= 0.9999
    plain = phrasekit.load("minilm").encode(TEXTS)
    assert (plain * b).sum(axis=1).min() < 0.99  # not MiniLM's graph
    fast = phrasekit.load("phrase-bert-minilm@int8")
    assert fast.backend == "onnx" and (a * fast.encode(TEXTS)).sum(axis=1).min() > 0.9


def test_damaged_graph_is_rebuilt_never_used(tmp_path, onnx_fp32):
    folder = graph_folder(onnx_fp32.model, onnx_fp32.tokenizer, tmp_path)
    graph = folder / "model.onnx"
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF
    graph.write_bytes(bytes(data))
    again = graph_folder(onnx_fp32.model, onnx_fp32.tokenizer, tmp_path)
    assert again == folder and graph.read_bytes() != bytes(data)
    assert not onnx_fp32.model.training  # exporting leaves the model in eval mode
    assert onnx_fp32.model.config._attn_implementation == "sdpa"  # and its attention kernel
    backbone = OnnxBackbone(onnx_fp32.model, onnx_fp32.tokenizer, root=tmp_path)
    batch = onnx_fp32.tokenizer(TEXTS[:2], padding=True, return_tensors="pt")
    with torch.inference_mode():
        want = onnx_fp32.model(**batch).last_hidden_state
    assert torch.allclose(backbone(dict(batch)), want, atol=1e-4)


def test_a_damaged_manifest_is_rebuilt_too(tmp_path, onnx_fp32):
    folder = graph_folder(onnx_fp32.model, onnx_fp32.tokenizer, tmp_path)
    (folder / "manifest.json").write_text("{ not json")
    assert graph_folder(onnx_fp32.model, onnx_fp32.tokenizer, tmp_path) == folder
    assert json.loads((folder / "manifest.json").read_text())["kind"] == "phrasekit-onnx-graph"


def test_the_cache_folder_keeps_what_is_not_a_graph(tmp_path, onnx_fp32, monkeypatch):
    """Pruning removes old graphs and touches nothing else; a folder of the graph's name that
    holds other files is refused, not replaced."""
    monkeypatch.setattr("phrasekit.encoders.onnx_graph.KEEP_GRAPHS", 1)
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "todo.txt").write_text("keep me")
    lookalike = tmp_path / ("a" * 32)
    lookalike.mkdir()
    (lookalike / "photo.jpg").write_bytes(b"jpeg")
    old = graph_folder(onnx_fp32.model, onnx_fp32.tokenizer, tmp_path, "int8")
    folder = graph_folder(onnx_fp32.model, onnx_fp32.tokenizer, tmp_path)
    assert not old.exists()  # the older graph was pruned
    assert (mine / "todo.txt").read_text() == "keep me" and (lookalike / "photo.jpg").exists()
    (folder / "manifest.json").unlink()
    (folder / "photo.jpg").write_bytes(b"jpeg")
    with pytest.raises(ValueError, match="PHRASEKIT_ONNX_CACHE"):
        graph_folder(onnx_fp32.model, onnx_fp32.tokenizer, tmp_path)
    assert (folder / "photo.jpg").exists() and (folder / "model.onnx").exists()


def test_changed_weights_get_a_new_graph(tmp_path):
    enc = TransformerEncoder(minilm_path(), backend="onnx")
    before = enc.encode(TEXTS[:2])
    first = graph_folder(enc.model, enc.tokenizer, tmp_path)
    with torch.no_grad():
        enc.model.embeddings.word_embeddings.weight.mul_(1.5)
    enc._onnx = None
    second = graph_folder(enc.model, enc.tokenizer, tmp_path)
    assert second != first and first.is_dir()  # the stale graph is never picked up
    with torch.inference_mode():
        want = enc.model(**enc.tokenizer(TEXTS[:2], padding=True, return_tensors="pt"))
    backbone = OnnxBackbone(enc.model, enc.tokenizer, root=tmp_path)
    got = backbone(dict(enc.tokenizer(TEXTS[:2], padding=True, return_tensors="pt")))
    assert torch.allclose(got, want.last_hidden_state, atol=1e-4)
    assert not np.allclose(before, enc.encode(TEXTS[:2]), atol=1e-3)


def test_a_cached_graph_is_found_without_loading_the_model(tmp_path, monkeypatch):
    """The folder's untouched weights are found by fingerprint: the second encoder opens the
    same graph, gives the same vectors and never loads the torch model; a model that was
    loaded (its weights may have changed) is keyed by its weights again."""
    monkeypatch.setenv("PHRASEKIT_ONNX_CACHE", str(tmp_path))
    first = TransformerEncoder(minilm_path(), backend="onnx")
    want = first.encode(TEXTS)
    assert first._model is not None  # the first time the key comes from the weights
    keys = json.loads((tmp_path / "phrasekit-onnx-keys.json").read_text())
    assert keys["kind"] == "phrasekit-onnx-keys" and len(keys["keys"]) == 1
    second = TransformerEncoder(minilm_path(), backend="onnx")
    got = second.encode(TEXTS)
    assert second._model is None and second._onnx.folder == first._onnx.folder
    np.testing.assert_array_equal(got, want)
    assert second.dim == 384 and second.torch_modules() == []
    with torch.no_grad():
        second.model.embeddings.word_embeddings.weight.mul_(1.5)
    second._onnx = None
    changed = second.encode(TEXTS[:2])
    assert second._onnx.folder != first._onnx.folder
    assert not np.allclose(changed, want[:2], atol=1e-3)


def test_a_foreign_key_file_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("PHRASEKIT_ONNX_CACHE", str(tmp_path))
    (tmp_path / "phrasekit-onnx-keys.json").write_text('{"mine": 1}')
    enc = TransformerEncoder(minilm_path(), backend="onnx")
    assert enc.encode(TEXTS[:2]).shape == (2, 384)
    assert (tmp_path / "phrasekit-onnx-keys.json").read_text() == '{"mine": 1}'


def test_resolve_backend_rules():
    assert resolve_backend(None, "int8") == "onnx" and resolve_backend(None, "fp32") == "torch"
    assert resolve_backend("auto", "bf16") == "torch" and resolve_backend("auto", "fp32") == "auto"
    with pytest.raises(ValueError, match="bf16 runs on torch"):
        resolve_backend("onnx", "bf16")
    with pytest.raises(ValueError, match="backend must be one of"):
        resolve_backend("tensorrt", "fp32")


@pytest.mark.parametrize(("speedup", "want"), [(1.6, "onnx"), (1.01, "torch"), (0.7, "torch")])
def test_auto_backend_takes_onnx_only_where_measured_faster(monkeypatch, speedup, want):
    """Never a runtime slower than torch fp32 on this CPU, and never int8 for a precision
    that was not ``auto``."""
    _speeds(monkeypatch, speedup)
    enc = TransformerEncoder(minilm_path(), backend="auto")
    assert (enc.precision, enc.backend) == ("fp32", want)
    assert enc.model.dtype == torch.float32


def _cpu(monkeypatch, flags: set[str]):
    transformer._auto_precision.cache_clear()
    monkeypatch.setattr(transformer, "cpu_flags", lambda: flags)
    yield
    transformer._auto_precision.cache_clear()


@pytest.fixture
def avx2_only(monkeypatch):
    """A CPU without native bfloat16 nor int8 dot products (flags mocked)."""
    yield from _cpu(monkeypatch, {"avx2", "fma"})


@pytest.fixture
def vnni_no_bf16(monkeypatch):
    """A CPU with VNNI int8 dot products but no native bfloat16 (e.g. a Cascade Lake Xeon)."""
    yield from _cpu(monkeypatch, {"avx2", "fma", "avx512f", "avx512_vnni"})


def _speeds(monkeypatch, fp32: float, int8: float = 0.0) -> list[str]:
    """Mocked measurements; the returned list records what each call measured."""
    calls: list[str] = []

    def measured(enc, root=None, int8_too=False):
        calls.append("fp32+int8" if int8_too else "fp32")
        return {"onnx": fp32, **({"int8": int8} if int8_too else {})}

    monkeypatch.setattr("phrasekit.encoders.onnx_graph.cpu_speedups",
                        lambda enc, root=None, int8=False: measured(enc, root, int8))
    return calls


def test_auto_precision_on_a_cpu_without_bf16_runs_fp32_on_the_faster_runtime(monkeypatch,
                                                                             avx2_only):
    """On an AVX2-only CPU ``minilm@auto`` is fp32, never bf16 nor int8 (7-bit weights there
    lost 0.34 avg7; int8 is not even measured), on the runtime the measurement favours; with
    native bf16 it is bf16 on torch and nothing is measured."""
    calls = _speeds(monkeypatch, fp32=1.5, int8=3.0)
    enc = phrasekit.load("minilm@auto")
    assert (enc.precision, enc.backend, enc.name) == ("fp32", "onnx", "minilm")
    assert calls == ["fp32"]
    transformer._auto_precision.cache_clear()
    monkeypatch.setattr(transformer, "cpu_flags", lambda: {"avx512f", "avx512_bf16"})
    enc = phrasekit.load("minilm@auto")
    assert (enc.precision, enc.backend) == ("bf16", "torch")
    assert phrasekit.load("minilm").backend == "torch"  # an explicit fp32 stays on torch
    assert calls == ["fp32"]  # nothing measured with native bf16


@pytest.mark.parametrize(("fp32", "int8", "want"), [
    (1.5, 2.0, ("int8", "onnx", "minilm@int8")),
    (1.5, 1.55, ("fp32", "onnx", "minilm")),      # within 5% of the fp32 path: not worth it
    (0.8, 1.02, ("fp32", "torch", "minilm")),
])
def test_fast_weighs_seven_bit_int8_where_auto_does_not(monkeypatch, avx2_only, fp32, int8,
                                                        want):
    """``fast`` is ``auto`` that also times int8 on a CPU without VNNI (7-bit weights) and
    takes it only where it measures faster than the fp32 path; with native bf16 both are
    bf16 and nothing is measured."""
    calls = _speeds(monkeypatch, fp32, int8)
    enc = phrasekit.load("minilm@fast")
    assert (enc.precision, enc.backend, enc.name) == want
    assert calls == ["fp32+int8"]
    assert transformer.resolve_precision("fast") == transformer.resolve_precision("auto")
    transformer._auto_precision.cache_clear()
    monkeypatch.setattr(transformer, "cpu_flags", lambda: {"avx512f", "avx512_bf16"})
    enc = phrasekit.load("minilm@fast")
    assert (enc.precision, enc.backend, enc.name) == ("bf16", "torch", "minilm@bf16")
    assert calls == ["fp32+int8"]


@pytest.mark.parametrize(("fp32", "int8", "want"), [
    (1.5, 2.0, ("int8", "onnx", "minilm@int8")),   # 2.0 >= 1.05 x 1.5
    (1.5, 1.55, ("fp32", "onnx", "minilm")),      # within 5% of the fp32 path: not worth it
    (0.8, 1.2, ("int8", "onnx", "minilm@int8")),  # the fp32 path is torch (1.0)
    (0.8, 1.02, ("fp32", "torch", "minilm")),
])
def test_auto_takes_int8_only_where_measured_faster_than_the_fp32_path(monkeypatch, vnni_no_bf16,
                                                                       fp32, int8, want):
    """Never a path slower than fp32 on this CPU; int8's vectors get their own name (cache);
    one measurement for both."""
    calls = _speeds(monkeypatch, fp32, int8)
    enc = phrasekit.load("minilm@auto")
    assert (enc.precision, enc.backend, enc.name) == want
    assert enc.vector_settings()["precision"] == want[0]
    assert enc.model.dtype == torch.float32  # the torch weights stay fp32 (int8 is a graph)
    assert calls == ["fp32+int8"]


def test_a_failed_int8_measurement_keeps_the_fp32_choice(monkeypatch, vnni_no_bf16):
    """An int8 graph that cannot be exported or timed leaves fp32 on the runtime measured
    faster, not torch by default."""
    def measured(enc, root=None, int8=False):
        if int8:
            raise RuntimeError("quantiser failed")
        return {"onnx": 1.5}

    monkeypatch.setattr("phrasekit.encoders.onnx_graph.cpu_speedups", measured)
    enc = phrasekit.load("minilm@auto")
    assert (enc.precision, enc.backend, enc.name) == ("fp32", "onnx", "minilm")


@pytest.fixture
def bf16_and_vnni(monkeypatch):
    """A CPU with native bfloat16 and VNNI (an AMD EPYC with AVX512-BF16, a Xeon with AMX)."""
    yield from _cpu(monkeypatch, {"avx2", "avx512f", "avx512_bf16", "avx512_vnni"})


@pytest.mark.parametrize(("int8_x", "bf16_x", "want"), [
    (2.43, 1.91, ("int8", "onnx", "minilm@int8")),
    (1.95, 1.91, ("bf16", "torch", "minilm@bf16")),  # within 5% of bf16: not worth it
    (1.2, 1.91, ("bf16", "torch", "minilm@bf16")),
    # bf16 instructions slower than fp32 (an Intel Xeon measured 0.73x): never taken
    (1.97, 0.73, ("int8", "onnx", "minilm@int8")),
    (1.0, 0.73, ("fp32", "onnx", "minilm")),
])
@pytest.mark.parametrize("precision", ["auto", "fast"])
def test_auto_and_fast_weigh_int8_against_bf16_where_the_cpu_has_both(
        monkeypatch, bf16_and_vnni, int8_x, bf16_x, want, precision):
    """With native bf16 and int8 dot products, ``auto`` and ``fast`` take int8 only where it
    measured faster than torch bf16 and the fp32 path (timed on the fp32 model, before any
    cast), and bf16 only where it is not slower than fp32; an explicit bf16 measures
    nothing."""
    calls: list[tuple[bool, bool]] = []

    def measured(enc, root=None, int8=False, bf16=False):
        calls.append((int8, bf16))
        assert enc.model.dtype == torch.float32
        return {"onnx": 1.1, "int8": int8_x, "bf16": bf16_x}

    monkeypatch.setattr("phrasekit.encoders.onnx_graph.cpu_speedups", measured)
    enc = phrasekit.load(f"minilm@{precision}")
    assert (enc.precision, enc.backend, enc.name) == want
    assert enc.vector_settings()["precision"] == want[0]
    assert enc.model.dtype == (torch.bfloat16 if want[0] == "bf16" else torch.float32)
    assert calls == [(True, True)]
    enc = phrasekit.load("minilm@bf16")
    assert (enc.precision, enc.backend, enc.name) == ("bf16", "torch", "minilm@bf16")
    assert calls == [(True, True)]


def test_a_failed_measurement_leaves_fast_on_bf16(monkeypatch, bf16_and_vnni):
    def measured(enc, root=None, int8=False, bf16=False):
        raise RuntimeError("quantiser failed")

    monkeypatch.setattr("phrasekit.encoders.onnx_graph.cpu_speedups", measured)
    enc = phrasekit.load("minilm@fast")
    assert (enc.precision, enc.backend, enc.name) == ("bf16", "torch", "minilm@bf16")
    assert enc.model.dtype == torch.bfloat16


def test_auto_int8_goes_back_to_fp32_torch_on_a_gpu(monkeypatch, vnni_no_bf16):
    _speeds(monkeypatch, 1.5, 3.0)
    enc = phrasekit.load("minilm@auto")
    assert enc.precision == "int8"
    monkeypatch.setattr(torch.nn.Module, "to", lambda self, d: self)
    monkeypatch.setattr(transformer, "resolve_device", lambda device=None: "cuda")
    monkeypatch.setattr("phrasekit.encoders.base.resolve_device", lambda device=None: "cuda")
    enc.to("cuda")
    assert (enc.precision, enc.backend, enc.name) == ("fp32", "torch", "minilm")


def test_an_explicit_precision_is_never_changed_by_auto_backend(monkeypatch, vnni_no_bf16):
    calls = _speeds(monkeypatch, 1.5, 3.0)
    enc = TransformerEncoder(minilm_path(), precision="fp32", backend="auto")
    assert (enc.precision, enc.backend) == ("fp32", "onnx") and calls == ["fp32"]


def test_speed_is_measured_once_per_cpu(tmp_path, onnx_fp32, monkeypatch):
    full = onnx_graph._calibration_texts  # fewer texts: the same code, a shorter test
    monkeypatch.setattr(onnx_graph, "_calibration_texts",
                        lambda tok: tuple(t[:n] for t, n in zip(full(tok), (16, 2), strict=True)))
    speedup = cpu_speedups(onnx_fp32, root=tmp_path)["onnx"]
    assert speedup > 0
    saved = json.loads((tmp_path / "phrasekit-onnx-speed.json").read_text())
    (key,) = saved["speeds"]
    assert saved["speeds"][key]["speedup"] == speedup
    assert set(saved["speeds"][key]["seconds"]) == {"torch", "onnx"}
    assert f"|{torch.get_num_threads()}|" in key  # keyed by the thread count
    saved["speeds"][key]["speedup"] = 9.0
    (tmp_path / "phrasekit-onnx-speed.json").write_text(json.dumps(saved))
    assert cpu_speedups(onnx_fp32, root=tmp_path)["onnx"] == 9.0  # read back, not measured again
    # int8 was never measured for this key: measured now (fp32 again beside it), then kept
    both = cpu_speedups(onnx_fp32, root=tmp_path, int8=True)
    assert set(both) == {"onnx", "int8"} and both["int8"] > 0 and both["onnx"] != 9.0
    entry = json.loads((tmp_path / "phrasekit-onnx-speed.json").read_text())["speeds"][key]
    assert set(entry["seconds"]) == {"torch", "onnx", "int8"}
    assert entry["int8_speedup"] == both["int8"]
    entry["int8_speedup"] = 7.0
    (tmp_path / "phrasekit-onnx-speed.json").write_text(json.dumps(
        {"kind": "phrasekit-onnx-speed", "speeds": {key: entry}}))
    assert cpu_speedups(onnx_fp32, root=tmp_path, int8=True)["int8"] == 7.0
    # torch in bf16 (fast's rival to int8 on CPUs with both): measured once, then kept
    three = cpu_speedups(onnx_fp32, root=tmp_path, int8=True, bf16=True)
    assert set(three) == {"onnx", "int8", "bf16"} and three["bf16"] > 0
    entry = json.loads((tmp_path / "phrasekit-onnx-speed.json").read_text())["speeds"][key]
    assert set(entry["seconds"]) == {"torch", "onnx", "int8", "bf16"}
    assert entry["bf16_speedup"] == three["bf16"] and onnx_fp32.model.dtype == torch.float32


def test_a_speed_file_that_is_not_ours_is_left_alone(tmp_path, onnx_fp32):
    (tmp_path / "phrasekit-onnx-speed.json").write_text("my notes")
    assert cpu_speedups(onnx_fp32, root=tmp_path)["onnx"] > 0
    assert (tmp_path / "phrasekit-onnx-speed.json").read_text() == "my notes"


def test_a_gpu_takes_auto_back_to_torch_and_keeps_int8_on_the_cpu(monkeypatch):
    """With a (mocked) GPU: auto measures nothing and runs torch; an ONNX encoder that auto
    chose returns to torch on ``to('cuda')``; int8 stays on the CPU under ``auto`` and is
    refused for an explicit ``cuda`` before anything moves."""
    from phrasekit.encoders import transformer as module

    _speeds(monkeypatch, 2.0)
    monkeypatch.setattr(module, "resolve_device", lambda device=None: "cpu")
    chosen = TransformerEncoder(minilm_path(), backend="auto")
    assert chosen.backend == "onnx"
    moved: list[str] = []
    monkeypatch.setattr(torch.nn.Module, "to", lambda self, d: moved.append(d) or self)
    monkeypatch.setattr(module, "resolve_device", lambda device=None: "cuda")
    monkeypatch.setattr("phrasekit.encoders.base.resolve_device", lambda device=None: "cuda")
    assert TransformerEncoder(minilm_path(), backend="auto").backend == "torch"
    chosen.to("cuda")
    assert (chosen.backend, chosen.device, moved) == ("torch", "cuda", ["cuda"])
    int8 = TransformerEncoder(minilm_path(), precision="int8")
    assert int8.to("auto").device == "cpu" and int8.backend == "onnx"
    with pytest.raises(ValueError, match="CPU only"):
        int8.to("cuda")
    assert int8.device == "cpu" and moved == ["cuda"]


def test_a_worker_gets_no_session(onnx_fp32):
    import pickle

    onnx_fp32.encode(["warm"])
    assert onnx_fp32._onnx is not None
    clone = pickle.loads(pickle.dumps(onnx_fp32))
    assert clone._onnx is None and clone.backend == "onnx"
    assert np.allclose(clone.encode(TEXTS[:3]), onnx_fp32.encode(TEXTS[:3]), atol=1e-5)


def test_an_unusable_cache_is_named_and_auto_falls_back_to_torch(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "file.txt"
    not_a_folder.write_text("mine")
    monkeypatch.setenv("PHRASEKIT_ONNX_CACHE", str(not_a_folder))
    with pytest.raises(ValueError, match="PHRASEKIT_ONNX_CACHE"):
        phrasekit.load("minilm@int8").encode(["heart attack"])
    enc = TransformerEncoder(minilm_path(), backend="auto")
    assert enc.backend == "torch" and not_a_folder.read_text() == "mine"


def test_a_cache_without_a_lock_file_still_serves_its_graph(tmp_path, onnx_fp32, monkeypatch):
    """A read-only cache cannot hold the lock file: its checked graph is used all the same."""
    import builtins

    from phrasekit.encoders import onnx_graph

    folder = graph_folder(onnx_fp32.model, onnx_fp32.tokenizer, tmp_path)

    def no_lock(path, *args, **kwargs):
        if str(path).endswith(".phrasekit-onnx.lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(onnx_graph, "open", no_lock, raising=False)
    assert graph_folder(onnx_fp32.model, onnx_fp32.tokenizer, tmp_path) == folder


@pytest.mark.parametrize("cpu", ["vnni_no_bf16", "bf16_and_vnni"])
def test_mpnet_auto_never_takes_int8_but_fast_may(request, cpu):
    """8-bit int8 cost mpnet up to 2.4 on phrase similarity, so its ``auto`` keeps bf16 or
    fp32 (the runtime still chosen by timing); ``fast`` may still weigh int8."""
    request.getfixturevalue(cpu)
    from phrasekit.registry import _at_precision

    auto = _at_precision("mpnet", {"precision": "auto"}, backend=True, auto_int8=False)
    want = "bf16" if cpu == "bf16_and_vnni" else "fp32"
    assert (auto["precision"], auto["name"], auto["backend"]) == (want, "mpnet" if want == "fp32"
                                                                   else "mpnet@bf16", "auto")
    fast = _at_precision("mpnet", {"precision": "fast"}, backend=True, auto_int8=False)
    assert (fast["precision"], fast["name"]) == ("fast", "mpnet")  # the encoder weighs int8
    minilm = _at_precision("minilm", {"precision": "auto"}, backend=True)
    assert minilm["precision"] == "auto"


def test_checking_for_onnx_does_not_import_it() -> None:
    """A cached graph needs ONNX Runtime only: the check looks ``onnx`` up without importing
    it (the import took a second of every command's start)."""
    import subprocess
    import sys

    code = ("import sys; from phrasekit.encoders.onnx_graph import onnx_available, _graph_meta; "
            "assert onnx_available(); meta = _graph_meta(('input_ids',), 'int8'); "
            "assert 'onnx' not in sys.modules, 'onnx imported'; print(meta['versions'][2])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    from importlib.metadata import version

    assert out.stdout.strip() == version("onnx")
