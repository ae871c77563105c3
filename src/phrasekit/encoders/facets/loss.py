"""The non-negative sparse coding (NNSC) loss of §2.2 (Eq. 1 and 2), batched with padding.

Notation (ours is the transpose of the paper's, so that batches are (B, ·, ·) tensors):

- ``F``: the K predicted facets (codebook embeddings) of an example, ``(K, d)``;
- ``W``: its N co-occurring words as unit word vectors, ``(N, d)`` (the paper's columns
  ``w_j``, "normalized word embedding whose 2-norm is 1");
- ``M``: coefficients ``(N, K)``, row j saying how much of each facet rebuilds word j.

Eq. 1 (our reading of the garbled formula)::

    M* = argmin_M ||M F - W||_F^2 + λ Σ_jk M_jk   subject to 0 <= M_jk <= 1     (λ = 0.4)
    Er(F, W) = ||M* F - W||^2                      (M* held constant: no gradient through it)

The L1 term is a plain sum because M >= 0. The paper's code writes the same problem as
``0.5 ||MF - W||^2 + 0.2 |M|_1``, the same minimiser. The cap M <= 1 keeps the network from
shrinking the facets and inflating M. We report Er as the **mean over the example's valid
words** of ``||(M* F)_j - w_j||^2``, not the sum, so examples with 3 and with 30 co-occurring
words weigh the same (the paper's code also averages over the set).

M* is found per example with no gradient, in a fixed number of steps (fully batched, padding
rows masked). The rows of M are independent problems; the gradient of the objective is
``2 (M G - W F^T) + λ`` with ``G = F F^T``:

- ``method="pgd"`` (default): accelerated projected gradient (FISTA) with step ``1 / L``,
  ``L = 2 λ_max(G)`` from a few power iterations (capped by ``2 trace(G)``); monotone in
  practice and converged in ~30 steps for K <= 10;
- ``method="rmsprop"``: the paper's choice (RMSprop, lr 0.05, α 0.99), each step followed by
  clipping M to [0, 1].

Eq. 2: ``L_t = Er(F(I_t), W(N_t)) - Er(F(I_t), W(N_rt))`` where N_rt is the word set of a
random other example; in a batch, the other example is the one ``shift`` places further on
(the batch rolled by a random shift in 1..B-1, as the authors' code does), so every example
gets a different example's words.
"""

from __future__ import annotations

import torch

from phrasekit.encoders.facets.config import METHODS

DEFAULT_LAMBDA = 0.4
DEFAULT_STEPS = 30


def _check(facets: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor | None) -> None:
    if facets.dim() != 3 or targets.dim() != 3:
        raise ValueError(f"facets must be (B, K, d) and targets (B, N, d), got "
                         f"{tuple(facets.shape)} and {tuple(targets.shape)}")
    if facets.shape[0] != targets.shape[0] or facets.shape[2] != targets.shape[2]:
        raise ValueError(f"facets {tuple(facets.shape)} and targets {tuple(targets.shape)} "
                         "disagree on batch size or dimension")
    if mask is not None and tuple(mask.shape) != tuple(targets.shape[:2]):
        raise ValueError(f"mask must be (B, N) = {tuple(targets.shape[:2])}, "
                         f"got {tuple(mask.shape)}")


def lipschitz(gram: torch.Tensor, iterations: int = 20) -> torch.Tensor:
    """Per-example Lipschitz constant ``2 λ_max(G)`` of the gradient, shape (B, 1, 1).

    Power iteration from the all-ones vector (G is positive semi-definite), times 1.05 for
    safety and capped by ``2 trace(G)`` (an upper bound), never below 1e-6.
    """
    b, k, _ = gram.shape
    v = torch.ones(b, k, 1, dtype=gram.dtype, device=gram.device)
    for _ in range(iterations):
        v = gram @ v
        v = torch.nn.functional.normalize(v, dim=1)
    lam_max = (v.transpose(1, 2) @ gram @ v).squeeze(-1).squeeze(-1)
    trace = gram.diagonal(dim1=1, dim2=2).sum(-1)
    return (2.0 * torch.minimum(1.05 * lam_max, trace)).clamp_min(1e-6).view(b, 1, 1)


