"""Cases of ``probe_cli.py`` (issue 47): artefacts re-signed after an edit or of a foreign kind,
bounded work (deep JSON, numeric options, large inputs), the encoder and corpus contract, CSV
formula cells, and what the messages say about a corpus or option that is not what it should
be. See ``probe_cli_cases.py`` for :class:`Case`."""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np
from probe_cli_cases import (
    CORPUS,
    NAMES,
    TOPICS,
    Case,
    build_index,
    build_topics,
    cli,
    corpus_and_names,
    edit_json,
    model_copy,
    null_device,
    resign,
    runner,
    small_corpus,
    write,
)

from phrasekit.cli import app
from phrasekit.models.backbones import packaged_model_dir

DEEP = "[" * 100_000


# ------------------------------------------------------------------ re-signed and foreign
def resigned_cases(root: Path) -> list[Case]:
    probe = "artefacts re-signed or foreign (swapped graph, other weights, plain folders)"
    names = write(root / "names.txt", NAMES)
    reversed_names = write(root / "reversed.txt", "\n".join(NAMES.splitlines()[::-1]) + "\n")
    one = write(root / "one.txt", "new york city\n")
    ann = build_index(names, root / "ann", "--index", "ann")
    ann_b = build_index(reversed_names, root / "ann-b", "--index", "ann")
    exact = build_index(names, root / "exact", "--index", "exact")
    tset = build_topics(small_corpus(root / "in.jsonl"), root / "tset")
    cases = []

    def query(folder: Path, named: str | tuple[str, ...], isolated: bool = False) -> Case:
        return Case(probe, cli("index", "query", folder, "chicago", "-k", "1", "-q"), named,
                    isolated=isolated, seconds=60)

    def encode(folder: Path, named: str | tuple[str, ...]) -> Case:
        return Case(probe, cli("encode", one, "--out", root / f"{folder.name}.npy", "-m", folder,
                               "-q"), named, out=root / f"{folder.name}.npy")

    d = shutil.copytree(ann, root / "ann-swap")
    shutil.copy(ann_b / "index.faiss", d / "index.faiss")
    cases.append(query(d, "index.faiss"))
    d = shutil.copytree(ann, root / "ann-swap-signed")
    shutil.copy(ann_b / "index.faiss", d / "index.faiss")
    resign(d)
    cases.append(query(d, "index.faiss"))
    for tag, base, change in (("ef-search", ann, {"index__ef_search": 10**12}),
                              ("m", ann, {"index__m": 10**9}),
                              ("kind-ann", exact, {"index_kind": "ann"}),
                              ("count", exact, {"count": 10**12}),
                              ("dim", exact, {"dim": 3}),
                              ("model-glove", exact, {"model": "glove-50d",
                                                      "encoder_name": "glove-50d"}),
                              ("model-pearl", exact, {"model": "pearl-minilm",
                                                      "encoder_name": "pearl-minilm"})):
        d = shutil.copytree(base, root / f"idx-{tag}")
        edit_json(d / "config.json", **change)
        resign(d)
        # (a huge value may hang, so in a subprocess)
        cases.append(query(d, ("config.json", d.name), isolated=True))

    other = packaged_model_dir("phrase-bert-minilm")
    for tag, name in (("weights", "model.safetensors"), ("config", "config.json")):
        d = model_copy(root / f"model-other-{tag}")
        shutil.copy(other / name, d / name)
        resign(d)
        cases.append(encode(d, ("config.json", "model.safetensors", d.name)))
    d = model_copy(root / "model-backbone-sha")
    edit_json(d / "config.json", backbone_sha256="0" * 64)
    resign(d)
    cases.append(encode(d, ("config.json", d.name)))

    # plain folders: transformers-like config with unrelated tensors, parts only
    import numpy as np
    from safetensors.numpy import save_file

    bert = {"model_type": "bert", "architectures": ["BertModel"], "hidden_size": 384,
            "num_hidden_layers": 1, "num_attention_heads": 12, "intermediate_size": 1536,
            "vocab_size": 30522}
    for tag, parts in (("hf-foo", ("config", "weights")), ("hf-config-only", ("config",)),
                       ("hf-weights-only", ("weights",))):
        d = root / tag
        d.mkdir()
        if "config" in parts:
            write(d / "config.json", json.dumps(bert))
        if "weights" in parts:
            save_file({"foo": np.zeros(3, dtype=np.float32)}, str(d / "model.safetensors"))
        cases.append(encode(d, tag))
    # one kind of artefact given for another
    cases += [encode(exact, ("exact", "entity-index", "model")),
              encode(tset, ("tset", "topics", "model")),
              query(model_copy(root / "model-as-index"), ("model-as-index", "model")),
              query(tset, ("tset", "topics"))]
    return cases


