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

import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import shutil
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from phrasekit.artifacts import IntegrityError, staged_folder, tensors_digest, verify_folder

logger = logging.getLogger(__name__)

GRAPH_KIND = "phrasekit-onnx-graph"
#: phrasekit's export recipe; raising it retires every cached graph.
GRAPH_FORMAT = 3
OPSET = 17
#: graphs kept in the cache; the least recently used beyond this are removed.
KEEP_GRAPHS = 6
GRAPH = "model.onnx"
SPEED_FILE, SPEED_KIND = "phrasekit-onnx-speed.json", "phrasekit-onnx-speed"
KEYS_FILE, KEYS_KIND = "phrasekit-onnx-keys.json", "phrasekit-onnx-keys"
PRECISIONS = ("fp32", "int8")


@functools.cache
def onnx_available() -> bool:
    """True when ONNX Runtime (and ``onnx``, which its quantiser needs) is installed: looked
    up, not imported (importing ``onnx`` took a second of every command's start, though a
    cached graph needs only ONNX Runtime)."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("onnx", "onnxruntime"))


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


def reduce_range() -> bool:
    """int8 weights in 7 bits where the CPU has no VNNI instructions: ONNX Runtime's advice,
    as its 8-bit products can saturate there (an x86 concern: ARM's do not)."""
    from phrasekit.encoders.cpu import cpu_flags, native_int8_dot

    return not native_int8_dot(cpu_flags())


def _graph_meta(input_names: tuple[str, ...], precision: str) -> dict[str, Any]:
    """What besides the weights gives a graph: the inputs, the precision (and int8's range),
    phrasekit's export recipe and the versions of every library that writes or runs it (read
    from the installed packages: a cached graph needs no ``onnx`` import)."""
    from importlib.metadata import version

    import onnxruntime
    import transformers

    return {"inputs": list(input_names), "opset": OPSET, "format": GRAPH_FORMAT,
            "precision": precision, "reduce_range": precision == "int8" and reduce_range(),
            "versions": [torch.__version__, transformers.__version__, version("onnx"),
                         onnxruntime.__version__]}


def graph_key(model: torch.nn.Module, input_names: tuple[str, ...], precision: str) -> str:
    """Digest of the fp32 weights, the model's config and :func:`_graph_meta`: a change to any
    of them gives another folder."""
    meta = {**_graph_meta(input_names, precision), "config": model.config.to_json_string(),
            "architecture": type(model).__name__}
    return tensors_digest(dict(model.state_dict()), meta)[:32]


def weights_fingerprint(folder: Path, options: dict[str, Any] | None = None) -> str:
    """sha256 of a model folder's ``config.json`` and safetensors files (and the load
    ``options``): the same files load the same model, so the graph key computed from that
    model once is remembered under this (:func:`graph_folder`) and the model need not be
    loaded again to find its graph."""
    digest = hashlib.sha256(json.dumps(options or {}, sort_keys=True).encode("utf-8"))
    for path in [folder / "config.json", *sorted(folder.glob("*.safetensors"))]:
        digest.update(f"|{path.name}|".encode())
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 24):
                digest.update(chunk)
    return digest.hexdigest()


#: graph keys remembered by weights fingerprint; the oldest beyond this are forgotten.
KEEP_KEYS = 64


def _memo_entry(fingerprint: str, names: tuple[str, ...], precision: str) -> str:
    meta = json.dumps({**_graph_meta(names, precision), "weights": fingerprint},
                      sort_keys=True)
    return hashlib.sha256(meta.encode("utf-8")).hexdigest()[:32]


def _read_kind(path: Path, kind: str, field: str) -> dict[str, Any] | None:
    """The ``field`` object of phrasekit's JSON file ``path`` of ``kind`` ({} when absent);
    None when ``path`` is something else (left untouched)."""
    from phrasekit.io import read_json_object

    if not path.exists():
        return {}
    try:
        saved = read_json_object(path)
    except (OSError, ValueError):
        return None
    if saved.get("kind") != kind or not isinstance(saved.get(field), dict):
        return None
    return saved[field]


def _remembered_key(root: Path, entry: str) -> str | None:
    key = (_read_kind(root / KEYS_FILE, KEYS_KIND, "keys") or {}).get(entry)
    ok = isinstance(key, str) and len(key) == 32 and all(c in "0123456789abcdef" for c in key)
    return key if ok else None


