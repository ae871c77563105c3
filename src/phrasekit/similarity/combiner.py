"""The hybrid matcher's combiner: pair features in, the probability of a match out.

Two kinds, both trained by ``benchmarks/matching/train_hybrid.py`` and shipped per encoder in
``phrasekit/data/matching/`` without pickle:

- ``logistic``: standardised features, one weight each (all in ``hybrid-<model>.json``);
- ``trees``: gradient-boosted trees (scikit-learn's ``HistGradientBoostingClassifier`` with a
  log-loss objective) stored as flat node arrays in ``hybrid-<model>.safetensors`` beside the
  JSON, evaluated here with numpy: the sum of the trees' leaves, through a sigmoid.

Both expose ``predict(x)``, ``threshold`` (the default cut, chosen by F1 on dev), ``model`` and
``info`` (what it was trained on, its dev scores, the command that made it).
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from phrasekit.registry import registered_base
from phrasekit.similarity.features import FEATURES

logger = logging.getLogger(__name__)

SCORERS = ("hybrid", "cosine")
COMBINER_FORMAT = 2
KIND = "phrasekit-hybrid-combiner"
#: Encoder whose combiner serves encoders without one of their own.
FALLBACK_MODEL = "pearl-minilm"
TREE_ARRAYS = ("feature", "split", "left", "right", "leaf", "value", "roots")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))).astype(np.float32)


@dataclass
class Combiner:
    """A combiner: ``logistic`` (``params``: mean, scale, coef, intercept) or ``trees``
    (``params``: the node arrays of :data:`TREE_ARRAYS` and ``baseline``)."""

    model: str
    kind: str
    params: dict[str, Any]
    threshold: float = 0.5
    features: tuple[str, ...] = FEATURES
    info: dict[str, Any] = field(default_factory=dict)
    _compiled: Any = field(default=None, init=False, repr=False, compare=False)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Match probabilities of feature rows ``x`` (n, len(features))."""
        if x.ndim != 2 or x.shape[1] != len(self.features):
            raise ValueError(f"combiner expects {len(self.features)} features, got {x.shape}")
        if self.kind == "logistic":
            p = self.params
            return _sigmoid(((x - p["mean"]) / p["scale"]) @ p["coef"] + p["intercept"])
        x = np.ascontiguousarray(x, dtype=np.float64)
        if self._compiled is None:
            self._compiled = _compiled_trees(self.params) or ()
        if self._compiled:
            return _sigmoid(_compiled_sum(self._compiled, x, self.params["baseline"]))
        return _sigmoid(self._tree_sum(x))

    def _tree_sum(self, x: np.ndarray) -> np.ndarray:
        """The baseline plus every tree's leaf value for each row (x <= split goes left), in
        numpy: the reference the compiled walk is checked against."""
        p = self.params
        raw = np.full(len(x), p["baseline"], dtype=np.float64)
        rows = np.arange(len(x))
        for root in p["roots"]:
            node = np.full(len(x), root, dtype=np.int64)
            active = rows
            while len(active):
                nd = node[active]
                inner = ~p["leaf"][nd]
                active, nd = active[inner], nd[inner]
                go_left = x[active, p["feature"][nd]] <= p["split"][nd]
                node[active] = np.where(go_left, p["left"][nd], p["right"][nd])
            raw += p["value"][node]
        return raw

    @classmethod
    def from_estimator(cls, fitted: Any, model: str, threshold: float,
                       info: dict[str, Any] | None = None) -> Combiner:
        """A fitted scikit-learn ``StandardScaler`` + ``LogisticRegression`` pipeline, or a
        binary ``HistGradientBoostingClassifier``, as a combiner."""
        if hasattr(fitted, "steps"):
            scaler, lr = fitted.steps[0][1], fitted.steps[-1][1]
            params = {"mean": scaler.mean_.astype(float),
                      "scale": np.where(scaler.scale_ > 0, scaler.scale_, 1.0),
                      "coef": lr.coef_[0].astype(float), "intercept": float(lr.intercept_[0])}
            return cls(model, "logistic", params, threshold, info=dict(info or {}))
        return cls(model, "trees", _flat_trees(fitted), threshold, info=dict(info or {}))

    def save(self, path: str | Path) -> None:
        """Write ``path`` (JSON) and, for trees, its ``.safetensors`` sibling."""
        from safetensors.numpy import save_file

        from phrasekit.io import write_json

        path = Path(path)
        doc = {"format": COMBINER_FORMAT, "kind": KIND, "combiner": self.kind,
               "model": self.model, "features": list(self.features),
               "threshold": float(self.threshold), "info": self.info}
        if self.kind == "logistic":
            doc["params"] = {k: np.asarray(v).tolist() for k, v in self.params.items()}
        else:
            doc["params"] = {"baseline": float(self.params["baseline"])}
            arrays = {k: np.ascontiguousarray(self.params[k]) for k in TREE_ARRAYS}
            arrays["leaf"] = arrays["leaf"].astype(np.uint8)
            save_file(arrays, str(path.with_suffix(".safetensors")))
        write_json(path, doc)

    @classmethod
    def load(cls, path: str | Path, where: str | None = None) -> Combiner:
        """Read a combiner written by :meth:`save`; a ValueError names the file and field."""
        path = Path(path)
        where = where or str(path)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{where}: not a readable combiner ({exc})") from None
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise ValueError(f"{where}: not a phrasekit hybrid combiner")
        feats = tuple(doc.get("features", ()))
        if feats != FEATURES:
            raise ValueError(f"{where}: field 'features' lists {len(feats)} features, this "
                             f"phrasekit computes {len(FEATURES)} ({', '.join(FEATURES)})")
        threshold = doc.get("threshold")
        if not isinstance(threshold, int | float) or not 0.0 <= threshold <= 1.0:
            raise ValueError(f"{where}: field 'threshold' must be a probability in [0, 1]")
        kind = doc.get("combiner")
        raw = doc.get("params") if isinstance(doc.get("params"), dict) else {}
        if kind == "logistic":
            params = _logistic_params(raw, where)
        elif kind == "trees":
            params = _tree_params(raw, path.with_suffix(".safetensors"), where)
        else:
            raise ValueError(f"{where}: field 'combiner' must be logistic or trees, got {kind!r}")
        return cls(model=str(doc.get("model", "")), kind=kind, params=params,
                   threshold=float(threshold), info=dict(doc.get("info") or {}))