#: The output name each file-writing command takes (the others write folders), so that a case
#: reaches the input it probes.
SUFFIX = {"phrases": ".json", "keyphrases": ".jsonl"}


# ------------------------------------------------------------------ deeply nested JSON
def deep_json_cases(root: Path) -> list[Case]:
    probe = "deeply nested JSON (corpus, vocabulary, manifest, config)"
    first = CORPUS.read_text(encoding="utf-8").splitlines()[0]
    deep = write(root / "deep.jsonl", f"{first}\n{DEEP}\n")
    closed = write(root / "closed.jsonl",
                   f'{first}\n{{"text": "a b", "x": {"[" * 100_000}{"]" * 100_000}}}\n')
    (root / "deep.jsonl.gz").write_bytes(gzip.compress(f"{first}\n{DEEP}\n".encode()))
    cases = [Case(probe, cli(cmd, deep, "--out", root / f"deep-{cmd}{SUFFIX.get(cmd, '')}",
                             *extra),
                  "deep.jsonl:2", out=root / f"deep-{cmd}{SUFFIX.get(cmd, '')}")
             for cmd, extra in (("phrases", ("-q",)), ("topics", TOPICS),
                                ("keyphrases", ("-m", "string", "-q")),
                                ("mentions", ("-m", "string", "-q")))]
    cases += [Case(probe, cli("phrases", closed, "--out", root / "closed.json", "-q"),
                   "closed.jsonl:2", out=root / "closed.json"),
              Case(probe, cli("phrases", root / "deep.jsonl.gz", "--out", root / "gz.json", "-q"),
                   "deep.jsonl.gz:2", out=root / "gz.json")]
    write(root / "vocab.json", DEEP)
    (root / "vocab.json.gz").write_bytes(gzip.compress(DEEP.encode()))
    write(root / "closed-vocab.json", "[" * 100_000 + "]" * 100_000)
    cases += [Case(probe, cli("neighbors", "chicago", "--vocab", root / name, "-m", "string",
                              "-q"), name)
              for name in ("vocab.json", "vocab.json.gz", "closed-vocab.json")]
    corpus = small_corpus(root / "in.jsonl")
    (root / "cache.json.gz").write_bytes(gzip.compress(DEEP.encode()))
    cases.append(Case(probe, cli("topics", corpus, "--phrase-cache", root / "cache.json.gz",
                                 "--out", root / "t", *TOPICS),
                      ("cache.json.gz", "--phrase-cache"), out=root / "t"))

    names = write(root / "names.txt", NAMES)
    index0 = build_index(names, root / "index0")
    one = write(root / "one.txt", "paris\n")
    for kind in ("index", "model"):
        for name in ("manifest.json", "config.json", *(("names.jsonl",) if kind == "index"
                                                        else ())):
            d = root / f"{kind}-deep-{name.split('.')[0]}"
            if kind == "index":
                shutil.copytree(index0, d)
            else:
                model_copy(d)
            write(d / name, DEEP)
            if name != "manifest.json":
                resign(d)
            args = (cli("index", "query", d, "chicago", "-q") if kind == "index" else
                    cli("encode", one, "--out", root / f"{d.name}.npy", "-m", d, "-q"))
            cases.append(Case(probe, args, name))
    d = model_copy(root / "quantize-config")
    write(d / "config.json", DEEP)
    resign(d)
    cases.append(Case(probe, cli("quantize", d, "--out", root / "q", "-q"), "config.json",
                      out=root / "q"))
    return cases