def _remember_key(root: Path, entry: str, key: str) -> None:
    from phrasekit.io import write_json

    keys = _read_kind(root / KEYS_FILE, KEYS_KIND, "keys")
    if keys is None:
        logger.warning("%s is not phrasekit's graph key file (or a damaged one); the key is "
                       "not kept, so graphs are checked afresh: delete the file (or set "
                       "PHRASEKIT_ONNX_CACHE to another folder)", root / KEYS_FILE)
        return
    keys = {k: v for k, v in keys.items() if k != entry}
    keys = dict([*list(keys.items())[-(KEEP_KEYS - 1):], (entry, key)])
    with contextlib.suppress(OSError):  # a read-only cache: the key is computed next time
        write_json(root / KEYS_FILE, {"kind": KEYS_KIND, "keys": keys})


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """An exclusive lock on the cache folder, so processes export and measure one at a time
    (none on a read-only cache, which nobody can write to)."""
    try:
        fh = open(root / ".phrasekit-onnx.lock", "a")  # noqa: SIM115 - closed below
    except OSError:
        yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """The quantiser's advice to pre-process goes to the root logger; hide warnings meanwhile
    and restore whatever level of ``logging.disable`` was set before."""
    previous = logging.root.manager.disable
    logging.disable(max(previous, logging.WARNING))
    try:
        yield
    finally:
        logging.disable(previous)


def _export(model: torch.nn.Module, tokenizer: Any, names: tuple[str, ...], folder: Path,
            precision: str) -> None:
    """Write ``model.onnx`` into ``folder``: the fp32 graph, or its per-channel int8 copy."""
    sample = tokenizer(["a short phrase", "another, slightly longer phrase"], padding=True,
                       return_tensors="pt")
    args = tuple(sample[n] for n in names)
    axes = {n: {0: "batch", 1: "tokens"} for n in (*names, "last_hidden_state")}
    fp32 = folder / (GRAPH if precision == "fp32" else "fp32.onnx")
    was_training, attention = model.training, model.config._attn_implementation
    # from the eager attention's operators ONNX Runtime's fusions run 150-word windows 1.2x
    # faster than from SDPA's (phrases level); the arithmetic is the same
    model.set_attn_implementation("eager")
    try:
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")  # the TorchScript exporter's tracer warnings
            torch.onnx.export(_LastHidden(model, names).eval(), args, str(fp32),
                              input_names=list(names), output_names=["last_hidden_state"],
                              dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    finally:
        model.train(was_training)  # the exporter leaves modules in the wrapper's mode
        model.set_attn_implementation(attention)
    if precision == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with _quiet_root_logger():
            quantize_dynamic(fp32, folder / GRAPH, weight_type=QuantType.QInt8,
                             per_channel=True, reduce_range=reduce_range())
        fp32.unlink()


def _is_graph_folder(path: Path) -> bool:
    """A folder this module wrote: a 32-hex-digit name and a manifest of :data:`GRAPH_KIND`."""
    from phrasekit.artifacts import read_manifest

    if not (path.is_dir() and not path.is_symlink() and len(path.name) == 32
            and all(c in "0123456789abcdef" for c in path.name)):
        return False
    manifest = read_manifest(path)  # None when absent or unreadable
    return manifest is not None and manifest.get("kind") == GRAPH_KIND


def _prune(root: Path, keep: Path) -> None:
    """Remove the least recently used graph folders beyond :data:`KEEP_GRAPHS`; nothing else
    in ``root`` is touched (it may be a folder the user chose for other things too)."""
    folders = sorted((p for p in root.iterdir() if p != keep and _is_graph_folder(p)),
                     key=lambda p: p.stat().st_mtime)
    for old in folders[: max(0, len(folders) - (KEEP_GRAPHS - 1))]:
        shutil.rmtree(old, ignore_errors=True)


def _ours(folder: Path) -> bool:
    """A key folder holding nothing but a graph and its manifest (whatever their state)."""
    return all(p.name in (GRAPH, "manifest.json") and p.is_file() and not p.is_symlink()
               for p in folder.iterdir())


#: a backbone, or a function that loads it (called only when its graph must be keyed or made)
ModelSource = torch.nn.Module | Callable[[], torch.nn.Module]


def _loaded(model: ModelSource) -> torch.nn.Module:
    return model if isinstance(model, torch.nn.Module) else model()


def _key(model: ModelSource, names: tuple[str, ...], precision: str, root: Path,
         fingerprint: str | None) -> str:
    """The graph key of ``model``: remembered by ``fingerprint`` (:func:`weights_fingerprint`
    of the untouched folder it loads from) where known, else computed from its weights."""
    entry = _memo_entry(fingerprint, names, precision) if fingerprint else None
    if entry and (key := _remembered_key(root, entry)):
        return key
    key = graph_key(_loaded(model), names, precision)
    if entry:
        _remember_key(root, entry, key)
    return key


def graph_folder(model: ModelSource, tokenizer: Any, root: Path, precision: str = "fp32",
                 fingerprint: str | None = None) -> Path:
    """The checked cache folder of ``model``'s graph in ``precision``, exported first if
    absent or damaged (a damaged one is replaced, never used). ``model`` may be a loader and
    ``fingerprint`` its folder's :func:`weights_fingerprint`: a graph found by a remembered
    key then costs no model load (about 4 s of an ONNX Runtime encoder's start)."""
    names = tuple(n for n in tokenizer.model_input_names if n in ("input_ids", "attention_mask",
                                                                   "token_type_ids"))
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{root}: the ONNX graph cache (PHRASEKIT_ONNX_CACHE) is not a "
                         f"folder that can be written ({exc.strerror})") from None
    with _locked(root):
        folder = root / _key(model, names, precision, root, fingerprint)
        if folder.is_dir():
            try:
                verify_folder(folder, GRAPH_KIND, required=(GRAPH,))
                with contextlib.suppress(OSError):  # a read-only cache is still usable
                    folder.touch()
                return folder
            except IntegrityError as exc:
                if not _ours(folder):
                    raise ValueError(f"{exc}; it holds files that are not a graph, so it is "
                                     "not replaced: move them or point PHRASEKIT_ONNX_CACHE "
                                     "elsewhere") from None
                logger.warning("rebuilding the ONNX graph: %s", exc)
                shutil.rmtree(folder)
        start = time.perf_counter()
        with staged_folder(folder, GRAPH_KIND) as staged:
            _export(_loaded(model), tokenizer, names, staged, precision)
        logger.info("exported the %s ONNX graph to %s in %.1f s", precision, folder,
                    time.perf_counter() - start)
        _prune(root, folder)
    return folder


