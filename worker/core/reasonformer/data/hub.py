"""The 11 downstream datasets of paper 001 (section 4.1, Table 1) through HuggingFace ``datasets``, for
users who have the hub. Each loader maps a dataset row to an ``Example`` with the prompt of
``prompts.py``; ``load_task`` calls ``datasets.load_dataset`` (imported lazily: ``pip install datasets``
where the hub is reachable; it is not a dependency of the project, whose machines have no hub). Hub ids are the best-known public copies and can be overridden (``path``, ``name``,
``data_files``); ReClor and WikiHop are distributed under terms that may need a manual download (pass
``data_files``). Nothing here runs in the tests except the row converters, on rows shaped like the hub's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.prompts import LETTERS, choice_prompt, question_prompt

Row = dict[str, Any]


def _letter_or_index(value: Any, labels: list[str] | None = None) -> int:
    """An answer given as a letter ('B'), a label from ``labels``, or an index (int or digit string)."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if labels is not None and text in labels:
        return labels.index(text)
    if text.isdigit():
        return int(text)
    return LETTERS.index(text.upper())


def _choice(task: str, context: str, question: str, options: list[str], answer: int) -> Example:
    options = [str(o).strip() for o in options]
    return Example(
        task=task,
        input=choice_prompt(context, question, options),
        output=options[answer],
        options=tuple(options),
        answer=answer,
    )


def reclor(row: Row) -> Example:
    return _choice(
        "reclor", row["context"], row["question"], list(row["answers"]), _letter_or_index(row["label"])
    )


def csqa(row: Row) -> Example:
    labels = list(row["choices"]["label"])
    return _choice("csqa", "", row["question"], list(row["choices"]["text"]), labels.index(row["answerKey"]))


def arc(row: Row) -> Example:
    labels = [str(x) for x in row["choices"]["label"]]
    answer = _letter_or_index(row["answerKey"], labels)
    return _choice("arc", "", row["question"], list(row["choices"]["text"]), answer)


def race(row: Row) -> Example:
    return _choice(
        "race", row["article"], row["question"], list(row["options"]), _letter_or_index(row["answer"])
    )


def dream(row: Row) -> Example:
    options = list(row["choice"])
    return _choice("dream", " ".join(row["dialogue"]), row["question"], options, options.index(row["answer"]))


def anli(row: Row) -> Example:
    """aNLI (ART): which hypothesis explains the two observations; label 1 or 2."""
    context = f"{row['observation_1']} ... {row['observation_2']}"
    options = [row["hypothesis_1"], row["hypothesis_2"]]
    return _choice("anli", context, "What happened in between?", options, int(row["label"]) - 1)


def mutual(row: Row) -> Example:
    return _choice(
        "mutual",
        row["article"],
        "Which response is the most appropriate?",
        list(row["options"]),
        _letter_or_index(row["answers"]),
    )


def wikihop(row: Row) -> Example:
    candidates = list(row["candidates"])
    return _choice(
        "wikihop",
        " ".join(row["supports"]),
        str(row["query"]).replace("_", " "),
        candidates,
        candidates.index(row["answer"]),
    )


def hellaswag(row: Row) -> Example:
    return _choice("hellaswag", row["ctx"], "What comes next?", list(row["endings"]), int(row["label"]))


def piqa(row: Row) -> Example:
    return _choice("piqa", "", row["goal"], [row["sol1"], row["sol2"]], int(row["label"]))


def hotpotqa(row: Row) -> Example:
    """HotpotQA (distractor): generative, scored by exact match (section 4.1)."""
    context = row["context"]
    passages = [
        f"{title}: {' '.join(sentences)}" for title, sentences in zip(context["title"], context["sentences"])
    ]
    return Example(
        task="hotpotqa", input=question_prompt(row["question"], " ".join(passages)), output=row["answer"]
    )


@dataclass(frozen=True)
class HubTask:
    name: str
    reasoning: str  # Table 1's "Reasoning" column
    path: str
    config: str | None
    train_split: str
    eval_split: str
    convert: Callable[[Row], Example]
    metric: str = "accuracy"  # or "exact_match"