# ------------------------------------------------------------------ numeric options
def option_cases(root: Path, facet_data: Path) -> list[Case]:
    probe = "numeric options out of range"
    corpus = small_corpus(root / "in.jsonl")
    lines = write(root / "lines.txt", "paris\n")
    table = write(root / "t.csv", "id,title\n1,New York\n2,Chicago\n")
    names = write(root / "names.txt", NAMES)
    idx = build_index(names, root / "idx")
    missing = root / "no-data"
    base = {
        "keyphrases": cli("keyphrases", corpus, "--out", root / "k.jsonl", "-m", "string"),
        "phrases": cli("phrases", corpus, "--out", root / "p.json", "--min-df", "1"),
        "topics": cli("topics", corpus, "--out", root / "t", "-m", "string", "--min-df", "1"),
        "mentions": cli("mentions", corpus, "--out", root / "m", "-m", "string"),
        "encode": cli("encode", lines, "--out", root / "e.npy", "-m", "string"),
        "join": cli("join", table, table, "--left-on", "title", "--right-on", "title", "--out",
                    root / "j.csv", "-m", "string"),
        "index build": cli("index", "build", names, "--out", root / "i", "-m", "string"),
        "index query": cli("index", "query", idx, "chicago"),
        "neighbors": cli("neighbors", "chicago", "--vocab", names, "-m", "string"),
        "eval": cli("eval", "-m", "string", "--quick", "--tasks", "bird"),
        "train facets": cli("train", "facets", "--data", facet_data, "--out", root / "tf",
                            "--max-steps", "2"),
        "train uctopic": cli("train", "uctopic", "--data", missing, "--out", root / "tu"),
        "train pearl": cli("train", "pearl", "--data", missing, "--out", root / "tp"),
        "train phrase-bert": cli("train", "phrase-bert", "--data", missing, "--out", root / "tb"),
        "train facets-data": cli("train", "facets-data", "--corpus", corpus, "--out",
                                 root / "fd"),
        "train uctopic-data": cli("train", "uctopic-data", "--corpus", corpus, "--out",
                                  root / "ud"),
        "train phrase-bert-data": cli("train", "phrase-bert-data", "--corpus", corpus, "--out",
                                      root / "pd"),
        "train subtst": cli("train", "subtst", "--task", "mrpc", "--out", root / "ts",
                            "--data-dir", missing),
    }
    table_ = [
        ("--threads", ("100000", "0", "-1"), ("keyphrases",)),
        ("--threads", ("0", "100000"), ("eval", "train facets")),
        ("--threads", ("-1",), ("train uctopic", "train pearl", "train phrase-bert")),
        ("--workers", ("-1", "100000"), ("phrases", "topics", "keyphrases", "mentions")),
        ("--seed", ("-1",), ("topics", "train facets", "train facets-data", "train uctopic-data",
                             "train phrase-bert-data", "train subtst", "train pearl")),
        ("--seed", (str(2**64),), ("topics",)),
        ("--grounding", ("nan", "inf", "-1"), ("topics",)),
        ("--worker-cpus", ("0", "nan"), ("encode", "phrases")),
        ("--worker-cpus", ("-1",), ("topics", "join")),
        ("--worker-cpus", ("inf",), ("keyphrases", "index build", "mentions")),
        ("--threshold", ("nan", "2"), ("join",)),
        ("-k", ("0",), ("join", "index query", "neighbors")),
        ("--diversity", ("nan", "-0.5"), ("keyphrases",)),
        ("--top-n", ("-1",), ("keyphrases",)),
        ("--batch-size", ("0",), ("encode", "train facets")),
        ("--lr", ("nan",), ("train facets",)),
        ("--dropout", ("1.5",), ("train facets",)),
        ("--minutes", ("nan",), ("train facets",)),
        ("--max-steps", ("-1",), ("train facets",)),
        ("--sentences", ("-1",), ("topics",)),
    ]
    return [Case(probe, [*base[cmd], opt, value, "-q"], opt)
            for opt, values, commands in table_ for cmd in commands for value in values]