class OnnxBackbone:
    """``model``'s last hidden state computed by ONNX Runtime (fp32 or per-channel int8).

    Args:
        model: the fp32 Hugging Face backbone whose weights the graph is exported from, or
            a function loading it (:func:`graph_folder`).
        tokenizer: its tokenizer (the graph's inputs are the tokenizer's input names).
        precision: ``fp32`` or ``int8``.
        num_threads: ONNX Runtime's intra-op threads (None: torch's thread count).
        root: the graph cache (default ``<cache_dir>/onnx``).
        fingerprint: :func:`weights_fingerprint` of the folder ``model`` loads from untouched.
    """

    def __init__(self, model: ModelSource, tokenizer: Any, precision: str = "fp32",
                 num_threads: int | None = None, root: Path | None = None,
                 fingerprint: str | None = None) -> None:
        require_onnx(f"precision {precision!r}")
        import onnxruntime as ort

        from phrasekit.settings import onnx_cache_dir

        if precision not in PRECISIONS:
            raise ValueError(f"ONNX Runtime runs fp32 or int8, not {precision!r}")
        self.folder = graph_folder(model, tokenizer, root or onnx_cache_dir(), precision,
                                   fingerprint)
        self.precision = precision
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(num_threads or torch.get_num_threads())
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(self.folder / GRAPH), options,
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


def _runner(encoder: Any, hidden: Any, size: int) -> Any:
    """``run(texts)``: ``hidden`` over ``texts`` tokenised in batches of ``size``."""
    def run(texts: list[str]) -> None:
        for s in range(0, len(texts), size):
            batch = encoder.tokenizer(texts[s : s + size], padding=True, truncation=True,
                                      max_length=encoder.max_seq_length, return_tensors="pt")
            hidden(dict(batch))
    return run


def _measure(encoder: Any, backbones: dict[str, OnnxBackbone], threads: int, rounds: int = 3,
             bf16: bool = False) -> dict[str, float]:
    """Best seconds of torch fp32, of each ONNX Runtime graph in ``backbones`` (by name:
    ``onnx`` fp32, ``int8``) and, with ``bf16``, of a bfloat16 copy of the torch model, over
    the calibration texts (phrases in batches of 64, windows in batches of 12, about the CPU's
    token cap), in alternating rounds after a warm-up of both shapes, with the allocator
    settings encoding uses."""
    import copy

    from phrasekit.encoders.allocator import keep_freed_memory
    from phrasekit.settings import torch_threads

    keep_freed_memory()
    phrases, windows = _calibration_texts(encoder.tokenizer)
    runs = {"torch": lambda b: encoder.model(**b).last_hidden_state, **backbones}
    if bf16:
        half = copy.deepcopy(encoder.model).to(torch.bfloat16)
        runs["bf16"] = lambda b: half(**b).last_hidden_state
    best = {name: float("inf") for name in runs}
    with torch_threads(threads), torch.inference_mode():
        for hidden in runs.values():  # warm-up
            _runner(encoder, hidden, 64)(phrases[:64])
            _runner(encoder, hidden, 12)(windows[:12])
        for r in range(rounds):
            for name in list(runs) if r % 2 == 0 else list(runs)[::-1]:
                start = time.perf_counter()
                _runner(encoder, runs[name], 64)(phrases)
                _runner(encoder, runs[name], 12)(windows)
                best[name] = min(best[name], time.perf_counter() - start)
    return best


