"""The phrase benchmark: BiRD, Turney (5/10), PPDB, PPDB-filtered, CoNLL-2003 and BC5CDR entity
clustering, AutoFJ, a YAGO retrieval proxy and STS-B, on any phrasekit encoder.

Typical use::

    from phrasekit.eval import run_benchmark, format_table
    result = run_benchmark(["minilm"], tasks=["bird", "turney"], quick=True)
    print(format_table(result))
"""

import lazy_loader

# Names are imported on first use, so importing one module of the package does not
# load the others' dependencies.
__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "base": ["Task", "embed_unique", "encode_unique"],
        "runner": [
            "AVG7",
            "BenchmarkResult",
            "ModelResult",
            "TASKS",
            "TaskResult",
            "avg7",
            "format_table",
            "load_report",
            "parse_tasks",
            "run_benchmark",
            "write_report",
        ],
    },
)