# ------------------------------------------------------------------ the contract
def _unit_rows(path: Path) -> bool:
    rows = np.load(path)
    return bool(np.all(np.abs(np.linalg.norm(rows.astype(np.float64), axis=1) - 1) < 1e-3))


def _no_zero_scores(path: Path) -> bool:
    with open(path, encoding="utf-8", newline="") as fh:
        return all(row["score"] == "" or float(row["score"]) != 0.0 for row in csv.DictReader(fh))


def contract_cases(root: Path) -> list[Case]:
    probe = "contract (unknown words, document ids, suffix case, identical documents)"
    cases = []
    for i, text in enumerate(("zzqxv qqzzy\nparis\n", "!!! ???\nparis\n", "\U0001f600\nparis\n")):
        src, out = write(root / f"unknown{i}.txt", text), root / f"unknown{i}.npy"
        cases.append(Case(probe, cli("encode", src, "--out", out, "-m", "glove-50d", "-q"),
                          out=out, check=lambda o=out: _unit_rows(o)))
    left = write(root / "left.csv", "id,title\n1,zzqxv qqzzy\n2,new york\n3,chicago\n")
    right = write(root / "right.csv", "id,title\n1,qqzzy\n2,paris\n3,xkcdq vbnmz\n")
    for i, extra in enumerate(((), ("--how", "left"), ("--no-threshold",), ("-k", "3"),
                               ("--how", "left", "--no-threshold"))):
        out = root / f"join{i}.csv"
        cases.append(Case(probe, cli("join", left, right, "--left-on", "title", "--right-on",
                                     "title", "--out", out, "-m", "glove-50d", "-q", *extra),
                          out=out, check=lambda o=out: _no_zero_scores(o)))
    names = write(root / "glove-names.txt", "zzqxv\nnew york\nchicago\n")
    idx = root / "glove-idx"
    cases.append(Case(probe, cli("index", "build", names, "--out", idx, "-m", "glove-50d",
                                 "-q"), out=idx, check=lambda: _unit_rows(idx / "vectors.npy")))

    # document ids that are not ids
    good = '{"id": "b", "text": "Chicago is a large city in the United States."}\n'
    for i, first in enumerate(('{"id": null, "text": "New York is big."}',
                               '{"id": {}, "text": "New York is big."}',
                               '{"id": ["a"], "text": "New York is big."}',
                               '{"id": "", "text": "New York is big."}')):
        path = write(root / f"ids{i}.jsonl", f"{first}\n{good}")
        for cmd, extra in (("phrases", ("--min-df", "1")), ("keyphrases", ("-m", "string"))):
            out = root / f"ids{i}-{cmd}{SUFFIX.get(cmd, '')}"
            cases.append(Case(probe, cli(cmd, path, "--out", out, *extra, "-q"),
                              f"ids{i}.jsonl:1", out=out))
    for i, (a, b) in enumerate((('"a"', '"a"'), ("1", '"1"'))):
        path = write(root / f"dup{i}.jsonl", f'{{"id": {a}, "text": "New York is big."}}\n'
                                             f'{{"id": {b}, "text": "Chicago is big."}}\n')
        for cmd, extra in (("phrases", ("--min-df", "1")), ("keyphrases", ("-m", "string")),
                           ("topics", TOPICS[:-1]), ("mentions", ("-m", "string"))):
            out = root / f"dup{i}-{cmd}{SUFFIX.get(cmd, '')}"
            cases.append(Case(probe, cli(cmd, path, "--out", out, *extra, "-q"),
                              f"dup{i}.jsonl:2", out=out))

    # an upper-case suffix is still JSONL
    lower = small_corpus(root / "lower.jsonl")
    upper = Path(shutil.copy(lower, root / "UPPER.JSONL"))
    (root / "UPPER.JSONL.GZ").write_bytes(gzip.compress(lower.read_bytes()))
    ref = root / "lower.json"
    assert runner.invoke(app, cli("phrases", lower, "--out", ref, "--min-df", "1",
                                  "-q")).exit_code == 0

    def same_phrases(out: Path) -> bool:
        def load(p: Path) -> tuple:
            v = json.loads(p.read_text(encoding="utf-8"))
            return v["phrases"], v["doc_ids"]
        return load(out) == load(ref)

    def jsonl_ids(out: Path) -> bool:
        ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
        return ids == [json.loads(line)["id"] for line in lower.read_text("utf-8").splitlines()]

    for src in (upper, root / "UPPER.JSONL.GZ"):
        out = root / f"{src.name}.json"
        cases.append(Case(probe, cli("phrases", src, "--out", out, "--min-df", "1", "-q"),
                          out=out, check=lambda o=out: same_phrases(o)))
    out = root / "upper-k.jsonl"
    cases.append(Case(probe, cli("keyphrases", upper, "--out", out, "-m", "string", "-q"),
                      out=out, check=lambda o=out: jsonl_ids(o)))

    # identical documents: a clear refusal, or topics that all hold documents
    same = write(root / "same.jsonl", "".join(
        json.dumps({"id": str(i), "text": "The quick brown fox jumps over the lazy dog."}) + "\n"
        for i in range(20)))

    def no_empty_topic(out: Path) -> bool:
        topics = json.loads((out / "topics.json").read_text(encoding="utf-8"))["topics"]
        return bool(topics) and all(t["n_docs"] > 0 for t in topics)

    for i, extra in enumerate(((), ("-k", "2"), ("--method", "clusters"))):
        out = root / f"same{i}"
        cases.append(Case(probe, cli("topics", same, "--out", out, "-m", "string", *extra, "-q"),
                          ("same.jsonl", "docs", "distinct", "identical"), out=out,
                          check=lambda o=out: no_empty_topic(o)))
    out = root / "same-k.jsonl"
    cases.append(Case(probe, cli("keyphrases", same, "--out", out, "-m", "string", "-q"),
                      out=out, check=lambda o=out: len(o.read_text("utf-8").splitlines()) == 20))
    return cases


