"""Stronger context-blind learners than the audit's single probe: they see each option only
together with its set of five, never the puzzle's rule, and are trained to find the solution.

- ``rich_logit``: a conditional logit (softmax over the five options) over rich features of each
  option relative to its set: the pickers' features, a small grey thumbnail and a colour
  histogram minus the set mean, and relational features of where the options differ from one
  another (distance to the pixelwise consensus, agreement with the others where they disagree).
- ``boosted_trees``: gradient-boosted trees (scikit-learn) over the same relational features, raw,
  minus the set's mean and z-scored within the set, one score per option, the highest taken per set.
- ``set_cnn``: a small convolutional network (torch) over the pixels. Each option enters with
  itself minus the set's mean image; a set-pooling layer lets every score depend on the whole
  set. Trained with a softmax over the five options. It needs torch (the ``eval`` extra).

Every learner is cross-fitted like the audit's probe: trained on alternate sets (in id order)
and scored on the others, then the halves swapped, so every set is scored by a learner that never
saw it. All are seeded and single-threaded: the same sets give the same figure on any machine.
A fair option set keeps each of them near chance (0.20); the gate is 0.30.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from vrforge.pickers import credit, fit_probe, relative_features

THUMB_SIDE = 32  # the pixels the CNN sees per option (colour)
GREY_SIDE = 8  # the grey thumbnail in the rich features
CONSENSUS_SIDE = 64  # where the consensus features are measured
HIST_BITS = 2  # per channel: 64 colour bins
DIFFERENT = 24  # grey levels: two options differ at a pixel beyond this
BATCH = 64  # option sets per step: larger batches cost less per image on a CPU
RICH_RIDGE = 10.0  # ~190 weights on a few hundred sets
LEARNERS = ("rich_logit", "boosted_trees", "set_cnn")


@dataclass(frozen=True)
class SetInputs:
    """What the learners see of one option set: ``pixels`` (5, 3, THUMB_SIDE, THUMB_SIDE) uint8 and
    ``relational`` (5, R) float features of each option within its set."""

    pixels: np.ndarray
    relational: np.ndarray


def _reduced(rgb: np.ndarray, side: int) -> Image.Image:
    image = Image.fromarray(rgb)
    factor = max(1, max(image.size) // (2 * side))
    reduced = image.reduce(factor) if factor > 1 else image  # an integer box reduction first: cheap
    return reduced.resize((side, side), Image.Resampling.BOX)


def set_inputs(options: Sequence[np.ndarray], basic: np.ndarray) -> SetInputs:
    """The learners' inputs for one set of five option images (RGB arrays of one size), given the
    pickers' ``basic`` features of the set ((5, F) from ``vrforge.pickers.option_features``)."""
    pixels = np.stack([np.asarray(_reduced(o, THUMB_SIDE)).transpose(2, 0, 1) for o in options])
    grey = np.stack([np.asarray(_reduced(o, GREY_SIDE).convert("L"), dtype=np.float64).ravel() for o in options])
    big = np.stack([np.asarray(_reduced(o, CONSENSUS_SIDE).convert("L"), dtype=np.float64).ravel() for o in options])
    hist = np.stack([_histogram(o) for o in options])
    consensus = np.median(big, axis=0)
    off = np.abs(big - consensus) > DIFFERENT  # (5, P): where each option leaves the consensus
    disputed = off.any(axis=0)
    # On the disputed pixels: how many other options look like this one there.
    close = np.abs(big[:, None, :] - big[None, :, :]) <= DIFFERENT  # (5, 5, P)
    agreement = (close[:, :, disputed].sum(axis=1) - 1).mean(axis=1) if disputed.any() else np.zeros(len(options))
    relational = np.concatenate([
        grey - grey.mean(axis=0), hist - hist.mean(axis=0),
        off.mean(axis=1, keepdims=True), agreement[:, None],
        (off & disputed).sum(axis=1, keepdims=True) / max(1, int(disputed.sum())),
    ], axis=1)
    return SetInputs(pixels.astype(np.uint8), np.concatenate([basic, relational], axis=1))


