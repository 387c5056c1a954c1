"""SRAVEN: the symbolic Raven-matrices task of Schug et al. 2024 ("Attention as a hypernetwork", the SMoE
paper's ref [24]), as the SMoE paper (004, section 2.1 and appendix A.1) trains on it.

Behaviour follows the public reference generator (REFERENCE.md, SRAVEN): a 3x3 grid of panels, each panel a
vector of M features with values 0..7; every feature follows one of 8 rules applied row-wise mod 8; a
latent task is the multiset of the M rules; a fixed-seed fraction of latent tasks is held out as OOD.

Where we differ from the reference, deliberately:
- Seeds: the latent split, the training stream, the ID test set and the OOD set each have their own seed
  (the reference regenerates training problems as its "test" set).
- Disjointness of evaluation and training problems is guaranteed by a hash partition of problem
  instances: an instance whose 8 context panels hash into bucket 0 of ``holdout_buckets`` belongs to
  evaluation, every other instance to training. The partition is a pure function of the instance, so no
  evaluation problem (ID test or OOD) can ever be drawn by the training stream, whatever the seeds; hash
  quality only affects the balance of the split, never its disjointness. It matters at small M, where
  the space is small (a constant feature has 8**3 = 512 instances) and an unpartitioned training stream
  would soon contain every test problem.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import combinations_with_replacement
from typing import Any, Literal

import numpy as np
import torch

GRID = 3  # the paper fixes a 3x3 grid (004, section 2.1)
NUM_VALUES = 8  # feature values 0..7, rules apply mod 8 (REFERENCE.md, SRAVEN)

# The 8 rules (REFERENCE.md, SRAVEN; 004 section 2.1: "R = 8 possible rules"), in the reference's order.
RULES: tuple[str, ...] = (
    "constant",
    "progression+1",
    "progression+2",
    "progression-1",
    "progression-2",
    "add",
    "subtract",
    "distribute_three",
)
NUM_RULES = len(RULES)
_PROGRESSION_INC = {1: 1, 2: 2, 3: -1, 4: -2}

Split = Literal["train", "test", "ood"]


class OODMissesRuleWarning(UserWarning):
    """The OOD latent set does not contain every rule (as the reference warns)."""


def latent_table(num_features: int) -> np.ndarray:
    """All latent tasks: multisets of ``num_features`` rules, as sorted rule-index rows [count, M].

    Combinations with replacement of 8 rules: 8, 36, 120, 330, 792, 1716, 3432, 6435 for M = 1..8.
    """
    assert 1 <= num_features <= 8, f"num_features must be in 1..8, got {num_features}"
    return np.array(list(combinations_with_replacement(range(NUM_RULES), num_features)), dtype=np.int64)


def split_latents(count: int, ood_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of (in-distribution, OOD) latent tasks: the first ``int(ood_fraction * count)`` of a
    fixed-seed permutation are OOD (REFERENCE.md, SRAVEN; 004 section 2.1 keeps 25% as OOD)."""
    perm = np.random.default_rng(seed).permutation(count)
    num_ood = int(ood_fraction * count)
    return np.sort(perm[num_ood:]), np.sort(perm[:num_ood])


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser on uint64 (wrapping arithmetic), for a well-spread instance hash."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def instance_hash(panels: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each problem's 8 context panels (what the model sees). panels: [N, 9, M] ints."""
    N = panels.shape[0]
    context = panels[:, : GRID * GRID - 1, :].reshape(N, -1).astype(np.uint64)  # [N, 8*M]
    h = np.full(N, np.uint64(context.shape[1]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(context.shape[1]):
            h = _mix64(h ^ (context[:, i] + np.uint64(0x9E3779B97F4A7C15)))
    return h


@dataclass(frozen=True)
class SravenBatch:
    """A batch of problems. ``panels`` [B, 9, M] row-major panels (after feature permutation); ``latents``
    [B, M] rule indices of the features before permutation (sorted, as in the latent table); ``perms``
    [B, 3, M]: ``panels[b, 3*r + c, j] = unpermuted[b, r, c, perms[b, c, j]]``."""

    panels: np.ndarray
    latents: np.ndarray
    perms: np.ndarray

    def __len__(self) -> int:
        return int(self.panels.shape[0])

    def tokens(self) -> torch.Tensor:
        """[B, 9*M, 8] float: one token per (panel, feature), one-hot over the 8 values, panels row-major,
        features contiguous; the query panel's M tokens are all zeros (REFERENCE.md, SRAVEN)."""
        B, P, M = self.panels.shape
        values = torch.from_numpy(np.ascontiguousarray(self.panels.reshape(B, P * M)))  # [B, 9*M]
        tokens = torch.nn.functional.one_hot(values, NUM_VALUES).float()  # [B, 9*M, 8]
        tokens[:, (P - 1) * M :, :] = 0.0
        return tokens

    def targets(self) -> torch.Tensor:
        """[B, M] long: the query panel's values."""
        return torch.from_numpy(self.panels[:, -1, :].copy())


class SravenGenerator:
    """Latent tasks, their OOD split, and problem sampling for one SRAVEN configuration."""

    def __init__(
        self,
        num_features: int,
        *,
        ood_fraction: float = 0.25,
        permute_features: bool = True,
        split_seed: int = 2024,
        holdout_buckets: int = 16,
    ) -> None:
        assert 1 <= num_features <= 8, f"num_features must be in 1..8, got {num_features}"
        assert 0.0 <= ood_fraction <= 1.0, f"ood_fraction must be in [0, 1], got {ood_fraction}"
        assert holdout_buckets >= 2, f"holdout_buckets must be >= 2, got {holdout_buckets}"
        self.num_features = num_features
        self.permute_features = permute_features
        self.holdout_buckets = holdout_buckets
        self.latents_all = latent_table(num_features)
        self.in_dist_idx, self.ood_idx = split_latents(len(self.latents_all), ood_fraction, split_seed)
        if len(self.in_dist_idx) == 0:
            raise ValueError(f"ood_fraction {ood_fraction} leaves no training task at M={num_features}")
        if ood_fraction > 0 and len(self.ood_idx) == 0:
            raise ValueError(f"ood_fraction {ood_fraction} gives an empty OOD set at M={num_features}")
        if len(self.ood_idx) > 0 and len(self.ood_rules) < NUM_RULES:
            warnings.warn(
                f"OOD latent set (M={num_features}, {len(self.ood_idx)} tasks) misses rules "
                f"{sorted(set(range(NUM_RULES)) - self.ood_rules)}",
                OODMissesRuleWarning,
                stacklevel=2,
            )

    @property
    def seq_len(self) -> int:
        return GRID * GRID * self.num_features

    @property
    def ood_rules(self) -> set[int]:
        return {int(r) for r in np.unique(self.latents_all[self.ood_idx])}

    def latents_of(self, split: Split) -> np.ndarray:
        """The latent tasks [n, M] a split draws from: train and test share the in-distribution tasks."""
        return self.latents_all[self.ood_idx if split == "ood" else self.in_dist_idx]

    def is_heldout(self, panels: np.ndarray) -> np.ndarray:
        """[N] bool: the instance belongs to evaluation (hash bucket 0), never to training."""
        return (instance_hash(panels) % np.uint64(self.holdout_buckets)) == 0

    # --- sampling -------------------------------------------------------------------------------

    def _sample_rule(self, rng: np.random.Generator, rule: int, n: int) -> np.ndarray:
        """[n, 3, 3] grids (rows x columns) of one rule, row-wise mod 8 (REFERENCE.md, SRAVEN)."""
        col = np.arange(GRID)[None, None, :]  # [1, 1, 3]
        if rule == 0:  # constant: every row repeats its own random value
            return np.repeat(rng.integers(0, NUM_VALUES, size=(n, GRID, 1)), GRID, axis=2)
        if rule in _PROGRESSION_INC:  # (start + inc * col) mod 8, start per row
            start = rng.integers(0, NUM_VALUES, size=(n, GRID, 1))
            return (start + _PROGRESSION_INC[rule] * col) % NUM_VALUES
        if rule in (5, 6):  # arithmetic: third = first +/- second mod 8
            ab = rng.integers(0, NUM_VALUES, size=(n, GRID, 2))
            third = (ab[..., 0] + ab[..., 1]) if rule == 5 else (ab[..., 0] - ab[..., 1])
            return np.concatenate([ab, (third % NUM_VALUES)[..., None]], axis=2)
        # distribute three: three distinct values shared by all rows, permuted independently per row
        symbols = rng.permuted(np.tile(np.arange(NUM_VALUES), (n, 1)), axis=1)[:, :GRID]  # [n, 3]
        rows = np.repeat(symbols[:, None, :], GRID, axis=1)  # [n, 3, 3]
        return rng.permuted(rows, axis=2)

    def _sample_raw(self, rng: np.random.Generator, n: int, split: Split) -> SravenBatch:
        """n problems of ``split``'s latent tasks, ignoring the hash partition."""
        M = self.num_features
        pool = self.latents_of(split)
        latents = pool[rng.integers(0, len(pool), size=n)]  # [n, M]
        grids = np.empty((n, M, GRID, GRID), dtype=np.int64)  # [n, M, rows, cols]
        for rule in range(NUM_RULES):
            where = np.nonzero(latents == rule)
            if len(where[0]):
                grids[where] = self._sample_rule(rng, rule, len(where[0]))
        grids = grids.transpose(0, 2, 3, 1)  # [n, rows, cols, M]
        if self.permute_features:
            # each column gets its own feature permutation, the same in every row (REFERENCE.md, SRAVEN)
            perms = rng.permuted(np.tile(np.arange(M), (n, GRID, 1)), axis=2)  # [n, cols, M]
            grids = np.take_along_axis(grids, perms[:, None, :, :], axis=3)
        else:
            perms = np.tile(np.arange(M), (n, GRID, 1))
        panels = grids.reshape(n, GRID * GRID, M)  # panels row-major
        return SravenBatch(panels=panels, latents=latents, perms=perms)

    def sample(self, rng: np.random.Generator, n: int, split: Split) -> SravenBatch:
        """n problems of ``split``: train draws only non-held-out instances of in-distribution tasks; test
        (in-distribution tasks) and ood (held-out tasks) only held-out instances. Rejection sampling;
        deterministic given ``rng``'s state."""
        want_heldout = split != "train"
        parts: list[SravenBatch] = []
        have = 0
        while have < n:
            need = n - have
            # the held-out bucket is 1/holdout_buckets of instances: oversample accordingly
            factor = (
                self.holdout_buckets if want_heldout else self.holdout_buckets / (self.holdout_buckets - 1)
            )
            draw = self._sample_raw(rng, int(need * factor * 1.2) + 16, split)
            keep = np.nonzero(self.is_heldout(draw.panels) == want_heldout)[0][:need]
            parts.append(SravenBatch(draw.panels[keep], draw.latents[keep], draw.perms[keep]))
            have += len(keep)
        return SravenBatch(
            panels=np.concatenate([p.panels for p in parts]),
            latents=np.concatenate([p.latents for p in parts]),
            perms=np.concatenate([p.perms for p in parts]),
        )

    def eval_set(self, split: Split, n: int, seed: int) -> SravenBatch:
        """A fixed evaluation set of n problems of ``split`` from its own seed."""
        return self.sample(np.random.default_rng(seed), n, split)


class SravenStream:
    """The endless, seeded training stream. ``state_dict()``/``load_state_dict()`` restore it exactly."""

    def __init__(self, generator: SravenGenerator, batch_size: int, seed: int) -> None:
        self.generator = generator
        self.batch_size = batch_size
        self.rng = np.random.default_rng(seed)
        self.batches_drawn = 0

    def next_batch(self) -> SravenBatch:
        self.batches_drawn += 1
        return self.generator.sample(self.rng, self.batch_size, "train")

    def state_dict(self) -> dict[str, Any]:
        return {"bit_generator": self.rng.bit_generator.state, "batches_drawn": self.batches_drawn}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["bit_generator"]
        self.batches_drawn = int(state["batches_drawn"])
