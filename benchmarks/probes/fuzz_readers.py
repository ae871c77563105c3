"""Fuzz the readers of user files with hypothesis: corpora (JSONL, text, gzip), CSV tables,
names files, line files, vocabularies, model configs and saved indexes.

Each input is a valid seed file mutated (bytes flipped, inserted, deleted, truncated,
duplicated) or random bytes. A reader may accept the input or raise the clear error its
command turns into exit 2 (a ``ValueError``/``OSError`` naming the file); anything else, or an
error whose message does not name the file, counts as a crash.

    python benchmarks/probes/fuzz_readers.py --examples 2000
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phrasekit.io import read_corpus
from phrasekit.lines import read_lines
from phrasekit.models.folders import PEARL_FORMAT, read_model_config
from phrasekit.phrases.vocabulary import PhraseVocabulary
from phrasekit.similarity.join import read_column
from phrasekit.similarity.retrieval import EntityIndex, read_names

JSONL = b'{"id": "a", "text": "Graph neural networks for protein folding."}\n' \
        b'{"id": "b", "text": "Dark matter halos \\u2028 and galaxies."}\n'
CSV = b'id,title,city\n1,"New York, NY",NYC\n2,Los Angeles,LA\n3,"Chicago ""IL""",CHI\n'
VOCAB = (PhraseVocabulary(
    phrases=["protein folding", "dark matter"], counts=[3, 2], doc_freq=[2, 1],
    surface_forms=[{"protein folding": 3}, {"Dark matter": 2}], sources=[{"chunk": 3},
                                                                       {"chunk": 2}],
    doc_ids=["a", "b"], doc_phrases=[{"protein folding": 2}, {"dark matter": 2}],
    params={}).to_json() or "").encode()


def _seeds(root: Path) -> dict[str, tuple[bytes, str, Callable[[Path], Any]]]:
    """Reader name -> (seed bytes, file name, reader)."""
    index = root / "seed-index"
    EntityIndex.build(["new york", "chicago", "paris"], "string").save(index)
    return {
        "corpus .jsonl": (JSONL, "c.jsonl", read_corpus),
        "corpus .jsonl.gz": (gzip.compress(JSONL), "c.jsonl.gz", read_corpus),
        "corpus .txt": (b"first document\r\nsecond\x0c one\n", "c.txt", read_corpus),
        "join CSV column": (CSV, "t.csv", lambda p: read_column(p, "title")),
        "names CSV": (CSV, "n.csv", lambda p: read_names(p, column="title", id_column="id")),
        "encode lines": ("a\u2028b\nc\r\nd\n".encode(), "l.txt", read_lines),
        "vocabulary JSON": (VOCAB, "v.json", PhraseVocabulary.from_json),
        "model config.json": ((Path(__file__).parents[2] / "src/phrasekit/data/models/"
                               "pearl-minilm/config.json").read_bytes(), "config.json",
                              lambda p: read_model_config(p.parent, PEARL_FORMAT, "PEARL",
                                                          need_weights=False)),
        "index names.jsonl": ((index / "names.jsonl").read_bytes(), "names.jsonl",
                              lambda p: _load_index_with(index, p)),
    }


def _load_index_with(seed: Path, names: Path) -> Any:
    """Load a copy of the seed index whose names.jsonl is the fuzzed file."""
    folder = names.parent / "idx"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(seed, folder)
    shutil.copy(names, folder / "names.jsonl")
    return EntityIndex.load(folder)


def mutated(seed: bytes) -> st.SearchStrategy[bytes]:
    """The seed with a few random edits, or random bytes."""
    edit = st.tuples(st.sampled_from(["flip", "insert", "delete", "truncate", "dup"]),
                     st.floats(0, 1), st.binary(min_size=1, max_size=4))

    def apply(edits: list[tuple[str, float, bytes]]) -> bytes:
        data = bytearray(seed)
        for kind, where, junk in edits:
            i = int(where * max(len(data) - 1, 0))
            if kind == "flip" and data:
                data[i] ^= junk[0] or 1
            elif kind == "insert":
                data[i:i] = junk
            elif kind == "delete":
                del data[i:i + len(junk)]
            elif kind == "truncate":
                del data[i:]
            else:
                data[i:i] = data[i:i + 16]
        return bytes(data)

    return st.one_of(st.lists(edit, min_size=1, max_size=4).map(apply),
                     st.binary(max_size=300))


def fuzz(name: str, seed: bytes, filename: str, reader: Callable[[Path], Any],
         examples: int, root: Path) -> Counter[str]:
    """Run ``reader`` on ``examples`` mutated inputs; count accepted / clear errors / crashes."""
    counts: Counter[str] = Counter()
    folder = root / name.replace(" ", "_")
    folder.mkdir()
    path = folder / filename

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=mutated(seed))
    def run(data: bytes) -> None:
        path.write_bytes(data)
        counts["inputs"] += 1
        try:
            reader(path)
            counts["accepted"] += 1
        except (ValueError, OSError) as exc:
            if str(path) in str(exc) or str(path.parent) in str(exc):
                counts["clear error (exit 2)"] += 1
            else:
                counts["crash"] += 1
                print(f"[{name}] message without the file: {exc!r}", file=sys.stderr)
        except Exception:
            counts["crash"] += 1
            print(f"[{name}] crash:\n{traceback.format_exc(limit=3)}", file=sys.stderr)

    run()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="inputs per reader")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = []
        for name, (seed, filename, reader) in _seeds(root).items():
            rows.append((name, fuzz(name, seed, filename, reader, args.examples, root)))
    cols = ["inputs", "accepted", "clear error (exit 2)", "crash"]
    print("| reader | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for name, c in rows:
        print(f"| {name} | " + " | ".join(str(c[k]) for k in cols) + " |")
    total = sum((c for _, c in rows), Counter())
    print("| **all** | " + " | ".join(str(total[k]) for k in cols) + " |")


if __name__ == "__main__":
    main()