# ------------------------------------------------------------------ CSV formula cells
FORMULAS = ('=HYPERLINK("http://x")', "+1", "-2", "@SUM(A1)", "=1+1")
DANGER = ("=", "+", "-", "@", "\t", "\r")


def _csv_safe(path: Path, numeric: tuple[str, ...]) -> bool:
    """No text cell starts with a formula character, and each formula value appears quoted."""
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    cells = [v for row in rows for k, v in row.items() if k not in numeric and v]
    texts = set(cells)
    return bool(rows) and not any(c.startswith(DANGER) for c in cells) \
        and all("'" + f in texts for f in FORMULAS if any(f in c for c in cells))


def csv_cases(root: Path) -> list[Case]:
    probe = "CSV formula cells (join, index query)"
    body = "".join(f'{i},"{f.replace(chr(34), chr(34) * 2)}","@note{i}"\n'
                   for i, f in enumerate(FORMULAS))
    left = write(root / "left.csv", "id,title,note\n" + body)
    right = write(root / "right.csv", "id,title,note\n" + body + '9,"\tcmd","\r=2"\n')
    join_numeric = ("right_row", "left_row", "rank", "score")
    cases = []
    for i, extra in enumerate(((), ("--csv-safe",), ("--how", "left"), ("-k", "2"),
                               ("--no-threshold", "--one-to-one"))):
        out = root / f"j{i}.csv"
        cases.append(Case(probe, cli("join", left, right, "--left-on", "title", "--right-on",
                                     "title", "--out", out, "-m", "string", "-q", *extra),
                          out=out, check=lambda o=out: _csv_safe(o, join_numeric)))
    raw = root / "raw.csv"

    def raw_kept() -> bool:
        with open(raw, encoding="utf-8", newline="") as fh:
            return FORMULAS[0] in {row["right_value"] for row in csv.DictReader(fh)}

    cases.append(Case(probe, cli("join", left, right, "--left-on", "title", "--right-on",
                                 "title", "--out", raw, "-m", "string", "--no-csv-safe", "-q"),
                      out=raw, check=raw_kept))
    names = write(root / "names.csv", "id,name\n" + "".join(
        f'"={i}","{f.replace(chr(34), chr(34) * 2)}"\n' for i, f in enumerate(FORMULAS)))
    idx = build_index(names, root / "idx", "--column", "name", "--id-column", "id")
    queries = write(root / "queries.txt", "\n".join(FORMULAS) + "\n")
    query_numeric = ("query_row", "rank", "score")
    for i, args in enumerate((cli(idx, "=1+1", "-k", "3"), cli(idx, "--queries", queries),
                              cli(idx, "+1", "@SUM(A1)", "-k", "5"))):
        out = root / f"q{i}.csv"
        cases.append(Case(probe, cli("index", "query", *args, "-o", out, "-q"), out=out,
                          check=lambda o=out: _csv_safe(o, query_numeric)))
    return cases