def _flat_trees(fitted: Any) -> dict[str, Any]:
    """A HistGradientBoostingClassifier's trees as flat node arrays (children indexed into the
    concatenation)."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in TREE_ARRAYS[:-1]}
    roots, offset = [], 0
    for (tree,) in fitted._predictors:
        nodes = tree.nodes
        roots.append(offset)
        for key, name in (("feature", "feature_idx"), ("split", "num_threshold"),
                          ("leaf", "is_leaf"), ("value", "value")):
            cols[key].append(nodes[name])
        cols["left"].append(nodes["left"].astype(np.int64) + offset)
        cols["right"].append(nodes["right"].astype(np.int64) + offset)
        offset += len(nodes)
    dtypes = {"feature": np.int32, "split": np.float64, "left": np.int32, "right": np.int32,
              "leaf": bool, "value": np.float64}
    params: dict[str, Any] = {k: np.concatenate(v).astype(dtypes[k]) for k, v in cols.items()}
    params["roots"] = np.asarray(roots, dtype=np.int32)
    params["baseline"] = float(np.ravel(fitted._baseline_prediction)[0])
    return params


def _compiled_trees(params: dict[str, Any]) -> list[Any] | None:
    """The trees as scikit-learn's compiled, OpenMP-parallel predictors (its tree walk, ~10x
    the numpy one), checked against the numpy walk on probe rows; None where this
    scikit-learn lacks them or the node arrays are not one contiguous block per tree."""
    try:
        from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE
        from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
    except ImportError:
        return None
    bounds = [*map(int, params["roots"]), len(params["leaf"])]
    if any(b <= a for a, b in itertools.pairwise(bounds)):
        return None
    no_sets = np.zeros((0, 8), dtype=np.uint32)
    trees = []
    for a, b in itertools.pairwise(bounds):
        leaf = params["leaf"][a:b]
        left, right = params["left"][a:b] - a, params["right"][a:b] - a
        if ((~leaf) & ((right >= b - a) | (left >= b - a))).any():
            return None
        nodes = np.zeros(b - a, dtype=PREDICTOR_RECORD_DTYPE)
        nodes["value"], nodes["is_leaf"] = params["value"][a:b], leaf
        nodes["feature_idx"], nodes["num_threshold"] = params["feature"][a:b], params["split"][a:b]
        nodes["left"], nodes["right"] = np.where(leaf, 0, left), np.where(leaf, 0, right)
        trees.append(TreePredictor(nodes, no_sets, no_sets))
    probe = np.random.default_rng(0).choice(params["split"], (64, len(FEATURES)))
    reference = Combiner("", "trees", params)._tree_sum(probe)
    try:
        same = np.allclose(_compiled_sum(trees, probe, params["baseline"]), reference)
    except (TypeError, ValueError) as exc:  # another scikit-learn's signature
        logger.debug("compiled tree walk unavailable (%s); using numpy", exc)
        return None
    return trees if same else None


def _compiled_sum(trees: list[Any], x: np.ndarray, baseline: float) -> np.ndarray:
    """The baseline plus every compiled tree's value for each row, on the job's threads."""
    from phrasekit.threads import compute_threads

    n_threads = compute_threads()
    no_sets, no_map = np.zeros((0, 8), dtype=np.uint32), np.zeros(x.shape[1], dtype=np.uint32)
    raw = np.full(len(x), baseline, dtype=np.float64)
    for tree in trees:
        raw += tree.predict(x, no_sets, no_map, n_threads)
    return raw


def _logistic_params(raw: dict[str, Any], where: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name in ("mean", "scale", "coef"):
        arr = np.asarray(raw.get(name, []), dtype=np.float64)
        if arr.shape != (len(FEATURES),) or not np.isfinite(arr).all():
            raise ValueError(f"{where}: field 'params.{name}' must be {len(FEATURES)} finite "
                             "numbers")
        params[name] = arr
    if (params["scale"] <= 0).any():
        raise ValueError(f"{where}: field 'params.scale' must be positive")
    intercept = raw.get("intercept")
    if not isinstance(intercept, int | float) or not np.isfinite(intercept):
        raise ValueError(f"{where}: field 'params.intercept' must be a number")
    params["intercept"] = float(intercept)
    return params


def _tree_params(raw: dict[str, Any], arrays: Path, where: str) -> dict[str, Any]:
    """The node arrays, checked so that every walk stays inside them and ends on a leaf."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        params: dict[str, Any] = dict(load_file(str(arrays)))
    except (OSError, SafetensorError) as exc:
        raise ValueError(f"{where}: its trees {arrays.name} cannot be read ({exc})") from None
    missing = [k for k in TREE_ARRAYS if k not in params]
    if missing:
        raise ValueError(f"{arrays}: missing array(s) {', '.join(missing)}")
    n = len(params["leaf"])
    params["leaf"] = params["leaf"].astype(bool)
    inner = ~params["leaf"]
    node = np.arange(n)
    ok = all(len(params[k]) == n for k in ("feature", "split", "left", "right", "value"))
    ok = ok and bool(np.isfinite(params["value"]).all()) and len(params["roots"]) > 0
    ok = ok and bool(((params["roots"] >= 0) & (params["roots"] < n)).all())
    for child in ("left", "right"):  # children lie after their parent: no cycle
        c = params[child][inner]
        ok = ok and bool(((c > node[inner]) & (c < n)).all())
    f = params["feature"][inner]
    ok = ok and bool(((f >= 0) & (f < len(FEATURES))).all())
    baseline = raw.get("baseline")
    if not ok or not isinstance(baseline, int | float) or not np.isfinite(baseline):
        raise ValueError(f"{arrays}: the trees' node arrays are inconsistent (damaged file?)")
    params["baseline"] = float(baseline)
    return params


@functools.lru_cache(maxsize=8)
def shipped_combiner(model: str, warn: bool = True) -> Combiner:
    """The combiner shipped for encoder ``model`` at any precision (else the default model's,
    with a warning unless ``warn`` is False: a lookup of its threshold, before the inputs are
    checked, stays silent and the join that scores with it says so)."""
    folder = resources.files("phrasekit") / "data" / "matching"
    model = registered_base(model)
    name = model if (folder / f"hybrid-{model}.json").is_file() else FALLBACK_MODEL
    if name != model and warn:
        logger.warning("no hybrid combiner was trained for %r; using %s's (its probabilities "
                       "are less well calibrated for this encoder)", model, FALLBACK_MODEL)
    with resources.as_file(folder / f"hybrid-{name}.json") as path:
        return Combiner.load(path, where=f"phrasekit/data/matching/hybrid-{name}.json")
