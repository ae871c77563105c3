"""A transformer backbone run by ONNX Runtime: the graph exported once into the cache.

The graph is exported from the model's own weights (the packaged safetensors, or a fine-tuned
model after its deltas are added), so nothing is downloaded. It lives in
``<onnx_cache_dir>/<key>/``, where the key is a digest of the weights, the export settings and
the ONNX Runtime version; the folder is written whole (staged, then swapped in) with a
checksummed manifest. A damaged graph is rebuilt, never used; changed weights give a new key,
so a stale graph is never picked up. ``int8`` quantises the fp32 graph's matrix products
per output channel (ONNX Runtime's dynamic quantisation: int8 weights, activations quantised
per batch).
"""

from __future__ import annotations

import logging
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from phrasekit.artifacts import IntegrityError, staged_folder, tensors_digest, verify_folder

logger = logging.getLogger(__name__)

GRAPH_KIND = "phrasekit-onnx-graph"
OPSET = 17
#: graphs kept in the cache; the least recently used beyond this are removed.
KEEP_GRAPHS = 6
_FILES = {"fp32": "model.onnx", "int8": "model.int8.onnx"}


def onnx_available() -> bool:
    """True when ONNX Runtime (and ``onnx``, which its quantiser needs) can be imported."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def require_onnx(what: str) -> None:
    """Raise a one-line ``ImportError`` saying how to install ONNX Runtime."""
    if not onnx_available():
        raise ImportError(f"{what} runs on ONNX Runtime: pip install onnxruntime onnx")


class _LastHidden(torch.nn.Module):
    """The backbone as a function of its inputs' tensors, returning the last hidden state."""

    def __init__(self, model: torch.nn.Module, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, inputs, strict=True))).last_hidden_state


def graph_key(model: torch.nn.Module, input_names: tuple[str, ...]) -> str:
    """Digest of the fp32 weights, the inputs, the opset and ONNX Runtime's version."""
    import onnxruntime

    meta = {"inputs": list(input_names), "opset": OPSET, "onnxruntime": onnxruntime.__version__,
            "architecture": type(model).__name__}
    return tensors_digest(dict(model.state_dict()), meta)[:32]


def _export(model: torch.nn.Module, tokenizer: Any, names: tuple[str, ...], folder: Path) -> None:
    """Write ``model.onnx`` (fp32) and ``model.int8.onnx`` (per-channel int8) into ``folder``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    sample = tokenizer(["a short phrase", "another, slightly longer phrase"], padding=True,
                       return_tensors="pt")
    args = tuple(sample[n] for n in names)
    axes = {n: {0: "batch", 1: "tokens"} for n in (*names, "last_hidden_state")}
    was_training = model.training
    try:
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")  # the TorchScript exporter's tracer warnings
            torch.onnx.export(_LastHidden(model, names).eval(), args,
                              str(folder / _FILES["fp32"]), input_names=list(names),
                              output_names=["last_hidden_state"], dynamic_axes=axes,
                              opset_version=OPSET, dynamo=False)
    finally:
        model.train(was_training)  # the exporter leaves modules in the wrapper's mode
    logging.disable(logging.WARNING)  # the quantiser's advice to pre-process, on the root logger
    try:
        quantize_dynamic(folder / _FILES["fp32"], folder / _FILES["int8"],
                         weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.disable(logging.NOTSET)


def _is_graph_folder(path: Path) -> bool:
    """A folder this module wrote: a 32-hex-digit name and a manifest of :data:`GRAPH_KIND`."""
    from phrasekit.artifacts import read_manifest

    if not (path.is_dir() and not path.is_symlink() and len(path.name) == 32
            and all(c in "0123456789abcdef" for c in path.name)):
        return False
    try:
        manifest = read_manifest(path)
    except (OSError, ValueError):
        return False
    return manifest is not None and manifest.get("kind") == GRAPH_KIND


def _prune(root: Path, keep: Path) -> None:
    """Remove the least recently used graph folders beyond :data:`KEEP_GRAPHS`; nothing else
    in ``root`` is touched (it may be a folder the user chose for other things too)."""
    folders = sorted((p for p in root.iterdir() if p != keep and _is_graph_folder(p)),
                     key=lambda p: p.stat().st_mtime)
    for old in folders[: max(0, len(folders) - (KEEP_GRAPHS - 1))]:
        shutil.rmtree(old, ignore_errors=True)


def graph_folder(model: torch.nn.Module, tokenizer: Any, root: Path) -> Path:
    """The checked cache folder of ``model``'s graphs, exported first if absent or damaged."""
    names = tuple(n for n in tokenizer.model_input_names if n in ("input_ids", "attention_mask",
                                                                   "token_type_ids"))
    folder = root / graph_key(model, names)
    if folder.is_dir():
        try:
            verify_folder(folder, GRAPH_KIND, required=tuple(_FILES.values()))
            folder.touch()
            return folder
        except IntegrityError as exc:  # replaced below, if its manifest says it is a graph
            logger.warning("rebuilding the ONNX graph: %s", exc)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{root}: the ONNX graph cache (PHRASEKIT_ONNX_CACHE) is not a "
                         f"folder that can be written ({exc.strerror})") from None
    start = time.perf_counter()
    with staged_folder(folder, GRAPH_KIND) as staged:
        _export(model, tokenizer, names, staged)
    logger.info("exported the ONNX graph to %s in %.1f s", folder, time.perf_counter() - start)
    _prune(root, folder)
    return folder


