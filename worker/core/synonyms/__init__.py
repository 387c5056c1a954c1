"""Synonym replacement on task inputs and the ConsistSyn / CV / NI metrics (paper 003, C.2 and B.4)."""

from worker.core.synonyms.metrics import (
    coefficient_of_variation,
    consist_syn,
    mean_std,
    normalised_improvement,
)
from worker.core.synonyms.replace import Replacement, content_words, replace_synonyms
from worker.core.synonyms.sources import JsonMapSource, SynonymSource, WordNetSource, make_source
from worker.core.synonyms.stopwords import SHIPPED_STOPWORDS, stopwords

__all__ = [
    "SHIPPED_STOPWORDS",
    "JsonMapSource",
    "Replacement",
    "SynonymSource",
    "WordNetSource",
    "coefficient_of_variation",
    "consist_syn",
    "content_words",
    "make_source",
    "mean_std",
    "normalised_improvement",
    "replace_synonyms",
    "stopwords",
]
