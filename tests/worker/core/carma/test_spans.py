"""Word spans from offsets: right for the real GPT-2, Llama 3, Qwen and Gemma tokenizers on words that
split into several tokens, and for whitespace and special tokens."""

from __future__ import annotations

import pytest

from worker.core.carma.spans import NO_WORD, group_ids, whitespace_words, word_ids_from_offsets
from worker.core.models.tokenizers import FAMILIES, family_tokenizer

TEXT = 'The antidisestablishmentarianism of photosynthesis is called a "'
WORDS = TEXT.split()


def words_of(family: str, text: str) -> tuple[list[str], list[int]]:
    tok = family_tokenizer(family)  # type: ignore[arg-type]
    enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids = word_ids_from_offsets(text, enc["offset_mapping"], [bool(s) for s in enc["special_tokens_mask"]])
    return tok.convert_ids_to_tokens(enc["input_ids"]), ids


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.heavy
def test_every_token_of_a_split_word_maps_to_that_word(family: str) -> None:
    tokens, ids = words_of(family, TEXT)
    tok = family_tokenizer(family)  # type: ignore[arg-type]
    enc = tok(TEXT, return_offsets_mapping=True)
    # rebuild each word from its tokens' character spans: exactly the whitespace words, in order
    rebuilt: dict[int, str] = {}
    for (s, e), w in zip(enc["offset_mapping"], ids):
        if w != NO_WORD:
            rebuilt[w] = rebuilt.get(w, "") + TEXT[s:e]
    assert [rebuilt[w].strip() for w in sorted(rebuilt)] == WORDS, (family, tokens, ids)
    long_word = WORDS.index("antidisestablishmentarianism")
    assert ids.count(long_word) >= 3, f"{family}: {tokens}"  # a word that splits into several tokens
    assert ids.count(WORDS.index("photosynthesis")) >= 1
    assert ids == sorted(i for i in ids if i != NO_WORD) or NO_WORD in ids  # monotone words


@pytest.mark.heavy
def test_special_tokens_belong_to_no_word() -> None:
    tokens, ids = words_of("gemma3", TEXT)  # Gemma's tokenizer adds <bos>
    assert tokens[0] == "<bos>" and ids[0] == NO_WORD
    assert NO_WORD not in ids[1:]


def test_a_lone_whitespace_token_prefixes_the_next_word() -> None:
    text = "ab  cd"
    # tokens: "ab", " " (a whitespace-only token ending where "cd" starts), "cd"
    assert word_ids_from_offsets(text, [(0, 2), (2, 4), (4, 6)]) == [0, 1, 1]
    assert word_ids_from_offsets("ab ", [(0, 2), (2, 3)]) == [0, NO_WORD]
    assert word_ids_from_offsets(text, [(0, 0), (0, 2), (4, 6)], [True, False, False]) == [NO_WORD, 0, 1]


def test_wordpiece_style_offsets_give_the_same_words() -> None:
    # a wordpiece tokenizer: "photo ##syn ##thesis is": offsets without the leading space
    text = "photosynthesis is"
    assert word_ids_from_offsets(text, [(0, 5), (5, 8), (8, 14), (15, 17)]) == [0, 0, 0, 1]
    assert whitespace_words(" a  bc ") == [(1, 2), (4, 6)]


def test_group_ids_keep_words_together_and_specials_alone() -> None:
    assert group_ids([NO_WORD, 0, 0, 1, NO_WORD, NO_WORD, 2, 2], 8) == [0, 1, 1, 2, 3, 4, 5, 5]
    assert group_ids([0, 0, 1, NO_WORD], 3) == [0, 0, 1]