def _histogram(rgb: np.ndarray) -> np.ndarray:
    step = max(1, max(rgb.shape[:2]) // 128)
    sample = rgb[::step, ::step, :3] >> (8 - HIST_BITS)
    codes = (sample[..., 0].astype(np.int64) << (2 * HIST_BITS)) | (sample[..., 1].astype(np.int64) << HIST_BITS) | sample[..., 2]
    counts = np.bincount(codes.ravel(), minlength=1 << (3 * HIST_BITS)).astype(np.float64)
    return counts / counts.sum()


def _halves(count: int) -> np.ndarray:
    return np.arange(count) % 2


def _held_out(scores_for: Callable[[np.ndarray, np.ndarray], np.ndarray], count: int, answers: np.ndarray) -> float:
    """Cross-fitted accuracy: ``scores_for(train_mask, test_mask)`` gives (test sets, 5) scores."""
    if count < 4:
        return float("nan")
    halves = _halves(count)
    hits: list[float] = []
    for held in (0, 1):
        scores = scores_for(halves != held, halves == held)
        for row, answer in zip(scores, answers[halves == held]):
            best = np.flatnonzero(np.round(row, 9) == np.round(row, 9).max())
            hits.append(credit(tuple(int(i) for i in best), int(answer)))
    return float(np.mean(hits))


def _standardised(relational: np.ndarray) -> np.ndarray:
    """Relational features z-scored within each set (the set is the unit a learner compares within)."""
    x = relational - relational.mean(axis=1, keepdims=True)
    spread = relational.std(axis=1, keepdims=True)
    return np.where(spread > 1e-9, x / np.where(spread > 1e-9, spread, 1.0), 0.0)


def rich_logit_accuracy(relational: np.ndarray, answers: Sequence[int]) -> float:
    """``relational``: (sets, 5, R)."""
    labels = np.asarray(answers, dtype=np.int64)
    basic_columns = 6
    x = np.concatenate([relative_features(relational[:, :, :basic_columns]), _standardised(relational[:, :, basic_columns:])],
                       axis=2)

    def scores(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        return x[test] @ fit_probe(x[train], labels[train], ridge=RICH_RIDGE)

    return _held_out(scores, len(labels), labels)


def boosted_trees_accuracy(relational: np.ndarray, answers: Sequence[int], seed: int = 0) -> float:
    from sklearn.ensemble import HistGradientBoostingClassifier

    labels = np.asarray(answers, dtype=np.int64)
    sets, options, _ = relational.shape
    # Raw, set-centred and set-standardised: a value the solution takes relative to its set's mean
    # (an ink offset on a lattice of its own) is lost to z-scoring, and raw values alone do not line up.
    x = np.concatenate([relational, relational - relational.mean(axis=1, keepdims=True), _standardised(relational)], axis=2)
    y = np.zeros((sets, options), dtype=np.int64)
    y[np.arange(sets), labels] = 1

    def scores(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        model = HistGradientBoostingClassifier(max_iter=150, learning_rate=0.08, max_leaf_nodes=15, min_samples_leaf=10,
                                               l2_regularization=1.0, early_stopping=False, random_state=seed)
        model.fit(x[train].reshape(-1, x.shape[2]), y[train].ravel())
        return model.predict_proba(x[test].reshape(-1, x.shape[2]))[:, 1].reshape(-1, options)

    return _held_out(scores, sets, labels)


def set_cnn_accuracy(pixels: np.ndarray, answers: Sequence[int], epochs: int = 40, seed: int = 0) -> float:
    """``pixels``: (sets, 5, 3, S, S) uint8. Needs torch."""
    try:
        import torch
    except ImportError:
        raise RuntimeError("the set CNN probe needs torch: pip install 'vrforge[eval]'") from None

    labels = np.asarray(answers, dtype=np.int64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # identical sums on every machine, and no oversubscription beside workers
    try:
        data = torch.from_numpy(pixels.astype(np.float32) / 255.0)

        def scores(train: np.ndarray, test: np.ndarray) -> np.ndarray:
            torch.manual_seed(seed)
            model = _SetScorer(torch)
            optimiser = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
            x, y = data[torch.from_numpy(train)], torch.from_numpy(labels[train])
            generator = torch.Generator().manual_seed(seed)
            model.train()
            for _ in range(epochs):
                order = torch.randperm(len(x), generator=generator)
                for start in range(0, len(x), BATCH):
                    batch = order[start:start + BATCH]
                    loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
                    optimiser.zero_grad()
                    loss.backward()
                    optimiser.step()
            model.eval()
            with torch.no_grad():
                return model(data[torch.from_numpy(test)]).numpy()

        return _held_out(scores, len(labels), labels)
    finally:
        torch.set_num_threads(threads)


def _SetScorer(torch: Any) -> Any:  # noqa: N802 - a class built where torch is importable
    nn = torch.nn

    class SetScorer(nn.Module):  # type: ignore[name-defined]
        """Scores each option from its own pixels and those minus the set's mean image, with the
        set's pooled embedding beside its own: permutation-equivariant, so no position is learnt."""

        def __init__(self, width: int = 8) -> None:
            super().__init__()
            self.encoder = nn.Sequential(
                nn.Conv2d(6, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())
            self.head = nn.Sequential(nn.Linear(16 * width, 32), nn.ReLU(), nn.Linear(32, 1))

        def forward(self, x):
            sets, options = x.shape[:2]
            inputs = torch.cat([x, x - x.mean(dim=1, keepdim=True)], dim=2).flatten(0, 1)
            e = self.encoder(inputs).view(sets, options, -1)
            pooled = e.mean(dim=1, keepdim=True).expand_as(e)
            return self.head(torch.cat([e, e - pooled], dim=2)).squeeze(-1)

    return SetScorer()


def learner_figures(inputs: Sequence[SetInputs], answers: Sequence[int], cnn_epochs: int | None = 40) -> dict[str, float]:
    """Each learner's held-out accuracy on the sets (in id order); ``cnn_epochs`` None leaves the CNN out."""
    relational = np.stack([i.relational for i in inputs])
    figures = {"rich_logit": rich_logit_accuracy(relational, answers),
               "boosted_trees": boosted_trees_accuracy(relational, answers)}
    if cnn_epochs:
        figures["set_cnn"] = set_cnn_accuracy(np.stack([i.pixels for i in inputs]), answers, epochs=cnn_epochs)
    return figures
