"""The default skill lists of ReasonFormer's models: the paper's and the synthetic suite's."""

from __future__ import annotations

# The paper's five skills and "general" (section 2); the synthetic suite's five primitives and "general".
PAPER_SKILLS = ["logic", "qa", "ner", "nli", "fact", "general"]
SYNTHETIC_SKILLS = ["reverse", "sort", "shift", "lookup", "rotate", "general"]
DEFAULT_SKILL_COUNT = 6  # both default skill lists
