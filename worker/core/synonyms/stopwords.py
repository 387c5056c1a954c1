"""English stopwords: never replaced by a synonym (paper 003, appendix C.2: "words belonging to NLTK's
predefined stopwords list or shorter than two characters were excluded"). nltk's list is used when its
``stopwords`` corpus is installed; otherwise this shipped list of English function words (pronouns,
determiners, auxiliaries, prepositions, conjunctions, common adverbs and their contractions)."""

from __future__ import annotations

import functools

_SHIPPED = """
    a about above after again against ain all am an and any are aren aren't as at be because been before
    being below between both but by can couldn couldn't d did didn didn't do does doesn doesn't doing don
    don't down during each few for from further had hadn hadn't has hasn hasn't have haven haven't having he
    he'd he'll he's her here hers herself him himself his how i i'd i'll i'm i've if in into is isn isn't it
    it'd it'll it's its itself just ll m ma me mightn mightn't more most mustn mustn't my myself needn
    needn't no nor not now o of off on once only or other our ours ourselves out over own re s same shan
    shan't she she'd she'll she's should should've shouldn shouldn't so some such t than that that'll the
    their theirs them themselves then there these they they'd they'll they're they've this those through to
    too under until up ve very was wasn wasn't we we'd we'll we're we've were weren weren't what when where
    which while who whom why will with won won't wouldn wouldn't y you you'd you'll you're you've your yours
    yourself yourselves
"""
SHIPPED_STOPWORDS = frozenset(_SHIPPED.split())


@functools.cache
def stopwords() -> frozenset[str]:
    """nltk's English stopwords when that corpus is installed, else ``SHIPPED_STOPWORDS``."""
    try:
        from nltk.corpus import stopwords as nltk_stopwords

        return frozenset(w.lower() for w in nltk_stopwords.words("english"))
    except (ImportError, LookupError, OSError):
        return SHIPPED_STOPWORDS
