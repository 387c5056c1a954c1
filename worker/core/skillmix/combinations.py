"""Seeded (k skills, 1 topic) combinations (REFERENCE.md, "Skill-Mix": per combination, shuffle the skills,
take k, pick one topic). The draw depends only on the lists, k, the count and the seed, so every cell of
an experts-per-token sweep at one k grades the same combinations."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from worker.core.skillmix.skills import Skill


@dataclass(frozen=True)
class Combination:
    index: int
    skills: tuple[Skill, ...]
    topic: str

    @property
    def k(self) -> int:
        return len(self.skills)

    @property
    def skill_names(self) -> list[str]:
        return [s.name for s in self.skills]


def sample_combinations(
    skills: Sequence[Skill], topics: Sequence[str], k: int, count: int, seed: int
) -> list[Combination]:
    """``count`` combinations of ``k`` distinct skills and one topic, without repeating a (skill set,
    topic) pair while unseen pairs remain."""
    assert 1 <= k <= len(skills), f"k={k} needs at least k skills, the list has {len(skills)}"
    assert count >= 1 and topics, f"count={count}, {len(topics)} topics"
    rng = random.Random(seed)
    order = list(skills)
    seen: set[tuple[frozenset[str], str]] = set()
    out: list[Combination] = []
    while len(out) < count:
        for _attempt in range(100):
            rng.shuffle(order)
            chosen = tuple(order[:k])
            topic = rng.choice(list(topics))
            key = (frozenset(s.name for s in chosen), topic)
            if key not in seen:
                break
        seen.add(key)
        out.append(Combination(index=len(out), skills=chosen, topic=topic))
    return out
