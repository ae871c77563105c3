"""Faster spaCy pipelines for phrase extraction, with the same annotations.

Two costs of the small English pipeline that phrasekit does not need to pay:

- **Matrix products.** thinc multiplies with the BLIS library bundled in its wheel, which picks
  its portable ``generic`` kernels on the AMD EPYC measured here (2.9x slower than numpy's
  OpenBLAS for a tok2vec-shaped product on an AVX-512 AMD EPYC). :func:`choose_ops` times both
  once per process, on this CPU, and keeps BLIS where it is as fast. The choice is thinc's
  process-wide current ops, so spaCy pipelines loaded afterwards in the same process use it
  too (on 194,718 bbc_news tokens the tags, parses and noun chunks were the same).
- **The attribute ruler.** Its matcher maps fine tags to coarse parts of speech through 179
  patterns and took a fifth of the pipeline's time. Phrase extraction reads only ``POS``,
  ``TAG`` and ``DEP`` (never ``LEMMA`` or ``MORPH``), so :class:`PosRuler` applies the ruler's
  own patterns for those three attributes from lookup tables, with the ruler's precedence (a
  later pattern wins). Patterns of a form it does not know keep spaCy's ruler.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

#: The attributes a :class:`PosRuler` sets: all that phrase extraction reads.
RULER_ATTRS = ("POS", "TAG", "DEP")
#: Token attributes a :class:`PosRuler` pattern may test, in the order of ``doc.to_array``.
_TESTED = ("TAG", "LOWER", "DEP", "IS_SPACE")
_COLUMN = {attr: i for i, attr in enumerate(_TESTED)}
#: Distinct token rows a :class:`PosRuler` remembers the matching rules of.
MEMO_ROWS = 200_000
#: A tok2vec-shaped product (tokens x width*3 times width*3 x width*3 of the small pipeline).
_GEMM_SHAPE = (2048, 288, 288)


# ---------------------------------------------------------------------------- matrix products
@functools.lru_cache(maxsize=1)
def numpy_gemm_is_faster() -> bool:
    """Whether numpy's matrix product beats thinc's BLIS on this CPU (one thread each, best of
    three runs of a tok2vec-shaped product); measured once per process."""
    try:
        import blis.py
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    m, k, n = _GEMM_SHAPE
    rng = np.random.default_rng(0)
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)

    def best(fn: Callable[[], Any]) -> float:
        fn()
        times = []
        for _ in range(3):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    with threadpool_limits(1):
        t_blis = best(lambda: blis.py.gemm(a, b))
        t_numpy = best(lambda: a @ b)
    faster = t_numpy < 0.9 * t_blis
    logger.info("spaCy matrix products: %s (numpy %.1f ms, BLIS %.1f ms on this CPU)",
                "numpy" if faster else "BLIS", 1e3 * t_numpy, 1e3 * t_blis)
    return faster


def choose_ops() -> None:
    """Make thinc multiply with numpy where that measured faster; call before loading."""
    if numpy_gemm_is_faster():
        from thinc.api import NumpyOps, get_current_ops, set_current_ops

        current = get_current_ops()
        if isinstance(current, NumpyOps) and getattr(current, "use_blis", False):
            set_current_ops(NumpyOps(use_blis=False))


# ---------------------------------------------------------------------------- POS ruler
Test = Callable[[Any], bool]


def _value_test(spec: Any, to_key: Callable[[Any], Any], to_text: Callable[[Any], str]
                ) -> tuple[Test, list[Any] | None]:
    """A test of one token attribute value (``to_key`` maps a pattern's value to the value
    ``doc.to_array`` gives, ``to_text`` back), and the values it accepts when it is a finite
    set (for indexing). Raises ``ValueError`` for a form the ruler does not know."""
    if isinstance(spec, str | bool):
        key = to_key(spec)
        return (lambda v: v == key), [key]
    if isinstance(spec, dict) and len(spec) == 1:
        (op, arg), = spec.items()
        if op == "IN":
            keys = frozenset(to_key(a) for a in arg)
            return (lambda v: v in keys), list(keys)
        if op == "NOT_IN":
            keys = frozenset(to_key(a) for a in arg)
            return (lambda v: v not in keys), None
        if op == "REGEX" and to_key is not bool:
            rx = re.compile(arg)
            return (lambda v: rx.search(to_text(v)) is not None), None
    raise ValueError(f"unsupported pattern value {spec!r}")


class PosRuler:
    """spaCy's attribute ruler for ``POS``, ``TAG`` and ``DEP`` only, from lookup tables.

    ``PosRuler.from_ruler(nlp.get_pipe("attribute_ruler"))`` (None when a pattern has a form this
    class does not know); calling it on a ``Doc`` sets what the ruler would have set for those
    attributes, later patterns taking precedence as in the ruler.
    """

    def __init__(self, strings: Any, rules: Sequence[dict[str, Any]]) -> None:
        self.strings = strings
        self.rules: list[tuple[list[dict[str, Test]], int, dict[str, Any]]] = []
        self.index: dict[tuple[str, Any], list[int]] = {}
        self.unindexed: list[int] = []
        self.source = [dict(rule) for rule in rules]
        for rule in rules:
            self._add(rule["pattern"], int(rule.get("index", 0)), rule["attrs"])
        self._memo: dict[tuple[Any, ...], tuple[tuple[tuple[int, dict[str, Any]], ...],
                                                tuple[int, ...]]] = {}

    def _key(self, attr: str) -> Callable[[Any], Any]:
        if attr == "IS_SPACE":
            return bool
        return lambda s: self.strings.add(s) if s else 0

    def _text(self, key: int) -> str:
        return self.strings[key] if key else ""

    def _add(self, pattern: list[dict[str, Any]], index: int, attrs: dict[str, Any]) -> None:
        set_attrs = {a: v for a, v in attrs.items() if a in RULER_ATTRS}
        if not set_attrs or not pattern:
            return
        tokens: list[dict[str, Test]] = []
        first_keys: tuple[str, list[Any]] | None = None
        for k, spec in enumerate(pattern):
            tests: dict[str, Test] = {}
            for attr, value in spec.items():
                if attr not in _TESTED:
                    raise ValueError(f"unsupported pattern attribute {attr}")
                tests[attr], keys = _value_test(value, self._key(attr), self._text)
                if k == 0 and keys is not None and first_keys is None:
                    first_keys = (attr, keys)
            tokens.append(tests)
        rule_id = len(self.rules)
        self.rules.append((tokens, index, set_attrs))
        if first_keys is None:
            self.unindexed.append(rule_id)
        else:
            attr, keys = first_keys
            for key in keys:
                self.index.setdefault((attr, key), []).append(rule_id)

    @classmethod
    def from_ruler(cls, ruler: Any) -> PosRuler | None:
        """The ruler's patterns as a :class:`PosRuler`, or None when one has an unknown form."""
        rules = [{"pattern": pat, "index": p.get("index", 0), "attrs": p["attrs"]}
                 for p in ruler.patterns for pat in p["patterns"]]
        try:
            return cls(ruler.vocab.strings, rules)
        except (ValueError, TypeError) as exc:
            logger.debug("keeping spaCy's attribute ruler: %s", exc)
            return None

    def _at(self, row: tuple[Any, ...]) -> tuple[tuple[tuple[int, dict[str, Any]], ...],
                                                 tuple[int, ...]]:
        """For a token with these attribute values: the one-token rules it matches, with what
        they set, and the longer rules whose first token it matches, both in rule order
        (memoised: a corpus has few distinct rows)."""
        hit = self._memo.get(row)
        if hit is None:
            values = dict(zip(_TESTED, row, strict=True))
            ids = set(self.unindexed)
            for attr in _TESTED:
                ids.update(self.index.get((attr, values[attr]), ()))
            first = [i for i in sorted(ids)
                     if all(test(values[a]) for a, test in self.rules[i][0][0].items())]
            hit = (tuple((i, self.rules[i][2]) for i in first if len(self.rules[i][0]) == 1),
                   tuple(i for i in first if len(self.rules[i][0]) > 1))
            if len(self._memo) > MEMO_ROWS:
                self._memo.clear()
            self._memo[row] = hit
        return hit

    def _rest_matches(self, rule_id: int, rows: list[tuple[Any, ...]], start: int) -> bool:
        """Whether the tokens after ``start`` match the rest of a longer rule."""
        tokens = self.rules[rule_id][0]
        return start + len(tokens) <= len(rows) and all(
            test(rows[start + k][_COLUMN[a]])
            for k, tests in enumerate(tokens) if k for a, test in tests.items())

    def __call__(self, doc: Any) -> Any:
        """Set ``doc``'s POS (and any TAG or DEP a rule sets). The rules are looked up once per
        distinct token row (tag, lower-case form, dependency, space) of the Doc; only tokens
        that start a longer rule, or get a TAG or DEP, are visited one by one."""
        from spacy.attrs import DEP, IS_SPACE, LOWER, POS, TAG
        from spacy.parts_of_speech import IDS

        if not len(doc):
            return doc
        distinct, inverse = np.unique(doc.to_array([TAG, LOWER, DEP, IS_SPACE]), axis=0,
                                      return_inverse=True)
        inverse = inverse.reshape(-1)
        keys = [(t, lo, d, bool(sp)) for t, lo, d, sp in distinct.tolist()]
        found = [self._at(key) for key in keys]
        longer = self._longer_hits(keys, found, inverse)
        merged = [_merge(single) for single, _ in found]
        pos = doc.to_array([POS])
        row_pos = np.array([IDS[m["POS"]] if "POS" in m else -1 for m in merged], dtype=np.int64)
        tok_pos = row_pos[inverse]
        pos[tok_pos >= 0] = tok_pos[tok_pos >= 0].astype(pos.dtype)
        sets_more = np.array([len(m) > ("POS" in m) for m in merged])[inverse]
        for i in set(np.flatnonzero(sets_more).tolist()) | set(longer):
            single = found[inverse[i]][0]
            attrs = _merge(sorted(single + tuple(longer[i])) if i in longer else single)
            if "POS" in attrs:
                pos[i] = IDS[attrs.pop("POS")]
            for attr, value in attrs.items():
                setattr(doc[i], attr.lower() + "_", value)
        doc.from_array([POS], pos)
        return doc

    def _longer_hits(self, keys: list[tuple[Any, ...]], found: list[Any], inverse: np.ndarray
                     ) -> dict[int, list[tuple[int, dict[str, Any]]]]:
        """The rules of more than one token that match, by the token each one sets: ``keys``
        and ``found`` per distinct row, ``inverse`` each token's row."""
        starts = np.array([bool(f[1]) for f in found])[inverse]
        longer: dict[int, list[tuple[int, dict[str, Any]]]] = {}
        if not starts.any():
            return longer
        rows = [keys[j] for j in inverse.tolist()]
        for start in np.flatnonzero(starts).tolist():
            for rule_id in found[inverse[start]][1]:
                if self._rest_matches(rule_id, rows, start):
                    tokens, index, attrs = self.rules[rule_id]
                    target = (start if index >= 0 else start + len(tokens)) + index
                    longer.setdefault(target, []).append((rule_id, attrs))
        return longer


