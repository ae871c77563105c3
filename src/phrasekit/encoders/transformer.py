"""Transformer encoder with mean pooling over a packaged (offline) backbone.

Precision modes trade a little accuracy for speed on CPU:
``fp32`` (default); ``bf16`` (weights and activations in bfloat16, pooled in float32: 2.6-3.6x
faster where the CPU has AVX512-BF16/AMX, cosine to fp32 above 0.999); ``int8`` (ONNX Runtime's
dynamic quantisation, int8 weights per output channel: 2.7-3.1x faster, mean cosine to fp32
about 0.99, minimum 0.92 on short phrases). ``backend="onnx"`` runs fp32 on ONNX Runtime too (the
same vectors; 1.6-1.7x torch on a 2-core AMD EPYC), and ``auto`` uses it only where it measures
faster on the CPU at hand. ``precision="auto"`` with ``backend="auto"`` (``minilm@auto``) runs
bf16 where the CPU has it natively; elsewhere fp32, or int8 where the CPU has native int8 dot
products and int8 measured at least ``MIN_SPEEDUP`` times the fp32 path (:func:`fastest_cpu_path`).
Where the CPU has native bf16 and native int8 dot products, ``auto`` and ``"fast"`` weigh 8-bit
int8 against bf16 (:func:`fastest_bf16_path`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from phrasekit.encoders.base import (
    Encoder,
    cap_chars,
    check_device,
    resolve_device,
    token_counts,
)
from phrasekit.encoders.cpu import (
    AUTO_PRECISIONS,
    cpu_flags,
    native_bf16,
    native_int8_dot,
    weighs_int8_over_bf16,
)
from phrasekit.encoders.pooling import mean_pool
from phrasekit.encoders.token_ids import TokenIds
from phrasekit.models.backbones import load_hf_model

logger = logging.getLogger(__name__)

PRECISIONS = ("fp32", "bf16", "int8")
BACKENDS = ("torch", "onnx", "auto")
#: Tokens a transformer encoder keeps per text unless told (sentence-transformers' MiniLM
#: setting).
MAX_SEQ_LENGTH = 256


def cpu_supports_bf16() -> bool:
    """True when the CPU advertises native bfloat16 arithmetic (AVX512-BF16 or AMX; ARM's
    BF16 on Linux: :func:`~phrasekit.encoders.cpu.native_bf16`)."""
    return native_bf16(cpu_flags())


@functools.cache
def _auto_precision() -> str:
    if not cpu_supports_bf16():
        choice, why = "fp32", "no native bfloat16 on this CPU"
    elif (speed := measured_bf16_speed()) is not None and speed < 1.0:
        choice, why = "fp32", f"native bfloat16, but torch bf16 measured {speed:.2f}x fp32 here"
    else:
        choice, why = "bf16", "the CPU has native bfloat16"
    logger.info("precision auto -> %s (%s)", choice, why)
    return choice


def measured_bf16_speed() -> float | None:
    """Torch bf16's speed against torch fp32 on this CPU, for the packaged MiniLM (the
    speed file's measurement, taken once per CPU and thread count: the one ``minilm@auto``
    takes), or None where it cannot be measured (no ONNX Runtime or packaged MiniLM, a GPU):
    a CPU may have bf16 instructions and still run them slower than fp32."""
    from phrasekit.encoders import onnx_graph
    from phrasekit.models.backbones import minilm_path

    if resolve_device(None) != "cpu":
        return None
    try:  # keyed, built and timed as minilm@auto is before its cast: one measurement for both
        from transformers import AutoConfig

        path = minilm_path()
        known = onnx_graph.stored_cpu_speedups(SimpleNamespace(
            config=AutoConfig.from_pretrained(path), attention="eager",
            max_seq_length=MAX_SEQ_LENGTH, num_threads=None))
        if known is not None and "bf16" in known:  # the usual case: no model loaded
            return known["bf16"]
        if not onnx_graph.onnx_available():
            return None
        probe = TransformerEncoder(path, name="minilm", precision="fp32",
                                   attn_implementation="eager")
        int8 = weighs_int8_over_bf16(cpu_flags())
        return float(onnx_graph.cpu_speedups(probe, int8=int8, bf16=True)["bf16"])
    except Exception as exc:  # the flags still stand
        logger.warning("torch bf16 not timed against fp32 on this CPU (%s)", exc)
        return None


def resolve_precision(precision: str) -> str:
    """``"auto"`` or ``"fast"``: bf16 where the CPU computes it natively (AVX512-BF16 or AMX:
    1.3-1.9x the fp32 speed, vectors within cosine 0.999) and torch bf16 was not measured
    slower than fp32 here (:func:`measured_bf16_speed`), fp32 elsewhere (emulated bf16 is
    slower; an encoder with ``backend="auto"`` may then take int8 where it measures faster:
    :func:`fastest_cpu_path`); any other value as it is. The choice is logged once per
    process."""
    return _auto_precision() if precision in AUTO_PRECISIONS else precision


def resolve_backend(backend: str | None, precision: str) -> str:
    """The runtime of a resolved ``precision``: int8 runs on ONNX Runtime only, bf16 on torch
    only (ONNX Runtime has no fast CPU bfloat16); fp32 on torch unless asked, and ``auto``
    (fp32 on whichever runtime is measured faster here) is settled by the encoder, which has
    the model to measure. None: torch, or ONNX Runtime for int8."""
    if backend is None:
        return "onnx" if precision == "int8" else "torch"
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if precision == "int8":
        if backend == "torch":
            raise ValueError("int8 runs on ONNX Runtime: use backend 'onnx' or 'auto'")
        return "onnx"
    if precision == "bf16":
        if backend == "onnx":
            raise ValueError("bf16 runs on torch; ONNX Runtime takes fp32 or int8")
        return "torch"
    return backend


#: ``backend="auto"`` leaves torch fp32 only for a runtime measured at least this much faster.
MIN_SPEEDUP = 1.05


@functools.cache
def _log_auto_backend(choice: str, speedup: float) -> None:
    logger.info("backend auto -> %s for fp32 (ONNX Runtime measured %.2fx torch fp32 on this "
                "CPU)", choice, speedup)


@functools.cache
def _log_auto_int8(choice: str, int8: float, fp32: float) -> None:
    logger.info("precision auto -> %s (no fast bfloat16 here; int8 on ONNX Runtime measured "
                "%.2fx torch fp32 here, the fp32 path %.2fx)", choice, int8, fp32)


def fastest_fp32_backend(encoder: Any) -> str:
    """The runtime of an fp32 request under ``backend="auto"``: ONNX Runtime (the same
    vectors) where :func:`~phrasekit.encoders.onnx_graph.cpu_speedups` measured it faster than
    torch on this CPU (once per CPU), else torch; never a runtime slower here. Logged once
    per process."""
    return _fastest_cpu_path(encoder, int8=False)[1]


def fastest_cpu_path(encoder: Any, seven_bit: bool = False) -> tuple[str, str]:
    """``(precision, backend)`` of ``precision="auto"`` on a CPU without native bfloat16: int8
    on ONNX Runtime where the CPU has native int8 dot products (VNNI, AMX or ARM: 8-bit
    weights) and int8 measured at least ``MIN_SPEEDUP`` times the fp32 path, else fp32 on
    :func:`fastest_fp32_backend`'s runtime; never a path slower here. 8-bit int8 kept MiniLM's
    avg7 within 0.3 of fp32 and topics' NMI at most 0.015 below fp32's on the five development
    corpora; the 7-bit weights of CPUs without VNNI lost 0.34 avg7, so those stay fp32
    (docs/methods/topics.md, "Precision and the number of topics") unless ``seven_bit``
    (``precision="fast"``) weighs them too."""
    return _fastest_cpu_path(encoder, int8=seven_bit or native_int8_dot(cpu_flags()))


def _fp32_backend(onnx_speedup: float) -> str:
    """fp32's runtime given ONNX Runtime's measured speed-up over torch: ONNX Runtime only
    where it is at least ``MIN_SPEEDUP`` times faster."""
    return "onnx" if onnx_speedup >= MIN_SPEEDUP else "torch"


def _fastest_cpu_path(encoder: Any, int8: bool) -> tuple[str, str]:
    from phrasekit.encoders import onnx_graph

    if not onnx_graph.onnx_available() or resolve_device(None) != "cpu":  # a GPU: torch
        return "fp32", "torch"
    try:
        speeds = onnx_graph.cpu_speedups(encoder, int8=int8)  # one measurement for both
        fp32, quick = speeds["onnx"], speeds.get("int8", 0.0)
    except Exception as exc:  # any failure to export or measure: torch still works
        if int8:  # the int8 graph alone may have failed: fp32's choice still stands
            logger.warning("precision auto -> fp32: int8 not measured (%s)", exc)
            return _fastest_cpu_path(encoder, int8=False)
        logger.warning("backend auto -> torch: %s", exc)
        return "fp32", "torch"
    backend = _fp32_backend(fp32)
    _log_auto_backend(backend, fp32)
    if not int8:
        return "fp32", backend
    fp32_path = max(fp32, 1.0)
    choice = ("int8", "onnx") if quick >= MIN_SPEEDUP * fp32_path else ("fp32", backend)
    _log_auto_int8(choice[0], quick, fp32_path)
    return choice


def bf16_weighs_int8() -> bool:
    """True where ``precision="auto"`` and ``"fast"`` on this CPU time int8 against bf16
    (:func:`~phrasekit.encoders.cpu.weighs_int8_over_bf16`)."""
    return weighs_int8_over_bf16(cpu_flags())


def fastest_bf16_path(encoder: Any) -> tuple[str, str]:
    """``(precision, backend)`` of ``precision="auto"`` or ``"fast"`` where
    :func:`bf16_weighs_int8`: int8 (8-bit weights) on ONNX Runtime where it measured at least
    ``MIN_SPEEDUP`` times the better of torch bf16 and the fp32 path on this CPU, else that
    better one: a CPU with bf16 instructions may run them slower than fp32 (an Intel Xeon
    measured torch bf16 at 0.73x fp32), and ``auto`` is never a path slower here. 8-bit int8 keeps
    keyphrase rankings (Inspec dev F1@10 39.44 against 39.55 in bf16), MiniLM's avg7 (63.11
    against fp32's 62.99) and topics' NMI (within 0.013 of fp32 on the five development
    corpora; docs/methods/topics.md, "A steadier K")."""
    from phrasekit.encoders import onnx_graph

    if not onnx_graph.onnx_available() or resolve_device(None) != "cpu":
        return "bf16", "torch"
    try:
        speeds = onnx_graph.cpu_speedups(encoder, int8=True, bf16=True)
        int8, bf16, onnx = speeds["int8"], speeds["bf16"], speeds["onnx"]
    except Exception as exc:  # any failure to export or measure: bf16 on torch still works
        logger.warning("precision auto/fast -> bf16: int8 not measured (%s)", exc)
        return "bf16", "torch"
    fp32 = ("fp32", _fp32_backend(onnx))
    fp32_speed = onnx if fp32[1] == "onnx" else 1.0
    best, speed = (("bf16", "torch"), bf16) if bf16 >= fp32_speed else (fp32, fp32_speed)
    choice = ("int8", "onnx") if int8 >= MIN_SPEEDUP * speed else best
    _log_bf16_or_int8(f"{choice[0]} on {choice[1]}", int8, bf16)
    return choice


@functools.cache
def _log_bf16_or_int8(choice: str, int8: float, bf16: float) -> None:
    logger.info("precision auto/fast -> %s (int8 on ONNX Runtime measured %.2fx torch fp32 here, "
                "torch bf16 %.2fx)", choice, int8, bf16)


def cast_model(model: torch.nn.Module, precision: str) -> torch.nn.Module:
    """``model`` in ``precision`` on torch: fp32 as it is or bf16 weights (int8 runs on ONNX
    Runtime, :mod:`phrasekit.encoders.onnx_graph`)."""
    precision = resolve_precision(precision)
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "int8":
        raise ValueError("int8 runs on ONNX Runtime (TransformerEncoder(backend='onnx')), not "
                         "on a torch module")
    if precision == "bf16":
        if not cpu_supports_bf16():
            logger.warning("this CPU has no native bfloat16 support: bf16 mode may be slow")
        return model.to(torch.bfloat16)
    return model


class TransformerEncoder(Encoder):
    """Mean-pooled transformer embeddings (the sentence-transformers recipe) from a local folder.

    Args:
        model_path: a local Hugging Face model directory (config, tokenizer, safetensors).
        name: short name used in logs and tables.
        max_seq_length: tokens kept per text; longer texts are truncated.
        precision: ``fp32``, ``bf16``, ``int8`` or ``auto`` (:func:`resolve_precision`).
        num_threads: torch intra-op threads (None keeps torch's default).
        attn_implementation: transformers attention kernel; None picks ``eager`` for bf16
            (about 20% faster than SDPA on short phrases on CPU) and the library default
            otherwise.
        backend: ``torch``, ``onnx`` (ONNX Runtime over a graph exported into the cache:
            :mod:`phrasekit.encoders.onnx_graph`) or ``auto`` (fp32 on the runtime measured
            faster on this CPU); None: torch, or ONNX Runtime for int8, which runs there only.
            The ONNX session opens on the first encode from the weights at that time: weights
            changed in place afterwards need a new encoder.
    """

    default_batch_size = 128
    #: measured on a 2-core AMD EPYC (bf16 and fp32): 8-16 windows of 150 words per batch beat
    #: 32 by 15% and 256 by 2x; short phrases still fill a batch of 128.
    tokens_per_batch = 2048

    def __init__(
        self,
        model_path: str | Path,
        name: str = "transformer",
        max_seq_length: int = MAX_SEQ_LENGTH,
        precision: str = "fp32",
        num_threads: int | None = None,
        attn_implementation: str | None = None,
        backend: str | None = None,
    ) -> None:
        from transformers import AutoConfig, AutoTokenizer

        asked, precision = precision, resolve_precision(precision)
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.backend = resolve_backend(backend, precision)
        path = Path(model_path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{path} is not a transformer model folder (no config.json)")
        if not any(path.glob("*.safetensors")):
            raise ValueError(f"{path}: no .safetensors weights; phrasekit loads safetensors only "
                             "(never pickled weights such as pytorch_model.bin); convert the "
                             "folder with transformers' save_pretrained(safe_serialization=True)")
        self.num_threads = num_threads
        self.name = name
        self.model_path = path
        self.max_seq_length = int(max_seq_length)
        self.precision = precision
        self.tokenizer = AutoTokenizer.from_pretrained(str(path))
        if attn_implementation is None and precision == "bf16":
            attn_implementation = "eager"
        self.attention = attn_implementation or "default"
        self._load_options = {"attn_implementation": attn_implementation} if (
            attn_implementation) else {}
        self._model: torch.nn.Module | None = None
        self._fingerprint: str | None = None
        self._config = AutoConfig.from_pretrained(str(path), **self._load_options)
        self._onnx: Any = None
        self._tokenized: tuple[Sequence[str], TokenIds] | None = None
        self._settle_auto(asked, backend)
        if self.backend == "torch":
            self.model = cast_model(self.model, self.precision)
        self.dim = int(self.config.hidden_size)

    @property
    def model(self) -> torch.nn.Module:
        """The Hugging Face backbone (fp32 unless cast), loaded on first use: an encoder on
        ONNX Runtime whose graph is in the cache never loads it (about 4 s of its start)."""
        if self._model is None:
            self._model = load_hf_model(self.model_path, **self._load_options).eval()
        return self._model

    @model.setter
    def model(self, model: torch.nn.Module) -> None:
        self._model = model

    @property
    def config(self) -> Any:
        """The backbone's config (the loaded model's, else read from the folder)."""
        return self._config if self._model is None else self._model.config

    def onnx_backbone(self, precision: str, num_threads: int | None = None,
                      root: Path | None = None) -> Any:
        """This backbone on ONNX Runtime in ``precision``; the folder's own weights, untouched
        so far, are found by fingerprint without loading the model."""
        from phrasekit.encoders.onnx_graph import OnnxBackbone, weights_fingerprint

        if self._model is not None:  # loaded: its weights may have been changed in place
            return OnnxBackbone(self._model, self.tokenizer, precision, num_threads, root)
        if self._fingerprint is None:  # once per encoder (and the copies made of it)
            self._fingerprint = weights_fingerprint(self.model_path, self._load_options)
        return OnnxBackbone(lambda: self.model, self.tokenizer, precision, num_threads, root,
                            self._fingerprint)

    def cast(self, precision: str, backend: str | None = None) -> None:
        """Switch an fp32 encoder to ``precision`` in place (after weights were changed in
        fp32, e.g. fine-tuning deltas added to the packaged backbone)."""
        if self.precision != "fp32" or self.backend != "torch":
            raise ValueError(f"{self.name}: only an fp32 torch encoder can be cast, not "
                             f"{self.precision} on {self.backend}")
        asked, precision = precision, resolve_precision(precision)
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
        self.backend, self.precision = resolve_backend(backend, precision), precision
        self._settle_auto(asked, backend)
        if self.backend == "torch":
            self.model = cast_model(self.model, self.precision)
        self._onnx = None

    def _settle_auto(self, asked: str, backend: str | None) -> None:
        """Under ``backend="auto"``, the runtime (and, for ``precision="auto"`` or ``"fast"``,
        int8 or fp32, or with native bf16 int8 or bf16) measured fastest here; an encoder that
        took int8 is named ``<name>@int8``, so its vectors never share a cache with another
        precision's. A GPU takes such an encoder back to torch."""
        self._fp32_name = self.name
        self._auto = backend == "auto" and (self.backend == "auto" or (
            asked in AUTO_PRECISIONS and self.precision == "bf16" and bf16_weighs_int8()))
        if not self._auto:
            return
        if self.precision == "bf16":
            self._fp32_name = self.name = self.name.removesuffix("@bf16")
            self.precision, self.backend = fastest_bf16_path(self)
        elif asked in AUTO_PRECISIONS:
            self.precision, self.backend = fastest_cpu_path(self, seven_bit=asked == "fast")
        else:
            self.backend = fastest_fp32_backend(self)
        if self.precision != "fp32" and "@" not in self.name:
            self.name = f"{self.name}@{self.precision}"

    def vector_settings(self) -> dict[str, object]:
        extra: dict[str, object] = {"backend": self.backend} if self.backend != "torch" else {}
        if self.precision == "int8":
            from phrasekit.encoders.onnx_graph import reduce_range

            extra["int8_weight_bits"] = 7 if reduce_range() else 8  # CPUs without VNNI
        return {**super().vector_settings(), **extra}

    def to(self, device: str | None = "auto") -> TransformerEncoder:
        """As :meth:`Encoder.to`; ONNX Runtime runs on the CPU: fp32 that ``auto`` put there
        goes back to torch for a GPU, int8 (or an asked ONNX backend) stays on the CPU under
        ``auto`` and is refused for an explicit ``cuda``, before anything moves."""
        if self.backend == "onnx" and resolve_device(device) != "cpu":
            if self._auto:  # int8 that auto chose goes back to fp32 (the model's weights)
                self.backend, self._onnx = "torch", None
                self.precision, self.name = "fp32", self._fp32_name
            elif check_device(device) == "auto":
                logger.info("%s runs on ONNX Runtime, on the CPU", self.name)
                return self
            else:
                raise ValueError(f"{self.name}: {self.precision} on ONNX Runtime runs on the "
                                 "CPU only; use fp32 or bf16 on a GPU")
        super().to(device)
        return self

    def __getstate__(self) -> dict[str, Any]:
        # a worker opens its own session; ids tokenised for a call stay with the call
        return {**self.__dict__, "_onnx": None, "_tokenized": None}

    def _hidden(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The backbone's last hidden state for a tokenised batch (torch or ONNX Runtime)."""
        if self.backend == "torch":
            return self.model(**batch).last_hidden_state
        if self._onnx is None:
            self._onnx = self.onnx_backbone(self.precision, self.num_threads)
        return self._onnx(batch)

    def token_embeddings(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Contextual token vectors (batch, seq, dim) in float32 and the attention mask."""
        known = getattr(self, "_tokenized", None)
        batch = known[1].batch(texts, self.max_seq_length) if known else None
        if batch is None:
            batch = self.tokenizer(cap_chars(texts, self.max_seq_length), padding=True,
                                   truncation=True, max_length=self.max_seq_length,
                                   return_tensors="pt")
        batch = {k: v.to(self.device) for k, v in batch.items()}
        with torch.inference_mode():
            hidden = self._hidden(batch)
        return hidden.float().cpu(), batch["attention_mask"].cpu()

    def torch_modules(self) -> list[torch.nn.Module]:
        """The backbone, where torch runs it or it was loaded (an ONNX Runtime encoder's
        model is loaded only to export its graph)."""
        return [self.model] if self.backend == "torch" or self._model is not None else []

    def runs_torch(self) -> bool:
        return True  # tokens and pooling are torch tensors on either runtime

    @property
    def side_by_side(self) -> bool:  # type: ignore[override]
        """Batches side by side on torch (an ONNX session keeps its own threads)."""
        return self.backend == "torch"

    def _encode_all(self, items: list[str], batch_size: int | None, show_progress: bool
                    ) -> np.ndarray:
        """``encode`` with every text tokenised once, for counting and for its batch."""
        ids = TokenIds.of(self.tokenizer, cap_chars(items, self.max_seq_length),
                          self.max_seq_length, keys=items)
        self._tokenized = None if ids is None else (items, ids)
        try:
            return super()._encode_all(items, batch_size, show_progress)
        finally:
            self._tokenized = None

    def _token_counts(self, items: Sequence[str]) -> list[int]:
        known = getattr(self, "_tokenized", None)
        if known is not None and known[0] is items:
            return known[1].lengths.tolist()
        return token_counts(self.tokenizer, items, self.max_seq_length)

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        hidden, mask = self.token_embeddings(texts)
        return mean_pool(hidden, mask).numpy()