# ------------------------------------------------------------------ messages
def message_cases(root: Path) -> list[Case]:
    probe = "corpus and option messages (FIFO, device, folder, missing, model@precision)"
    corpus, names = corpus_and_names(root)
    table = write(root / "t.csv", "id,title\n1,New York\n")
    lines = write(root / "lines.txt", "paris\n")
    idx = build_index(names, root / "idx")

    def readers(src: Path, tag: str) -> list[tuple[list[str], Path | None]]:
        o = root / f"{tag}-out"
        return [(cli("phrases", src, "--out", o.with_suffix(".json"), "-q"),
                 o.with_suffix(".json")),
                (cli("topics", src, "--out", o, *TOPICS), o),
                (cli("keyphrases", src, "--out", o.with_suffix(".jsonl"), "-m", "string", "-q"),
                 o.with_suffix(".jsonl")),
                (cli("mentions", src, "--out", o.with_suffix(".m"), "-m", "string", "-q"),
                 o.with_suffix(".m")),
                (cli("encode", src, "--out", o.with_suffix(".npy"), "-m", "string", "-q"),
                 o.with_suffix(".npy")),
                (cli("join", src, table, "--left-on", "title", "--right-on", "title", "--out",
                     o.with_suffix(".csv"), "-m", "string", "-q"), o.with_suffix(".csv")),
                (cli("index", "build", src, "--out", o.with_suffix(".idx"), "-m", "string",
                     "-q"), o.with_suffix(".idx")),
                (cli("neighbors", "chicago", "--vocab", src, "-m", "string", "-q"), None),
                (cli("index", "query", idx, "--queries", src, "-q"), None)]

    pipe = root / "pipe.jsonl"
    os.mkfifo(pipe)
    docs = root / "docs"
    docs.mkdir()
    write(docs / "readme.txt", "not a corpus\n")
    cases = [Case(probe, args, "FIFO", out=out, isolated=True, seconds=60)
             for args, out in readers(pipe, "pipe")]
    # a device node of our own: a command that writes a cache beside its input must not
    # write into /dev; the literal /dev/null only where nothing is written beside it
    device = null_device(root / "nulldev.jsonl")
    cases += [Case(probe, args, "device", out=out)
              for args, out in (readers(device, "null") if device else [])]
    cases += [Case(probe, args, "device", out=out)
              for args, out in readers(Path("/dev/null"), "devnull")[:3]]
    cases += [Case(probe, args, "device", out=out, isolated=True, seconds=60)
              for args, out in readers(Path("/dev/zero"), "zero")[:2]]
    cases += [Case(probe, args, "folder", out=out) for args, out in readers(docs, "docs")]
    cases += [Case(probe, args, "absent.jsonl", out=out)
              for args, out in readers(root / "absent.jsonl", "absent")]
    cases.append(Case(probe, cli("index", "query", root / "absent-idx", "chicago", "-q"),
                      "absent-idx"))

    for args in (cli("encode", lines, "--out", root / "bf.npy"),
                 cli("join", table, table, "--left-on", "title", "--right-on", "title",
                     "--out", root / "bf.csv"),
                 cli("index", "build", names, "--out", root / "bf-idx"),
                 cli("topics", corpus, "--out", root / "bf-t", "-k", "2"),
                 cli("keyphrases", corpus, "--out", root / "bf.jsonl"),
                 cli("mentions", corpus, "--out", root / "bf-m"),
                 cli("neighbors", "chicago", "--vocab", names)):
        cases.append(Case(probe, [*args, "-m", "string@bf16", "-q"], ("string@bf16", "bf16")))
    cases += [
        Case(probe, cli("encode", lines, "--out", root / "p.npy", "-m", "string", "--precision",
                        "bf16", "-q"), ("--precision", "bf16")),
        Case(probe, cli("encode", lines, "--out", root / "p.npy", "-m", "glove-50d@int8", "-q"),
             ("glove-50d@int8", "int8")),
        Case(probe, cli("topics", corpus, "--out", root / "nm", "-m", "no-such-model", "-q"),
             "no-such-model"),
        Case(probe, cli("keyphrases", corpus, "--out", root / "nm.jsonl", "-m", "no-such-model",
                        "-q"), "no-such-model"),
        Case(probe, cli("topics", corpus, "--out", root / "seed", "--seed", "-1", *TOPICS),
             "--seed"),
    ]
    return cases


