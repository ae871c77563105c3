"""Why PEARL's entity clusters collapse at high averaging coefficients: a geometry probe.

For a training run's final checkpoint (the unaveraged fine-tuned weights) and a few averaging
coefficients alpha, on the BC5CDR dev mentions (never test):
- KMeans (k = 2) NMI against Chemical/Disease, and again with the first principal direction
  removed;
- 3-fold logistic-regression accuracy (is the type still linearly there?);
- the variance share of the first three principal directions, and the correlation of the first
  with the mention's character length and with its type;
- on a sample of training phrases, the squared norm of the covariance between the embeddings and
  the z-scored character length (what ``--length-weight`` charges for).

    python benchmarks/phrases/pearl_collapse.py --run runs/pearl3/run3 --data runs/pearl3/data

CPU: about 1 minute per alpha on one thread.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

import numpy as np
import torch


def _embed(model: torch.nn.Module, texts: list[str]) -> np.ndarray:
    with torch.no_grad():
        return torch.cat([model(texts[i : i + 256])[0] for i in range(0, len(texts), 256)]).numpy()


def length_covariance(emb: np.ndarray, texts: list[str]) -> float:
    """Squared norm of cov(embedding, z-scored character length)."""
    lengths = np.array([len(t) for t in texts], dtype=float)
    z = (lengths - lengths.mean()) / lengths.std()
    return float(np.sum(((emb - emb.mean(0)) * z[:, None]).mean(0) ** 2))


def probe(emb: np.ndarray, texts: list[str], labels: np.ndarray) -> dict[str, float]:
    """Cluster, linear and principal-direction statistics of one embedding matrix."""
    from sklearn.cluster import KMeans
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import normalized_mutual_info_score
    from sklearn.model_selection import cross_val_score

    def nmi(x: np.ndarray) -> float:
        pred = KMeans(2, n_init=3, random_state=0).fit_predict(x)
        return 100 * normalized_mutual_info_score(labels, pred)

    centred = emb - emb.mean(0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    share = s**2 / np.sum(s**2)
    pc1 = centred @ vt[0]
    lengths = np.array([len(t) for t in texts], dtype=float)
    linear = cross_val_score(LogisticRegression(max_iter=2000), emb, labels, cv=3).mean()
    return {"kmeans_nmi": nmi(emb), "kmeans_nmi_without_pc1": nmi(centred - np.outer(pc1, vt[0])),
            "linear_acc": 100 * float(linear), "pc1_share": float(share[0]),
            "pc2_share": float(share[1]), "pc3_share": float(share[2]),
            "pc1_corr_length": abs(float(np.corrcoef(pc1, lengths)[0, 1])),
            "pc1_corr_type": abs(float(np.corrcoef(pc1, labels)[0, 1]))}


def main() -> None:
    """Print one row per alpha (markdown) and write ``RUN/collapse.json``."""
    from safetensors import safe_open

    from phrasekit.eval.dev import dev_mentions
    from phrasekit.settings import shared_dir
    from phrasekit.training.core.averaging import interpolate_weights
    from phrasekit.training.pearl.config import PearlTrainingConfig, build_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a `train pearl` folder with its checkpoint")
    parser.add_argument("--data", required=True, help="its dataset (training phrases sample)")
    parser.add_argument("--alphas", default="0,0.3,0.6,1")
    parser.add_argument("--mentions", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    run = Path(args.run)
    settings = json.loads((run / "report.json").read_text())["settings"]
    keep = {k: settings[k] for k in ("use_char", "type_head_on", "char_pretrain_steps")
            if k in settings}
    cfg = PearlTrainingConfig(data_dir=args.data, out_dir=str(run), **keep)
    init = {k: v.clone() for k, v in build_model(cfg).state_dict().items()}
    with safe_open(str(run / "checkpoint.safetensors"), framework="pt") as fh:
        tuned = {k[len("model."):]: fh.get_tensor(k) for k in fh.keys() if k.startswith("model.")}  # noqa: SIM118

    mentions, types = dev_mentions(shared_dir(required=True) / "data" / "bc5cdr" / "dev.json",
                                   ("Chemical", "Disease"))
    label_of = dict(zip(mentions, types, strict=True))
    texts = sorted(set(mentions))[: args.mentions]
    labels = np.array([label_of[t] == "Chemical" for t in texts], dtype=int)
    with gzip.open(Path(args.data) / "phrases.jsonl.gz", "rt", encoding="utf-8") as fh:
        phrases = [json.loads(line)["text"] for line in fh]
    sample = random.Random(1).sample(phrases, min(1024, len(phrases)))

    rows = []
    print("| alpha | KMeans NMI | without PC1 | linear acc | PC1-3 share | PC1~length | "
          "PC1~type | length cov (train phrases) |")
    print("|---|---|---|---|---|---|---|---|")
    for alpha in (float(a) for a in args.alphas.split(",")):
        model = build_model(cfg)
        model.load_state_dict(tuned, strict=False)
        interpolate_weights(model, init, alpha)  # as `train pearl` averages (char, head: trained)
        model.eval()
        row = {"alpha": alpha, **probe(_embed(model, texts), texts, labels),
               "length_cov": length_covariance(_embed(model, sample), sample)}
        rows.append(row)
        print(f"| {alpha} | {row['kmeans_nmi']:.1f} | {row['kmeans_nmi_without_pc1']:.1f} | "
              f"{row['linear_acc']:.1f} | {row['pc1_share']:.3f} / {row['pc2_share']:.3f} / "
              f"{row['pc3_share']:.3f} | {row['pc1_corr_length']:.2f} | "
              f"{row['pc1_corr_type']:.2f} | {row['length_cov']:.4f} |", flush=True)
    (run / "collapse.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
