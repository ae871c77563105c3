"""Checks of `phrasekit topics`' options, run before the corpus is read."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from phrasekit.artifacts import check_folder_path, check_output_folder
from phrasekit.cli.common import BadInputError

#: The topic methods of `phrasekit topics --method`.
METHODS = ("documents", "clusters", "pntm", "ccl")
#: Topic methods whose stages run sharded (ccl fine-tunes a model on the corpus in-process).
SHARDED_METHODS = ("documents", "clusters", "pntm")


#: Options only some methods read (parameter: flag, methods): given to another, refused.
METHOD_ONLY = {
    "k_min": ("--k-min", ("documents", "clusters", "ccl")),
    "k_max": ("--k-max", ("documents", "clusters", "ccl")),
    "min_df": ("--min-df", ("documents", "clusters", "pntm")),
    "max_phrases": ("--max-phrases", ("documents", "clusters", "pntm")),
    "sentences": ("--sentences", ("pntm",)),
    "grounding": ("--grounding", ("pntm",)),
    "ccl_steps": ("--ccl-steps", ("ccl",)),
    "max_instances": ("--max-instances", ("ccl",)),
    "label_view": ("--label-view", ("ccl",)),
    "cache_dir": ("--cache-dir", ("documents", "pntm")),
}
#: ``--time-bins`` when not given.
DEFAULT_TIME_BINS = "month"


def check_method_options(method: str, n_topics: int | None, values: Mapping[str, Any],
                         defaults: Mapping[str, Any] | None) -> None:
    """Refuse options set away from their ``defaults`` (``values``: parameter -> value) that
    ``method`` would ignore, and a fixed ``-k`` beside the K range it replaces."""
    defaults = defaults or {}
    given = [n for n in METHOD_ONLY if n in values and values[n] != defaults.get(n)]
    for name in given:
        flag, methods = METHOD_ONLY[name]
        if method not in methods:
            names = ", ".join(methods[:-1]) + " and " + methods[-1] if len(methods) > 1 \
                else methods[0]
            raise BadInputError(f"{flag} applies to the {names} method"
                                f"{'s' if len(methods) > 1 else ''}, not {method}")
    if n_topics is not None and {"k_min", "k_max"} & set(given):
        raise BadInputError("-k fixes the number of topics and --k-min/--k-max choose it from "
                            "a range: give one")


def check_topics_options(*, method: str, label_view: str, n_topics: int | None,
                         k_min: int | None, k_max: int | None, min_df: int | None,
                         max_phrases: int | None, sentences: int, grounding: float, ccl_steps: int,
                         max_instances: int, out: Path, fit_docs: str | None = None,
                         caches: tuple[Path | None, ...] = (),
                         run: dict[str, Any] | None = None,
                         defaults: Mapping[str, Any] | None = None,
                         save: tuple[Path | None, str] | None = None) -> None:
    """Raise ``BadInputError`` for option values `phrasekit topics` cannot use (``defaults``:
    the command's own, to tell the options a user set; ``save``: ``--save-model`` and the
    corpus)."""
    from phrasekit.topics import check_topics_out
    from phrasekit.training.uctopic.ccl import LABEL_VIEWS
    if method not in METHODS:
        raise BadInputError(f"--method must be one of {', '.join(METHODS)}, got {method!r}")
    check_method_options(method, n_topics, {
        "k_min": k_min, "k_max": k_max, "min_df": min_df, "max_phrases": max_phrases,
        "sentences": sentences, "grounding": grounding, "ccl_steps": ccl_steps,
        "max_instances": max_instances, "label_view": label_view}, defaults)
    if run and (run["engine"] != "local" or run["work_dir"] is not None) \
            and method not in SHARDED_METHODS:
        raise BadInputError(f"--engine ray and --work-dir run the methods "
                            f"{', '.join(SHARDED_METHODS)}, not {method}")
    if ccl_steps < 0 or max_instances < 10:
        raise BadInputError("need --ccl-steps >= 0 and --max-instances >= 10")
    if label_view not in LABEL_VIEWS:
        raise BadInputError(f"--label-view must be one of {', '.join(LABEL_VIEWS)}, "
                            f"got {label_view!r}")
    lo, hi = k_min if k_min is not None else 2, k_max if k_max is not None else 10**9
    if lo < 2 or hi < lo:
        raise BadInputError(f"need 2 <= --k-min <= --k-max, got {k_min}..{k_max}")
    smallest = _smallest_k(method) if k_min is None and k_max is not None else None
    if smallest is not None and k_max < smallest:
        raise BadInputError(f"--k-max {k_max} is below the smallest K the {method} method "
                            f"tries ({smallest}); give --k-min too")
    if n_topics is not None and n_topics < 2:
        raise BadInputError(f"-k must be at least 2, got {n_topics}")
    if min_df is not None and min_df < 1:
        raise BadInputError(f"--min-df must be at least 1, got {min_df}")
    if max_phrases is not None and max_phrases < 1:
        raise BadInputError(f"--max-phrases must be at least 1, got {max_phrases}")
    if fit_docs is not None and (method != "documents" or not (
            fit_docs in ("auto", "all") or (fit_docs.isdigit() and int(fit_docs) >= 1))):
        raise BadInputError(f"--fit-docs takes a number >= 1, auto or all, and the documents "
                            f"method, got {fit_docs!r} with {method}")
    if sentences < 0:
        raise BadInputError(f"--sentences must be >= 0, got {sentences}")
    if grounding < 0:
        raise BadInputError(f"--grounding must be >= 0, got {grounding}")
    check_topics_out(out, caches=caches)
    if save is not None:
        check_save_model(save[0], method, save[1], out)


def _smallest_k(method: str) -> int | None:
    """The default smallest K a method tries (None: it fixes K, as pntm does)."""
    from phrasekit.topics import UCTopicModel
    from phrasekit.topics.pipeline import TOPIC_MODELS
    models = {**TOPIC_MODELS, "ccl": UCTopicModel}
    return int(models[method]().k_range[0]) if method in models else None


def check_save_model(save_model: Path | None, method: str, corpus: str, out: Path) -> None:
    """``--save-model``: the documents method, a folder that is no input and may be written."""
    from phrasekit.paths import is_inside, same_path
    from phrasekit.topics.exploration.explore import KIND as TOPIC_MODEL_KIND
    if save_model is not None:
        if method != "documents":
            raise BadInputError(f"--save-model saves the documents method, not {method}")
        if is_inside(save_model, out) or is_inside(out, save_model):
            how = "is" if same_path(save_model, out) else "overlaps"
            raise BadInputError(f"--save-model {save_model} {how} --out {out}: each is "
                                "written as a whole, so give two separate folders")
        check_folder_path(save_model, (corpus, out))
        check_output_folder(save_model, TOPIC_MODEL_KIND)


def slice_options(method: str, time_field: str | None, class_field: str | None,
                  time_bins: str, csv_safe: bool = True,
                  text_field: str = "text") -> dict[str, Any]:
    """``run_topics``' slice settings from ``--time-field``, ``--class-field`` and
    ``--time-bins`` (``BadInputError`` for a bad one; none without a field)."""
    from phrasekit.topics.exploration.slices import check_bins
    if time_bins != DEFAULT_TIME_BINS and not time_field:
        raise BadInputError("--time-bins bins the dates of --time-field: give the field")
    if (time_field or class_field) and method != "documents":
        raise BadInputError(f"--time-field and --class-field slice the documents method, "
                            f"not {method}")
    for option, field in (("--time-field", time_field), ("--class-field", class_field)):
        if field is not None and field in (text_field, "id"):
            raise BadInputError(f"{option} {field!r} is the documents' "
                                f"{'id' if field == 'id' else 'text'}: name another field")
    digits = time_bins.isascii() and time_bins.isdigit()
    bins: str | int = int(time_bins) if digits and len(time_bins) < 19 else time_bins
    try:
        check_bins(bins)
    except ValueError as exc:
        raise BadInputError(f"--time-bins: {exc}") from None
    if not (time_field or class_field):
        return {}
    return {"time_field": time_field, "class_field": class_field, "time_bins": bins,
            "csv_safe": csv_safe}