class OnnxBackbone:
    """``model``'s last hidden state computed by ONNX Runtime (fp32 or per-channel int8).

    Args:
        model: the fp32 Hugging Face backbone whose weights the graph is exported from.
        tokenizer: its tokenizer (the graph's inputs are the tokenizer's input names).
        precision: ``fp32`` or ``int8``.
        num_threads: ONNX Runtime's intra-op threads (None: torch's thread count).
        root: the graph cache (default ``<cache_dir>/onnx``).
    """

    def __init__(self, model: torch.nn.Module, tokenizer: Any, precision: str = "fp32",
                 num_threads: int | None = None, root: Path | None = None) -> None:
        require_onnx(f"precision {precision!r}")
        import onnxruntime as ort

        from phrasekit.settings import onnx_cache_dir

        if precision not in _FILES:
            raise ValueError(f"ONNX Runtime runs fp32 or int8, not {precision!r}")
        self.folder = graph_folder(model, tokenizer, root or onnx_cache_dir())
        self.precision = precision
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(num_threads or torch.get_num_threads())
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(self.folder / _FILES[precision]), options,
                                            providers=["CPUExecutionProvider"])
        self.input_names = tuple(i.name for i in self.session.get_inputs())

    def __call__(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The last hidden state (batch, tokens, dim) in float32 for a tokenised batch."""
        feed = {n: batch[n].numpy().astype(np.int64, copy=False) for n in self.input_names}
        return torch.from_numpy(self.session.run(None, feed)[0])


# ------------------------------------------------- which runtime is faster on this CPU
def _calibration_texts(tokenizer: Any, seed: int = 0) -> tuple[list[str], list[str]]:
    """192 phrases of 2-4 words and 12 windows of 150 words drawn from the tokenizer's
    whole-word vocabulary: the two shapes of text phrasekit encodes (speed, not meaning)."""
    words = sorted(w for w in tokenizer.get_vocab() if w.isalpha() and w.isascii() and len(w) > 2)
    rng = np.random.default_rng(seed)
    pick = lambda k: " ".join(rng.choice(words, size=k))  # noqa: E731
    return ([pick(int(rng.integers(2, 5))) for _ in range(192)], [pick(150) for _ in range(12)])


def _seconds(run: Any, texts: list[str], rounds: int = 2) -> float:
    """Best of ``rounds`` wall times of ``run(texts)`` after one warm-up batch."""
    run(texts[:8])
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        run(texts)
        best = min(best, time.perf_counter() - start)
    return best


def _timed(encoder: Any, hidden: Any, threads: int, phrases: list[str], windows: list[str]
           ) -> float:
    """Seconds ``hidden`` (a tokenised batch -> last hidden state) takes over the phrases in
    batches of 64 and the windows in batches of 12 (about the CPU's token cap), with
    ``encoder``'s tokenizer and token limit."""
    from phrasekit.settings import torch_threads

    def runner(size: int) -> Any:
        def run(texts: list[str]) -> None:
            for s in range(0, len(texts), size):
                batch = encoder.tokenizer(texts[s : s + size], padding=True, truncation=True,
                                          max_length=encoder.max_seq_length,
                                          return_tensors="pt")
                hidden(dict(batch))
        return run

    with torch_threads(threads), torch.inference_mode():
        return _seconds(runner(64), phrases) + _seconds(runner(12), windows)


def _speed_key(model: torch.nn.Module, threads: int) -> str:
    import hashlib

    import onnxruntime

    from phrasekit.encoders.cpu import cpu_flags, cpu_model

    config = model.config
    flags = hashlib.sha256(" ".join(sorted(cpu_flags())).encode()).hexdigest()[:12]
    return "|".join(map(str, (cpu_model(), flags, threads, torch.__version__,
                              onnxruntime.__version__, config.model_type, config.hidden_size,
                              config.num_hidden_layers)))


def onnx_speedup(encoder: Any, root: Path | None = None) -> float:
    """How many times faster than torch fp32 ONNX Runtime fp32 encodes with ``encoder``'s
    architecture on this CPU (phrases and long windows together): measured once per CPU,
    thread count and library versions (a few seconds), then read from ``speed.json`` in the
    graph cache."""
    from phrasekit.io import read_json_object, write_json
    from phrasekit.settings import onnx_cache_dir

    root = root or onnx_cache_dir()
    threads = int(encoder.num_threads or torch.get_num_threads())
    key, path = _speed_key(encoder.model, threads), root / "speed.json"
    try:
        known = read_json_object(path) if path.is_file() else {}
    except ValueError:
        known = {}
    if isinstance(known.get(key), int | float) and known[key] > 0:
        return float(known[key])
    phrases, windows = _calibration_texts(encoder.tokenizer)
    base = _timed(encoder, lambda b: encoder.model(**b).last_hidden_state, threads,
                  phrases, windows)
    backbone = OnnxBackbone(encoder.model, encoder.tokenizer, "fp32", threads, root)
    speedup = round(base / _timed(encoder, backbone, threads, phrases, windows), 3)
    write_json(path, {**known, key: speedup})
    logger.info("ONNX Runtime fp32 vs torch fp32 on this CPU (%d threads): %.2fx", threads,
                speedup)
    return speedup