def _merge(rules: Sequence[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """What ``rules`` (in rule order) set together: the ruler's precedence, later rules win."""
    attrs: dict[str, Any] = {}
    for _, sets in rules:
        attrs.update(sets)
    return attrs


def speed_up(nlp: Any) -> Any:
    """``nlp`` with its attribute ruler replaced by a :class:`PosRuler` (when the pipeline
    does not lemmatize, so nothing reads ``LEMMA`` or ``MORPH``) and returned."""
    if "attribute_ruler" not in nlp.pipe_names or "lemmatizer" in nlp.pipe_names:
        return nlp
    ruler = PosRuler.from_ruler(nlp.get_pipe("attribute_ruler"))
    if ruler is None:
        return nlp
    from spacy.language import Language

    if not Language.has_factory(POS_RULER):
        Language.factory(POS_RULER, default_config={"rules": []})(_make_pos_ruler)
    nlp.replace_pipe("attribute_ruler", POS_RULER, config={"rules": ruler.source})
    return nlp


#: The spaCy factory name of :class:`PosRuler`.
POS_RULER = "phrasekit_pos_ruler"


def _make_pos_ruler(nlp: Any, name: str, rules: list[dict[str, Any]]) -> PosRuler:
    return PosRuler(nlp.vocab.strings, rules)
