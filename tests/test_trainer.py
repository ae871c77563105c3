"""The shared training loop: schedule, budget, history, and bit-exact resume after a crash."""

from __future__ import annotations

import hashlib
import random

import pytest
import torch
from torch import nn

from phrasekit.training.core.trainer import Trainer, step_seed, warmup_linear


class TinyTask:
    """Regression of y = 3x - 1 with dropout, batches drawn from the step's generator."""

    def __init__(self, crash_at: int | None = None) -> None:
        torch.manual_seed(0)
        self.model = nn.Sequential(nn.Linear(1, 8), nn.Dropout(0.2), nn.Linear(8, 1))
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=0.05)
        self.crash_at = crash_at
        self.seen: list[int] = []

    def fingerprint(self) -> str:
        return hashlib.sha256(b"tiny").hexdigest()[:16]

    def lr_factor(self, step: int) -> float:
        return warmup_linear(step, 20, 0.1)

    def step_loss(self, step: int, rng: random.Random) -> tuple[torch.Tensor, dict[str, float]]:
        if step == self.crash_at:
            raise KeyboardInterrupt
        self.seen.append(step)
        x = torch.tensor([[rng.uniform(-1, 1)] for _ in range(16)])
        loss = nn.functional.mse_loss(self.model(x), 3 * x - 1)
        return loss, {"mse": float(loss.detach())}


def _weights(model: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def test_resume_after_a_crash_is_bit_exact(tmp_path):
    straight = TinyTask()
    done = Trainer(tmp_path / "a", total_steps=20, checkpoint_every=4,
                   show_progress=False).fit(straight)
    assert done.steps == 20 and [r["step"] for r in done.history] == [4, 8, 12, 16, 20]
    assert done.history[-1]["mse"] < done.history[0]["mse"]

    crashed = TinyTask(crash_at=10)
    with pytest.raises(KeyboardInterrupt):
        Trainer(tmp_path / "b", total_steps=20, checkpoint_every=4,
                show_progress=False).fit(crashed)
    resumed = TinyTask()
    again = Trainer(tmp_path / "b", total_steps=20, checkpoint_every=4,
                    show_progress=False).fit(resumed)
    assert resumed.seen[0] == 8  # the last checkpoint before the crash
    assert again.steps == 20 and [r["step"] for r in again.history] == [4, 8, 12, 16, 20]
    for a, b in zip(_weights(straight.model), _weights(resumed.model), strict=True):
        assert torch.equal(a, b)


def test_checkpoint_with_other_settings_is_refused(tmp_path):
    Trainer(tmp_path, total_steps=4, checkpoint_every=2, show_progress=False).fit(TinyTask())
    other = TinyTask()
    other.fingerprint = lambda: "other"  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="different settings"):
        Trainer(tmp_path, total_steps=8, show_progress=False).fit(other)


def test_a_diverged_run_stops_before_its_weights_change(tmp_path):
    """A non-finite loss stops the run at that step, and a folder the run made is removed
    when nothing was saved in it."""
    task = TinyTask()
    before = _weights(task.model)
    task.step_loss = lambda step, rng: (torch.tensor(float("nan"), requires_grad=True), {})
    with pytest.raises(ValueError, match="diverged at step 1: the loss is nan"):
        Trainer(tmp_path / "run", total_steps=4, show_progress=False).fit(task)
    assert not (tmp_path / "run").exists()
    assert all(torch.equal(a, b) for a, b in zip(before, _weights(task.model), strict=True))


def test_time_budget_stops_and_keeps_progress(tmp_path):
    result = Trainer(tmp_path, total_steps=10_000, max_minutes=1e-9, checkpoint_every=50,
                     show_progress=False).fit(TinyTask())
    assert result.stopped_by_budget and result.steps < 10_000


def test_schedule_and_seeds():
    assert warmup_linear(0, 100, 0.1) == pytest.approx(0.1)
    assert warmup_linear(9, 100, 0.1) == pytest.approx(1.0)
    assert warmup_linear(99, 100, 0.1) == pytest.approx(1 / 90)
    assert step_seed(1, 5) != step_seed(0, 5) != step_seed(0, 6)


def test_infinite_settings_are_refused_before_training():
    """An infinite temperature, margin or learning rate trained to the end and failed only
    when the model was saved."""
    from phrasekit.training.phrase_bert.config import PhraseBertTrainingConfig
    from phrasekit.training.uctopic.config import UCTopicConfig

    with pytest.raises(ValueError, match="temperature must be a finite number, got inf"):
        UCTopicConfig(data_dir="d", out_dir="o", temperature=float("inf"), max_steps=1).validate()
    with pytest.raises(ValueError, match="margin must be a finite number, got inf"):
        PhraseBertTrainingConfig(data_dir="d", out_dir="o", margin=float("inf")).validate(
            check_data=False)


def test_a_file_given_as_the_data_folder_is_named_as_such(tmp_path):
    """It was reported as '<file>/paraphrase_triplets.jsonl.gz missing'."""
    from phrasekit.training.pearl.config import PearlTrainingConfig
    from phrasekit.training.phrase_bert.config import PhraseBertTrainingConfig

    (tmp_path / "afile").write_text("x")
    for cfg in (PhraseBertTrainingConfig(data_dir=str(tmp_path / "afile"), out_dir="o"),
                PearlTrainingConfig(data_dir=str(tmp_path / "afile"), out_dir="o", max_steps=1)):
        with pytest.raises(NotADirectoryError, match="afile is a file, not a dataset folder"):
            cfg.validate()