@torch.no_grad()
def estimate_coefficients(
    facets: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor | None = None,
    lam: float = DEFAULT_LAMBDA,
    steps: int = DEFAULT_STEPS,
    method: str = "pgd",
    lr: float = 0.05,
) -> torch.Tensor:
    """M* of Eq. 1 for every example: ``(B, N, K)``, entries in [0, 1], 0 on padded rows.

    Args:
        facets: (B, K, d) facets (any norm; the caller normalises them if Eq. 5-7 want F_u).
        targets: (B, N, d) vectors to rebuild (unit word vectors in training).
        mask: (B, N) bool, True for real words (None: all real).
        lam: the L1 weight λ (0.4 in the paper).
        steps: optimisation steps (fixed, so the work is batched).
        method: ``"pgd"`` (accelerated projected gradient) or ``"rmsprop"`` (the paper's).
        lr: RMSprop's learning rate (``pgd`` needs none).
    """
    _check(facets, targets, mask)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if lam < 0 or steps < 1:
        raise ValueError(f"need lam >= 0 and steps >= 1, got {lam}, {steps}")
    f = facets.detach().float()
    w = targets.detach().float()
    gram = f @ f.transpose(1, 2)  # (B, K, K)
    wf = w @ f.transpose(1, 2)  # (B, N, K)
    b, n, k = wf.shape
    m = torch.zeros(b, n, k, dtype=f.dtype, device=f.device)

    def grad(x: torch.Tensor) -> torch.Tensor:
        return 2.0 * (x @ gram - wf) + lam

    if method == "pgd":
        step = 1.0 / lipschitz(gram)
        y, t = m, 1.0
        for _ in range(steps):
            m_next = (y - step * grad(y)).clamp_(0.0, 1.0)
            t_next = (1.0 + (1.0 + 4.0 * t * t) ** 0.5) / 2.0
            y = m_next + ((t - 1.0) / t_next) * (m_next - m)
            m, t = m_next, t_next
    else:
        sq = torch.zeros_like(m)
        for _ in range(steps):
            g = grad(m)
            sq.mul_(0.99).addcmul_(g, g, value=0.01)
            m = (m - lr * g / (sq.sqrt() + 1e-8)).clamp_(0.0, 1.0)
    if mask is not None:
        m = m * mask.unsqueeze(-1).to(m.dtype)
    return m


def objective(facets: torch.Tensor, targets: torch.Tensor, coefficients: torch.Tensor,
              mask: torch.Tensor | None = None, lam: float = DEFAULT_LAMBDA) -> torch.Tensor:
    """Eq. 1's objective ``||M F - W||^2 + λ Σ M`` per example (B,), summed over valid rows."""
    err = ((coefficients @ facets - targets) ** 2).sum(-1) + lam * coefficients.sum(-1)
    if mask is not None:
        err = err * mask.to(err.dtype)
    return err.sum(-1)


def reconstruction_error(
    facets: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor | None = None,
    coefficients: torch.Tensor | None = None,
    **estimate_kwargs: float | int | str,
) -> torch.Tensor:
    """Er(F, W) per example (B,): mean over valid rows of ``||(M* F)_j - w_j||^2``.

    M* is estimated (no gradient) unless given; the gradient flows into ``facets`` (and
    ``targets`` if they require it). Rows of an example without any valid word give 0.
    """
    _check(facets, targets, mask)
    if coefficients is None:
        coefficients = estimate_coefficients(facets, targets, mask, **estimate_kwargs)
    err = ((coefficients @ facets - targets) ** 2).sum(-1)  # (B, N)
    if mask is None:
        return err.mean(-1)
    valid = mask.to(err.dtype)
    return (err * valid).sum(-1) / valid.sum(-1).clamp_min(1.0)


def nnsc_loss(
    facets: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    shift: int,
    **estimate_kwargs: float | int | str,
) -> dict[str, torch.Tensor]:
    """Eq. 2 averaged over the batch: Er(own words) - Er(words of the example ``shift`` on).

    Returns ``loss`` (to minimise; starts near 0 and goes negative as facets specialise),
    ``positive`` and ``negative`` (the two mean errors, detached).
    """
    _check(facets, targets, mask)
    b = facets.shape[0]
    if b < 2:
        raise ValueError("the NNSC loss needs a batch of at least 2 examples (the negative "
                         "words come from another example)")
    if not 1 <= shift < b:
        raise ValueError(f"shift must be in [1, {b - 1}], got {shift}")
    neg_targets = torch.roll(targets, shifts=shift, dims=0)
    neg_mask = torch.roll(mask, shifts=shift, dims=0)
    pos = reconstruction_error(facets, targets, mask, **estimate_kwargs)
    neg = reconstruction_error(facets, neg_targets, neg_mask, **estimate_kwargs)
    loss = (pos - neg).mean()
    return {"loss": loss, "positive": pos.mean().detach(), "negative": neg.mean().detach()}
