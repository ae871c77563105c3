"""The model card (``README.md`` with Hugging Face YAML front matter) of an exported model.

A card says where the weights come from (base model, license), what they were trained on, and
how they score on phrasekit's phrase benchmark (``phrasekit eval``, full data; the numbers of
docs/benchmarks.md), so a model taken out of phrasekit keeps its provenance on the Hub or in a
sentence-transformers project.
"""

from __future__ import annotations

import json
from typing import Any

from phrasekit.text import md_escape

#: The benchmark columns of a card: the seven tasks of avg7 and their mean.
BENCHMARK_COLUMNS = ("bird", "turney", "ppdb", "ppdb_filtered", "conll2003", "bc5cdr", "autofj",
                     "avg7")

_MINILM = "sentence-transformers/all-MiniLM-L6-v2"
#: What phrasekit knows of each exportable registered model: base model, license, training
#: data (Hub dataset ids; none of phrasekit's training sets has one, so they are named in the
#: text) and the benchmark row (percent).
CARDS: dict[str, dict[str, Any]] = {
    "minilm": {
        "base_model": _MINILM, "license": "apache-2.0", "datasets": [],
        "about": "all-MiniLM-L6-v2 as packaged with phrasekit (mean pooling, normalised).",
        "benchmark": (67.3, 53.0, 93.6, 63.4, 37.5, 55.6, 70.6, 63.0),
    },
    "mpnet": {
        "base_model": "sentence-transformers/all-mpnet-base-v2", "license": "apache-2.0",
        "datasets": [],
        "about": "all-mpnet-base-v2 as used by phrasekit (mean pooling, normalised).",
        "benchmark": (69.8, 59.9, 92.1, 65.2, 41.7, 46.4, 66.9, 63.1),
    },
    "phrase-bert-minilm": {
        "base_model": _MINILM, "license": "apache-2.0", "datasets": [],
        "about": "Phrase-BERT (Wang et al., 2021) trained by phrasekit on all-MiniLM-L6-v2: "
                 "triplets on PPDB paraphrases and phrases in context from phrasekit's corpora, "
                 "benchmark strings removed; several seeds averaged.",
        "benchmark": (68.2, 53.2, 94.1, 64.6, 38.3, 58.1, 66.7, 63.3),
    },
    "pearl-minilm": {
        "base_model": _MINILM, "license": "apache-2.0", "datasets": [],
        "about": "PEARL (Chen, Varoquaux, Suchanek) trained by phrasekit on all-MiniLM-L6-v2: "
                 "the mean-pooled vector and a byte-level character CNN, projected and "
                 "normalised; contrastive training on phrases from phrasekit's corpora, PPDB "
                 "paraphrases and DBpedia redirect pairs (DBpedia, CC BY-SA 3.0), benchmark "
                 "strings removed. The character CNN and projection load as phrasekit's "
                 "sentence-transformers modules: `pip install phrasekit` where the folder is "
                 "used and load it with `SentenceTransformer(folder, trust_remote_code=True)` "
                 "(the folder holds no code). The type and supersense heads stay in "
                 "phrasekit.",
        "vector": "Mean pooling over the last layer and the character CNN, projected",
        "benchmark": (69.0, 53.9, 94.7, 66.0, 41.9, 60.2, 71.0, 65.2),
    },
    "pearl-mpnet": {
        "base_model": "sentence-transformers/all-mpnet-base-v2", "license": "apache-2.0",
        "datasets": [],
        "about": "PEARL (Chen, Varoquaux, Suchanek) trained by phrasekit on all-mpnet-base-v2 "
                 "with rank-16 low-rank adapters (merged into the weights here): the "
                 "mean-pooled vector and a byte-level character CNN, projected and "
                 "normalised; the same training data as pearl-minilm (phrases, PPDB "
                 "paraphrases, DBpedia redirect pairs, CC BY-SA 3.0; benchmark strings "
                 "removed). Load it with `SentenceTransformer(folder, trust_remote_code=True)` "
                 "where phrasekit is installed (the folder holds no code).",
        "vector": "Mean pooling over the last layer and the character CNN, projected",
        "benchmark": (72.0, 60.4, 93.5, 66.8, 50.4, 67.9, 69.7, 68.7),
    },
}


def usage(phrasekit_modules: bool) -> list[str]:
    """The card's usage section: sentence-transformers, phrasekit and the CLI, on the folder
    (``phrasekit_modules``: the folder lists phrasekit's own modules, a PEARL export)."""
    flag = ", trust_remote_code=True" if phrasekit_modules else ""
    note = ("# phrasekit's modules (pip install phrasekit); the folder holds no code\n"
            if phrasekit_modules else "")
    return ["## Usage", "", "```python", "from sentence_transformers import SentenceTransformer",
            "", f"{note}model = SentenceTransformer(\"path/to/this/folder\"{flag})",
            "vectors = model.encode([\"heart attack\", \"myocardial infarction\"])", "",
            "import phrasekit", "", "encoder = phrasekit.load(\"path/to/this/folder\")  "
            "# the same vectors", "vectors = encoder.encode([\"heart attack\"])", "```", "",
            "From the command line: `phrasekit encode phrases.txt --model path/to/this/folder "
            "-o vectors.npy` (every `--model` takes the folder).", ""]


def model_card(name: str, dim: int, max_seq_length: int,
               phrasekit_modules: bool = False) -> str:
    """The card of the model ``name`` (a registered name; any other gets a card without
    provenance claims), as Markdown with YAML front matter, with a usage section
    (``phrasekit_modules``: the folder lists phrasekit's own modules)."""
    info = CARDS.get(name, {})
    meta: dict[str, Any] = {"library_name": "sentence-transformers",
                            "pipeline_tag": "sentence-similarity",
                            "tags": ["sentence-transformers", "feature-extraction",
                                     "phrase-embeddings", "phrasekit"]}
    for key in ("license", "base_model", "datasets"):
        if info.get(key):
            meta[key] = info[key]
    front = "\n".join(f"{k}: {json.dumps(v)}" for k, v in meta.items())  # JSON is valid YAML
    lines = ["---", front, "---", "", f"# {md_escape(name)} (exported from phrasekit)", "",
             info.get("about", "A transformer model exported from phrasekit."), "",
             f"{info.get('vector', 'Mean pooling over the last layer')}, L2-normalised, "
             f"{dim} dimensions, at most "
             f"{max_seq_length} tokens; `SentenceTransformer(folder).encode(texts)` gives the "
             "vectors `phrasekit.load(...).encode(texts)` gives (cosine >= 0.9999).", ""]
    if "benchmark" in info:
        lines += ["phrasekit's phrase benchmark (`phrasekit eval`, full data, percent; avg7 is "
                  "the mean of the seven tasks):", "",
                  "| " + " | ".join(BENCHMARK_COLUMNS) + " |",
                  "|" + "---|" * len(BENCHMARK_COLUMNS),
                  "| " + " | ".join(f"{v:.1f}" for v in info["benchmark"]) + " |", ""]
    return "\n".join(lines + usage(phrasekit_modules))
