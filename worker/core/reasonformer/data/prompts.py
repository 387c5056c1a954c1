"""Prompt templates. Pre-training: appendix A (Figure 4) of paper 001, one per skill task. Downstream:
section 3's question template ("The question is {Question}. Please give the answer:"), with the options
listed for multiple choice as in the Figure 3 case studies ("Question: ... Options: A. ... B. ...").
"""

from __future__ import annotations

from collections.abc import Sequence

SEP = "[SEP]"

# --- pre-training (appendix A, Figure 4): (skill, template name) -> input template, output field ------

PRETRAIN_TEMPLATES: dict[tuple[str, str], tuple[str, str]] = {
    ("qa", "qa"): ("{context} [SEP] give me the answer of {question}", "{answer}"),
    ("logic", "logic"): ("{context} [SEP] give me the missing statement", "{mask}"),
    ("nli", "nli"): (
        "{premise} [SEP] {hypothesis} give me the relation between the first and second sentences",
        "{label}",
    ),
    ("ner", "ner_typed"): ("{context} [SEP] give me the mentions with types {type_str}", "{mention_str}"),
    ("ner", "ner_all"): ("{context} [SEP] give me all mentions", "{mention_str}"),
    ("ner", "ner_types"): ("{context} [SEP] give me the types of mentions {mention_str}", "{type_str}"),
    ("fact", "fact"): ("{head} {relation} [SEP] give me the missing entity:", "{tail}"),
}


def pretrain_prompt(skill: str, template: str, fields: dict[str, str]) -> tuple[str, str]:
    """(input, output) of a pre-training instance from its raw fields, by appendix A's template."""
    key = (skill, template)
    assert key in PRETRAIN_TEMPLATES, f"no appendix-A template {key}; known: {sorted(PRETRAIN_TEMPLATES)}"
    source, target = PRETRAIN_TEMPLATES[key]
    try:
        return source.format(**fields), target.format(**fields)
    except KeyError as exc:
        raise ValueError(f"template {key} needs field {exc.args[0]!r}; got {sorted(fields)}") from None


# --- downstream ------------------------------------------------------------------------------------

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def question_prompt(question: str, context: str = "") -> str:
    """Section 3: "The question is {Question}. Please give the answer:" after the context, if any."""
    q = f"The question is {question.strip()} Please give the answer:"
    return f"{context.strip()} {SEP} {q}" if context.strip() else q


def choice_prompt(context: str, question: str, options: Sequence[str]) -> str:
    """A multiple-choice input: context, question and the options listed "A. ... B. ..." (Figure 3)."""
    listed = " ".join(f"{LETTERS[i]}. {o.strip()}" for i, o in enumerate(options))
    return f"{question_prompt(question, context)} Options: {listed}"
