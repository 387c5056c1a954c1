"""Synonym replacement touches content words of the input only, never the template; ConsistSyn, CV and
NI equal hand computations on a fixed table (paper 003, appendix B.4, eqs. 12-14)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from worker.core.carma.tasks import prompt_template, render
from worker.core.synonyms import (
    SHIPPED_STOPWORDS,
    JsonMapSource,
    coefficient_of_variation,
    consist_syn,
    content_words,
    make_source,
    mean_std,
    normalised_improvement,
    replace_synonyms,
)

MAP = {"shore": ["coast", "beach"], "sea": ["ocean"], "called": ["named"], "the": ["da"], "is": ["be"]}


def test_only_content_words_are_candidates() -> None:
    words = content_words("The shore of a sea, or the sea's edge: x", SHIPPED_STOPWORDS)
    assert words == ["shore", "sea", "edge"]  # no stopwords, no 1-letter word, "sea's" is not alphabetic


def test_replacement_never_touches_the_template() -> None:
    source = JsonMapSource(MAP)
    template = prompt_template("idm", "llama")  # '{text} is called a "': "called" and "is" are in MAP
    text = "the shore of a sea"
    for seed in range(20):
        out = replace_synonyms(text, source, 1.0, random.Random(seed), SHIPPED_STOPWORDS)
        prompt = render(template, out.text)
        assert prompt.endswith(' is called a "'), prompt
        assert out.text.split()[0] == "the" and out.text.split()[2:4] == ["of", "a"]  # stopwords stay
        assert {w for w, _ in out.replaced} <= {"shore", "sea"}


def test_every_occurrence_is_replaced_with_punctuation_kept_and_the_budget_respected() -> None:
    source = JsonMapSource({"sea": ["ocean"], "shore": ["coast"], "wave": ["surge"]})
    out = replace_synonyms("Sea, sea and shore; wave", source, 0.2, random.Random(0), SHIPPED_STOPWORDS)
    assert len(out.replaced) == 1  # max(1, int(5 * 0.2)) = 1 word
    full = replace_synonyms("Sea, sea and shore; wave", source, 1.0, random.Random(0), SHIPPED_STOPWORDS)
    assert full.text == "ocean, ocean and coast; surge"
    assert replace_synonyms("of the", source, 1.0, random.Random(0), SHIPPED_STOPWORDS).replaced == ()


def test_the_json_source_reads_a_map_file_and_unknown_sources_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"Sea": ["ocean", "sea"]}))
    source = make_source("json", str(path))
    assert source.synonyms("sea") == ["ocean"]
    path.write_text(json.dumps({"sea": "ocean"}))
    with pytest.raises(ValueError, match="word -> list of strings"):
        make_source("json", str(path))
    with pytest.raises(ValueError, match="unknown synonym source 'thesaurus'"):
        make_source("thesaurus")


@pytest.mark.heavy
def test_wordnet_source_gives_up_to_five_other_lemmas() -> None:
    source = make_source("wordnet")
    synonyms = source.synonyms("coast")
    assert 1 <= len(synonyms) <= 5 and "coast" not in synonyms
    assert "seashore" in synonyms


# A fixed table: 5 seeds of one model; per seed, which of the 8 originally-correct items stay correct.
BEFORE = [True] * 8 + [False] * 2
AFTER_BY_SEED = [
    [1, 1, 1, 1, 1, 1, 0, 0, 1, 0],  # 6 of 8 -> 75.0 (item 9 was wrong before: not counted)
    [1, 1, 1, 1, 1, 1, 1, 0, 0, 0],  # 7 of 8 -> 87.5
    [1, 1, 1, 1, 0, 0, 0, 0, 0, 0],  # 4 of 8 -> 50.0
    [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],  # 8 of 8 -> 100.0
    [1, 1, 1, 1, 1, 0, 0, 0, 0, 1],  # 5 of 8 -> 62.5
]


def test_consist_syn_cv_and_ni_equal_hand_computations() -> None:
    values = [consist_syn(BEFORE, [bool(a) for a in after]) for after in AFTER_BY_SEED]
    assert values == [75.0, 87.5, 50.0, 100.0, 62.5]
    mean, std = mean_std(values)
    assert mean == pytest.approx(75.0)
    # population std: sqrt(((0)^2 + 12.5^2 + 25^2 + 25^2 + 12.5^2) / 5) = sqrt(312.5)
    assert std == pytest.approx(math.sqrt(312.5))
    assert coefficient_of_variation(values) == pytest.approx(math.sqrt(312.5) / 75.0)
    assert mean_std(values, ddof=1)[1] == pytest.approx(math.sqrt(1562.5 / 4))
    # NI against a baseline of 60%: (75 - 60) / 60 x 100 = 25%
    assert normalised_improvement(mean, 60.0) == pytest.approx(25.0)
    assert normalised_improvement(45.0, 60.0) == pytest.approx(-25.0)
    assert consist_syn([False, False], [True, True]) == 0.0
    assert coefficient_of_variation([0.0, 0.0]) == 0.0


def test_an_item_gets_the_same_replacement_whatever_else_was_correct(monkeypatch: pytest.MonkeyPatch) -> None:
    """FT and CARMA are correct on different test items; NI compares their ConsistSyn, so for one seed each
    item must be perturbed the same way in both variants (the seed follows the item, not its position
    among the originally-correct items)."""
    from types import SimpleNamespace

    from worker.core.carma.evaluate import Evaluation
    from worker.core.carma.tasks import Encoded, Example
    from worker.core.synonyms import evaluate as module

    words = ["river", "stone", "cloud", "forest", "garden", "window", "candle", "bridge"]
    mapping = {w: [f"{w}{n}" for n in range(8)] for w in words}
    texts = [" ".join(words[i:] + words[:i]) for i in range(6)]  # 8 content words each, all different
    items = [Encoded(Example(t, "x"), [1, 2], [0, 1], 3) for t in texts]
    seen: list[dict[str, str]] = []  # per call of the evaluation: original text -> perturbed text

    def fake_reencode(kept: list[Encoded], new: list[str], tokenizer: object, template: str) -> list[Encoded]:
        seen.append({item.example.text: text for item, text in zip(kept, new, strict=True)})
        return kept

    def fake_evaluate(model: object, kept: list[Encoded], *args: object) -> Evaluation:
        return Evaluation(accuracy=1.0, loss=0.0, correct=[True] * len(kept), predictions=[3] * len(kept))

    monkeypatch.setattr(module, "reencode", fake_reencode)
    monkeypatch.setattr(module, "evaluate", fake_evaluate)
    run = dict(
        model=None,
        tokenizer=SimpleNamespace(pad_token_id=0),
        template="{text}",
        items=items,
        source=JsonMapSource(mapping),
        rates=[0.25, 0.4],
        seeds=[0, 1, 2],
        stopwords=SHIPPED_STOPWORDS,
        batch_size=4,
    )
    module.synonym_intervention(correct_before=[True] * 6, **run)  # type: ignore[arg-type]
    ft = list(seen)
    seen.clear()
    outcomes = module.synonym_intervention(correct_before=[False, True, False, True, True, True], **run)  # type: ignore[arg-type]
    carma = list(seen)
    # the per-example rows: each originally-correct item under each seed, at its place among the items
    for rate, outcome, calls in ((0.25, outcomes[0], carma[:3]), (0.4, outcomes[1], carma[3:])):
        assert outcome.rate == rate
        assert [(it.seed, it.index) for it in outcome.items] == [
            (s, i) for s in (0, 1, 2) for i in (1, 3, 4, 5)
        ]
        for it in outcome.items:
            assert it.text == calls[it.seed][texts[it.index]] and it.replaced
            assert all(w in texts[it.index].split() and syn.startswith(w) for w, syn in it.replaced)
            assert (it.prediction, it.correct) == (3, True)
    assert len(ft) == len(carma) == 6  # 2 rates x 3 seeds
    for everything, fewer in zip(ft, carma, strict=True):
        assert set(fewer) == {texts[i] for i in (1, 3, 4, 5)}
        for text, perturbed in fewer.items():
            assert perturbed != text and perturbed == everything[text]
    # different seeds still draw different replacements
    assert ft[0][texts[0]] != ft[1][texts[0]]