HUB_TASKS: dict[str, HubTask] = {
    t.name: t
    for t in (
        HubTask("reclor", "Logic", "metaeval/reclor", None, "train", "validation", reclor),
        HubTask("arc", "Commonsense", "allenai/ai2_arc", "ARC-Challenge", "train", "validation", arc),
        HubTask("csqa", "Commonsense", "tau/commonsense_qa", None, "train", "validation", csqa),
        HubTask("race", "General", "ehovy/race", "all", "train", "validation", race),
        HubTask("dream", "General", "dataset-org/dream", None, "train", "validation", dream),
        HubTask("anli", "NLI", "allenai/art", None, "train", "validation", anli),
        HubTask("mutual", "Dialog", "tasksource/mutual", None, "train", "validation", mutual),
        HubTask(
            "wikihop", "MultiHop", "community-datasets/qangaroo", "wikihop", "train", "validation", wikihop
        ),
        HubTask(
            "hotpotqa",
            "MultiHop",
            "hotpotqa/hotpot_qa",
            "distractor",
            "train",
            "validation",
            hotpotqa,
            metric="exact_match",
        ),
        HubTask("hellaswag", "Commonsense", "Rowan/hellaswag", None, "train", "validation", hellaswag),
        HubTask("piqa", "Commonsense", "ybisk/piqa", None, "train", "validation", piqa),
    )
}


def _datasets() -> Any:
    try:
        import datasets
    except ImportError as exc:  # not a dependency: the project's machines have no hub
        raise RuntimeError("the paper's datasets load through HF datasets: pip install datasets") from exc
    return datasets


def load_task(
    name: str,
    split: str,
    *,
    path: str | None = None,
    config: str | None = None,
    data_files: str | list[str] | dict[str, Any] | None = None,
    limit: int | None = None,
) -> list[Example]:
    """Examples of one of the paper's datasets from the hub (or from ``data_files``), ``split`` "train"
    or "eval" (the task's evaluation split; the test labels of most are hidden)."""
    task = HUB_TASKS.get(name)
    assert task is not None, f"unknown task {name!r}; known: {sorted(HUB_TASKS)}"
    datasets = _datasets()
    hf_split = task.train_split if split == "train" else task.eval_split
    if data_files is not None:
        rows = datasets.load_dataset(path or "json", data_files=data_files, split=hf_split)
    else:
        rows = datasets.load_dataset(path or task.path, config or task.config, split=hf_split)
    out = []
    for i, row in enumerate(rows):
        if limit is not None and i >= limit:
            break
        out.append(task.convert(dict(row)))
    return out


# --- pre-training corpora on the hub: the NLI skill (section 4.2: "we directly use MNLI and SNLI") ------

NLI_LABELS = ("entailment", "neutral", "contradiction")


def nli_pretrain(row: Row) -> Example | None:
    """An SNLI/MNLI pair with appendix A's NLI prompt; unlabelled pairs (-1) give None."""
    from worker.core.reasonformer.data.prompts import pretrain_prompt

    label = int(row["label"])
    if not 0 <= label < len(NLI_LABELS):
        return None
    source, target = pretrain_prompt(
        "nli", "nli", {"premise": row["premise"], "hypothesis": row["hypothesis"], "label": NLI_LABELS[label]}
    )
    return Example(task="nli", input=source, output=target, skills=("nli",))


def load_nli_pretrain(limit: int | None = None) -> list[Example]:
    """The NLI skill's pre-training corpus: SNLI and MNLI training pairs, from the hub."""
    datasets = _datasets()

    out: list[Example] = []
    for path in ("stanfordnlp/snli", "nyu-mll/multi_nli"):
        for row in datasets.load_dataset(path, split="train"):
            example = nli_pretrain(dict(row))
            if example is not None:
                out.append(example)
            if limit is not None and len(out) >= limit:
                return out
    return out
