"""Word spans from a fast tokenizer's character offsets, the same way for every tokenizer family.

CARMA's positives are the tokens of one word (paper 003, section 3.2, eq. 5: "related tokens") and CAP
pools the tokens of one word (appendix C.1, "inverting the model tokeniser function"). A word here is a
whitespace-delimited run of characters of the text, as in the reference code (REFERENCE.md, CARMA): the
reference finds word starts by the tokenizer's prefix characters (``Ġ``, ``▁``), which differ by family;
character offsets (``return_offsets_mapping``) give the same answer for byte-level BPE (GPT-2, Llama 3,
Qwen), sentencepiece (Gemma, Llama 2) and wordpiece alike.

- A token belongs to the word that holds its first non-space character.
- A token of whitespace only (a lone ``▁``, a newline) belongs to the word that starts where it ends, or
  to no word when none does.
- Special tokens (BOS, EOS, chat markers: empty offsets or the special-tokens mask) belong to no word:
  the reference folds BOS into the first word, making a fake two-token word (a documented difference).

Word ids are -1 for "no word"; padding is never a word.
"""

from __future__ import annotations

from collections.abc import Sequence

NO_WORD = -1


def whitespace_words(text: str) -> list[tuple[int, int]]:
    """Character spans ``[start, end)`` of the maximal non-whitespace runs of ``text``."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, ch in enumerate(text):
        if ch.isspace():
            if start is not None:
                spans.append((start, i))
                start = None
        elif start is None:
            start = i
    if start is not None:
        spans.append((start, len(text)))
    return spans


def word_ids_from_offsets(
    text: str,
    offsets: Sequence[tuple[int, int]],
    special: Sequence[bool] | None = None,
) -> list[int]:
    """One word index per token (``NO_WORD`` for special and separator tokens).

    text: the string that was tokenised; offsets: the tokenizer's ``(start, end)`` character offsets per
    token; special: per token, True for special tokens (``return_special_tokens_mask``), whose offsets
    some tokenizers leave non-empty.
    """
    words = whitespace_words(text)
    word_at = [NO_WORD] * (len(text) + 1)  # character -> word index; whitespace -> NO_WORD
    starts_at = [NO_WORD] * (len(text) + 1)  # character -> index of the word that starts there
    for w, (s, e) in enumerate(words):
        starts_at[s] = w
        for c in range(s, e):
            word_at[c] = w
    ids: list[int] = []
    for t, (s, e) in enumerate(offsets):
        if (special is not None and special[t]) or e <= s:
            ids.append(NO_WORD)
            continue
        first = next((c for c in range(s, min(e, len(text))) if not text[c].isspace()), None)
        if first is not None:
            ids.append(word_at[first])
        else:  # whitespace only: it prefixes the word that starts right after it, if any
            ids.append(starts_at[min(e, len(text))])
    return ids


def group_ids(word_ids: Sequence[int], length: int) -> list[int]:
    """CAP's groups over the first ``length`` (non-pad) tokens: the tokens of one word share a group,
    every token of no word is a group of its own; groups are numbered 0.. in order. A word's tokens are
    contiguous (offsets are monotone), which the assert checks."""
    groups: list[int] = []
    seen: set[int] = set()
    last_word = None
    for t in range(length):
        w = word_ids[t]
        if w != NO_WORD and w == last_word:
            groups.append(groups[-1])
            continue
        assert w == NO_WORD or w not in seen, f"word {w} is not contiguous in {list(word_ids[:length])}"
        seen.add(w)
        groups.append(groups[-1] + 1 if groups else 0)
        last_word = w
    return groups
