"""Training losses as small modules (sentence-transformers style)."""

from __future__ import annotations

import torch
from torch import nn


class InfoNCELoss(nn.Module):
    """InfoNCE over cosine similarities: each anchor against its positive, the other positives
    of the batch (in-batch negatives) and any extra hard negatives.

    ``forward(anchors (B, d), positives (B, d), negatives (M, d) | None)`` with unit rows;
    target of anchor i is column i of ``[positives; negatives]``.
    """

    def __init__(self, temperature: float = 0.07) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor,
                negatives: torch.Tensor | None = None, memory: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Mean cross-entropy of picking the right positive.

        ``memory`` (K, d): extra negatives from earlier batches (no gradient flows into them);
        ``memory_mask`` (B, K): True where a memory row must not count for an anchor (the same
        text as the anchor or its positive, i.e. not a negative at all).
        """
        candidates = positives if negatives is None or len(negatives) == 0 else torch.cat(
            [positives, negatives], dim=0)
        logits = anchors @ candidates.T / self.temperature
        if memory is not None and len(memory):
            extra = anchors @ memory.detach().T / self.temperature
            if memory_mask is not None:
                extra = extra.masked_fill(memory_mask, float("-inf"))
            logits = torch.cat([logits, extra], dim=1)
        target = torch.arange(len(anchors), device=anchors.device)
        return nn.functional.cross_entropy(logits, target)


class CrossBatchMemory:
    """A FIFO of recent batches' embeddings, reused as extra InfoNCE negatives.

    Cross-batch memory (Wang et al., 2020; MoCo's queue without a momentum encoder): on a CPU
    the batch stays small (64 anchors against PEARL's 512), and the embeddings of the last few
    batches' candidates, computed by a model that has barely moved since, make up the missing
    negatives at no encoding cost. Rows are stored detached, with their texts so that an
    anchor never meets its own text as a negative.
    """

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"memory size must be >= 0, got {size}")
        self.size = int(size)
        self.rows: torch.Tensor | None = None
        self.texts: list[str] = []

    def __len__(self) -> int:
        return len(self.texts)

    def push(self, emb: torch.Tensor, texts: list[str]) -> None:
        """Append a batch (newest last), dropping the oldest rows beyond ``size``."""
        if len(emb) != len(texts):
            raise ValueError(f"{len(emb)} rows but {len(texts)} texts")
        if self.size == 0 or not texts:
            return
        emb = emb.detach()
        rows = emb if self.rows is None else torch.cat([self.rows, emb], dim=0)
        texts = self.texts + list(texts)
        self.rows, self.texts = rows[-self.size:].clone(), texts[-self.size:]

    def mask(self, *texts_per_anchor: list[str]) -> torch.Tensor:
        """(B, K) True where memory row k holds one of anchor b's own texts."""
        n = len(texts_per_anchor[0])
        out = torch.zeros((n, len(self.texts)), dtype=torch.bool)
        where: dict[str, list[int]] = {}
        for k, t in enumerate(self.texts):
            where.setdefault(t, []).append(k)
        for texts in texts_per_anchor:
            for b, t in enumerate(texts):
                for k in where.get(t, ()):
                    out[b, k] = True
        return out

    def state(self) -> tuple[torch.Tensor | None, list[str]]:
        """(rows, texts) for a checkpoint."""
        return self.rows, list(self.texts)

    def restore(self, rows: torch.Tensor | None, texts: list[str]) -> None:
        """Inverse of ``state``."""
        if (0 if rows is None else len(rows)) != len(texts):
            raise ValueError("memory rows and texts differ in length")
        self.rows, self.texts = rows, list(texts)


class SimilarityPreservationLoss(nn.Module):
    """Keeps the batch's similarity structure close to a frozen reference encoder's.

    ``forward(emb (B, d), reference (B, d))`` with unit rows: the squared difference of the two
    cosine matrices off the diagonal, summed per row and averaged over rows. Contrastive
    training with near-spelling negatives pulls apart phrases that the backbone grouped by
    meaning (entity clusters); this term charges for every such move, in function space.
    """

    def forward(self, emb: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
        """Mean over rows of sum_j (cos(e_i, e_j) - cos(r_i, r_j))^2, j != i."""
        if emb.shape != reference.shape:
            raise ValueError(f"shapes differ: {tuple(emb.shape)} vs {tuple(reference.shape)}")
        diff = emb @ emb.T - reference @ reference.T
        off = ~torch.eye(len(emb), dtype=torch.bool, device=emb.device)
        return (diff.pow(2) * off).sum(dim=1).mean()


class SimilarityDistillationLoss(nn.Module):
    """Soft in-batch neighbours from a teacher: for each row, the KL divergence between the
    teacher's and the student's softmax over the other rows' cosines (temperature ``tau``).

    ``forward(emb (B, d), teacher (B, d'))``: the dimensions may differ (a 384-d student, a
    768-d teacher); ``teacher @ teacher.T`` is the teacher's cosine matrix (unit rows, or rows
    scaled so that their dot products average several teachers' cosines). Unlike matching raw
    cosines, it only asks the student to rank each row's neighbours as the teacher does.
    """

    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)

    def forward(self, emb: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
        """Mean over rows of KL(softmax(teacher cosines / tau) || softmax(student ones / tau))."""
        if len(emb) != len(teacher):
            raise ValueError(f"{len(emb)} student rows but {len(teacher)} teacher rows")
        eye = torch.eye(len(emb), dtype=torch.bool, device=emb.device)
        student = (emb @ emb.T / self.temperature).masked_fill(eye, float("-inf"))
        target = (teacher @ teacher.T / self.temperature).masked_fill(eye, float("-inf"))
        p = nn.functional.softmax(target.to(student.dtype), dim=1)
        log_q = nn.functional.log_softmax(student, dim=1)
        log_p = torch.log(p.clamp_min(1e-12))
        return (p * (log_p - log_q)).masked_fill(eye, 0.0).sum(dim=1).mean()


class LengthCovarianceLoss(nn.Module):
    """Charges for encoding phrase *length* beyond what a reference encoder encodes.

    ``forward(emb (N, d), lengths (N,), reference (N, d) | None)``: the squared norm of the
    batch covariance between the embeddings and the z-scored character lengths, minus the same
    covariance of the reference embeddings when given. Measured on PEARL: fine-tuning with
    typo'd positives and near-spelling negatives triples this covariance (half of it through
    the char path), until the top principal direction of biomedical mentions tracks their
    length instead of their type and KMeans splits them by length.
    """

    def forward(self, emb: torch.Tensor, lengths: torch.Tensor,
                reference: torch.Tensor | None = None) -> torch.Tensor:
        """||cov(emb, z) - cov(reference, z)||^2, z = standardised lengths (0 if all equal)."""
        if lengths.shape != (len(emb),):
            raise ValueError(f"need one length per row: {tuple(lengths.shape)} for {len(emb)}")
        lengths = lengths.to(emb.dtype)
        spread = lengths.std()
        if len(emb) < 2 or spread == 0:
            return emb.sum() * 0.0
        z = (lengths - lengths.mean()) / spread
        cov = ((emb - emb.mean(dim=0)) * z[:, None]).mean(dim=0)
        if reference is not None:
            cov = cov - ((reference - reference.mean(dim=0)) * z[:, None]).mean(dim=0)
        return cov.pow(2).sum()


class TypeClassificationLoss(nn.Module):
    """Cross-entropy of the phrase-type head; items labelled ``-1`` are ignored."""

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy over labelled items (0 when none is labelled)."""
        if not torch.any(labels >= 0):
            return logits.sum() * 0.0
        return nn.functional.cross_entropy(logits, labels, ignore_index=-1)


class SoftLabelLoss(nn.Module):
    """Cross-entropy against target distributions (e.g. an ambiguous word's supersenses);
    rows whose target sums to 0 are unlabelled and ignored."""

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean over labelled rows of -sum_k q_k log softmax(z)_k (0 when none is labelled)."""
        if logits.shape != targets.shape:
            raise ValueError(f"shapes differ: {tuple(logits.shape)} vs {tuple(targets.shape)}")
        known = targets.sum(dim=-1) > 0
        if not torch.any(known):
            return logits.sum() * 0.0
        logp = nn.functional.log_softmax(logits[known], dim=-1)
        return -(targets[known].to(logp.dtype) * logp).sum(dim=-1).mean()


class TripletLoss(nn.Module):
    """Phrase-BERT's triplet loss (Eq. 1): ``max(0, margin - ||a - n|| + ||a - p||)``, batch mean.

    ``forward(anchors, positives, negatives)``, each ``(B, d)``; ``||.||`` is the Euclidean
    distance between the rows as given (the caller decides whether they are normalised).
    """

    def __init__(self, margin: float = 1.0) -> None:
        super().__init__()
        if margin <= 0:
            raise ValueError(f"margin must be > 0, got {margin}")
        self.margin = float(margin)

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor,
                negatives: torch.Tensor) -> torch.Tensor:
        """Mean hinge over the batch of (distance to positive - distance to negative + margin)."""
        if not anchors.shape == positives.shape == negatives.shape:
            raise ValueError(f"shapes differ: {tuple(anchors.shape)}, {tuple(positives.shape)}, "
                             f"{tuple(negatives.shape)}")
        d_pos = torch.linalg.vector_norm(anchors - positives, dim=-1)
        d_neg = torch.linalg.vector_norm(anchors - negatives, dim=-1)
        return torch.relu(self.margin - d_neg + d_pos).mean()
