"""The phrase benchmark: BiRD, Turney (5/10), PPDB, PPDB-filtered, CoNLL-2003 and BC5CDR entity
clustering, AutoFJ, a YAGO retrieval proxy and STS-B, on any phrasekit encoder.

Typical use::

    from phrasekit.eval import run_benchmark, format_table
    result = run_benchmark(["minilm"], tasks=["bird", "turney"], quick=True)
    print(format_table(result))
"""

from phrasekit.eval.base import Task, embed_unique, encode_unique
from phrasekit.eval.runner import (
    AVG7,
    TASKS,
    BenchmarkResult,
    ModelResult,
    TaskResult,
    avg7,
    format_table,
    load_report,
    parse_tasks,
    run_benchmark,
    write_report,
)

__all__ = [
    "AVG7",
    "TASKS",
    "BenchmarkResult",
    "ModelResult",
    "Task",
    "TaskResult",
    "avg7",
    "embed_unique",
    "encode_unique",
    "format_table",
    "load_report",
    "parse_tasks",
    "run_benchmark",
    "write_report",
]