# ------------------------------------------------------------------ large inputs
def large_cases(root: Path, megabytes: int) -> list[Case]:
    """One document (or name) of ``megabytes`` MB on a single line, in a subprocess: peak RSS
    at most 2 GB and a time budget of 60 s plus 40 s per MB."""
    probe = "large inputs (time and memory budget)"
    texts = [json.loads(line)["text"].replace("\n", " ")
             for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    blob = " ".join(texts) + " "
    size = megabytes * 1_000_000
    text = (blob * (size // len(blob) + 1))[:size]
    big = write(root / "big.jsonl", json.dumps({"id": "big", "text": text}) + "\n")
    line = write(root / "big.txt", text + "\n")
    seconds = 60 + 40 * megabytes

    def phrases_ok() -> bool:
        return json.loads((root / "big.json").read_text(encoding="utf-8"))["doc_ids"] == ["big"]

    return [
        Case(probe, cli("phrases", big, "--out", root / "big.json", "-q"), "big.jsonl",
             check=phrases_ok, out=root / "big.json", isolated=True, seconds=seconds),
        Case(probe, cli("encode", line, "--out", root / "big.npy", "-m", "string", "-q"),
             "big.txt", check=lambda: np.load(root / "big.npy").shape[0] == 1,
             out=root / "big.npy", isolated=True, seconds=seconds),
        Case(probe, cli("index", "build", line, "--out", root / "big-idx", "-m", "string",
                        "-q"), "big.txt", check=lambda: (root / "big-idx").is_dir(),
             out=root / "big-idx", isolated=True, seconds=seconds),
    ]

