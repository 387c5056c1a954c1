"""One example type for pre-training and downstream data (paper 001, section 3: "all tasks are tackled as
unified text-to-text generation tasks")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Example:
    """A prompted input and its target text.

    - Pre-training (appendix A, ``{skill, input, output}``): ``skills`` names the skill; one skill is
      wanted at every reasoning step (the paper), several are the per-step skills of a composite (our
      synthetic suite: "which skill at which step" has a known answer).
    - Multiple choice: ``options`` non-empty, ``answer`` the index of the right one, ``output`` its text.
    - Generative: no options; scored by exact match.
    ``skills`` of a downstream example, when known (the synthetic suite), is what the router is compared to.
    """

    task: str
    input: str
    output: str
    skills: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    answer: int = -1

    def __post_init__(self) -> None:
        if self.options:
            assert 0 <= self.answer < len(self.options), (
                f"answer {self.answer} is not an index of {len(self.options)} options ({self.task})"
            )
            assert self.output == self.options[self.answer], (
                f"output {self.output!r} is not option {self.answer} {self.options[self.answer]!r}"
            )

    @property
    def is_choice(self) -> bool:
        return bool(self.options)