def _speed_key(encoder: Any, threads: int) -> str:
    import onnxruntime

    from phrasekit.encoders.cpu import cpu_flags, cpu_model

    config = encoder.config
    flags = hashlib.sha256(" ".join(sorted(cpu_flags())).encode()).hexdigest()[:12]
    return "|".join(map(str, (cpu_model(), flags, threads, torch.__version__,
                              onnxruntime.__version__, config.model_type, config.hidden_size,
                              config.num_hidden_layers, encoder.attention,
                              encoder.max_seq_length, GRAPH_FORMAT)))


def _read_speeds(path: Path) -> dict[str, Any] | None:
    """The speeds file's entries; None when ``path`` is something else (left untouched)."""
    return _read_kind(path, SPEED_KIND, "speeds")


def stored_cpu_speedups(encoder: Any, root: Path | None = None) -> dict[str, float] | None:
    """What :func:`cpu_speedups` stored for ``encoder`` on this CPU, opening no model or graph
    (None: not measured yet); ``encoder`` needs only ``config``, ``attention``,
    ``max_seq_length`` and ``num_threads``."""
    from phrasekit.settings import onnx_cache_dir

    threads = int(encoder.num_threads or torch.get_num_threads())
    return _stored_speedups((root or onnx_cache_dir()) / SPEED_FILE, _speed_key(encoder, threads))


def _stored_speedups(path: Path, key: str) -> dict[str, float] | None:
    """The speed-ups stored for ``key`` in the speeds file (``onnx``, and ``int8`` and
    ``bf16`` where they were measured), if any."""
    entry = (_read_speeds(path) or {}).get(key)
    if not isinstance(entry, dict) or not isinstance(entry.get("speedup"), int | float):
        return None
    out = {"onnx": float(entry["speedup"])}
    for name in ("int8", "bf16"):
        if isinstance(entry.get(f"{name}_speedup"), int | float):
            out[name] = float(entry[f"{name}_speedup"])
    return out


def cpu_speedups(encoder: Any, root: Path | None = None, int8: bool = False,
                 bf16: bool = False) -> dict[str, float]:
    """How many times faster than torch fp32 ONNX Runtime encodes with ``encoder``'s
    architecture on this CPU (phrases and long windows together): ``onnx`` for fp32, with
    ``int8`` also ``int8`` for the int8 graph, and with ``bf16`` also ``bf16`` for torch in
    bfloat16 (``encoder``'s model must still be fp32). Measured once per CPU, thread count,
    attention kernel and library versions (a few seconds; int8 adds its graph's export), then
    read back from ``phrasekit-onnx-speed.json`` in the graph cache."""
    from phrasekit.io import write_json
    from phrasekit.settings import onnx_cache_dir

    root = root or onnx_cache_dir()
    threads = int(encoder.num_threads or torch.get_num_threads())
    key, path = _speed_key(encoder, threads), root / SPEED_FILE
    wanted = {"onnx"} | ({"int8"} if int8 else set()) | ({"bf16"} if bf16 else set())
    known = _stored_speedups(path, key)
    if known is not None and wanted <= set(known):  # the usual case: no graph opened
        return known
    backbones = {name: encoder.onnx_backbone("fp32" if name == "onnx" else name, threads, root)
                 for name in sorted(wanted - {"bf16"})}
    with _locked(root):  # another process may have measured meanwhile
        known = _stored_speedups(path, key)
        if known is not None and wanted <= set(known):
            return known
        best = _measure(encoder, backbones, threads, bf16=bf16)
        speedups = {name: round(best["torch"] / best[name], 3) for name in sorted(wanted)}
        saved = _read_speeds(path)
        if saved is None:
            logger.warning("%s is not phrasekit's speed file (or a damaged one); the measurement "
                           "is not kept, so each run measures again: delete the file (or set "
                           "PHRASEKIT_ONNX_CACHE to another folder)", path)
        else:
            entry = {"speedup": speedups["onnx"], "seconds": best}
            entry.update({f"{name}_speedup": speedups[name] for name in ("int8", "bf16")
                          if name in speedups})
            write_json(path, {"kind": SPEED_KIND, "speeds": {**saved, key: entry}})
    logger.info("speed against torch fp32 on this CPU (%d threads): %s", threads,
                ", ".join(f"{name} {x:.2f}x" for name, x in speedups.items()))
    return speedups
