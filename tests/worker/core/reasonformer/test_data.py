"""Data: the synthetic compositional-skills suite, appendix-A prompts, JSONL and hub row loaders, few-shot
subsampling, batching with per-step skill labels, and exactly resumable streams."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from worker.core.reasonformer.data import hub
from worker.core.reasonformer.data.batching import EpochBatches, collate, skill_label_row
from worker.core.reasonformer.data.example import Example
from worker.core.reasonformer.data.fewshot import subsample
from worker.core.reasonformer.data.jsonl import load_downstream_jsonl, load_pretrain_jsonl
from worker.core.reasonformer.data.prompts import choice_prompt, pretrain_prompt
from worker.core.reasonformer.data.synthetic import (
    LOOKUP_TABLE,
    PRIMITIVE_NAMES,
    ExampleStream,
    SkillSuite,
    apply,
    order_identifiable,
)
from worker.core.reasonformer.data.tokenizer import SymbolTokenizer, load_tokenizer


def test_primitives_and_composition_order() -> None:
    x = (3, 1, 9)
    assert apply(["reverse"], x) == (9, 1, 3) and apply(["sort"], x) == (1, 3, 9)
    assert apply(["shift"], x) == (4, 2, 0) and apply(["rotate"], x) == (1, 9, 3)
    assert apply(["lookup"], x) == (LOOKUP_TABLE[3], LOOKUP_TABLE[1], LOOKUP_TABLE[9])
    assert apply(["sort", "reverse"], x) == (9, 3, 1) != apply(["reverse", "sort"], x)
    assert sorted(LOOKUP_TABLE) == list(range(10))


def test_programs_are_order_identifiable_and_held_out_ones_never_pretrained() -> None:
    suite = SkillSuite()
    probe = [tuple(int(v) for v in np.random.default_rng(i).integers(0, 10, 4)) for i in range(100)]
    assert not order_identifiable(("reverse", "shift"), probe)  # they commute
    programs = suite.train_programs + suite.heldout_programs
    assert len(set(programs)) == len(programs) and set(suite.train_programs).isdisjoint(
        suite.heldout_programs
    )
    assert {len(p) for p in suite.heldout_programs} == {2, 3}
    assert all(order_identifiable(p, probe, threshold=0.3) for p in programs)
    rng = np.random.default_rng(0)
    pretrain = [suite.pretrain_example(rng) for _ in range(500)]
    assert not {e.skills for e in pretrain} & set(suite.heldout_programs)
    assert {e.skills for e in pretrain if len(e.skills) == 1} == {(s,) for s in PRIMITIVE_NAMES}
    e = suite.instance(rng, ("sort", "reverse"))
    digits = tuple(int(v) for v in e.input.split(":")[1].split())
    assert e.output == " ".join(map(str, apply(("sort", "reverse"), digits)))
    assert e.input.startswith("sort then reverse :")


def test_choice_instances_list_distinct_options_with_the_right_answer() -> None:
    suite = SkillSuite()
    rng = np.random.default_rng(1)
    for _ in range(20):
        e = suite.downstream("choose2", rng)
        assert len(set(e.options)) == len(e.options) >= 3 and e.output == e.options[e.answer]
        assert e.skills in suite.heldout_programs


def test_streams_resume_exactly_and_skip_reserved_inputs() -> None:
    suite = SkillSuite()
    reserved = {e.input for e in suite.pretrain_eval(np.random.default_rng(5), 4)}
    a = ExampleStream(suite.pretrain_example, 0, reserved)
    a.take(7)
    state = a.state_dict()
    after = a.take(5)
    b = ExampleStream(suite.pretrain_example, 99, reserved)
    b.load_state_dict(state)
    assert b.take(5) == after
    assert not {e.input for e in a.take(300)} & reserved
    make = lambda ex: ex  # noqa: E731
    e1 = EpochBatches([Example("t", str(i), "o") for i in range(10)], 4, 0, make)  # type: ignore[arg-type]
    first = [e1.next_batch() for _ in range(3)]  # crosses an epoch boundary
    e2 = EpochBatches([Example("t", str(i), "o") for i in range(10)], 4, 0, make)  # type: ignore[arg-type]
    e2.load_state_dict(e1.state_dict())
    assert e1.next_batch() == e2.next_batch() and len({x.input for x in itertools.chain(*first[:2])}) == 8


def test_skill_labels_per_step_and_collation() -> None:
    skills = ["a", "b", "general"]
    assert skill_label_row(["b"], skills, 3) == [1, 1, 1]  # one skill: every step (the paper)
    assert skill_label_row(["b", "a"], skills, 3) == [1, 0, -1]  # a composite: its order
    assert skill_label_row([], skills, 2) == [-1, -1]
    with pytest.raises(AssertionError, match="not among"):
        skill_label_row(["zz"], skills, 2)
    tok = SymbolTokenizer(["x", "y"])
    batch = collate(
        [Example("t", "x y", "y", skills=("a",)), Example("t", "x", "x y x", skills=("b", "a"))],
        tok,
        skills=skills,
        depth=2,
    )
    assert batch.input_ids.tolist() == [[3, 4, 1], [3, 1, 0]]
    assert batch.attention_mask.tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch.labels.tolist() == [[4, 1, -100, -100], [3, 4, 3, 1]]
    assert batch.skill_labels.tolist() == [[0, 0], [1, 0]]


def test_symbol_tokenizer_round_trip(tmp_path: Path) -> None:
    tok = SymbolTokenizer(["sort", ":", "1", "2"])
    ids = tok.encode("sort : 2 1 9")
    assert ids[-1] == tok.eos_token_id and tok.decode(ids) == "sort : 2 1 <unk>"
    tok.save(tmp_path)
    assert load_tokenizer(tmp_path).encode("sort : 2 1") == tok.encode("sort : 2 1")


def test_appendix_a_prompts() -> None:
    assert pretrain_prompt(
        "fact", "fact", {"head": "Knut Wijkmark", "relation": "child", "tail": "Nils"}
    ) == (
        "Knut Wijkmark child [SEP] give me the missing entity:",
        "Nils",
    )
    source, target = pretrain_prompt("nli", "nli", {"premise": "P.", "hypothesis": "H.", "label": "neutral"})
    assert (
        source == "P. [SEP] H. give me the relation between the first and second sentences"
        and target == "neutral"
    )
    with pytest.raises(ValueError, match="needs field 'question'"):
        pretrain_prompt("qa", "qa", {"context": "c", "answer": "a"})
    assert choice_prompt("ctx", "Why?", ["x", "y"]) == (
        "ctx [SEP] The question is Why? Please give the answer: Options: A. x B. y"
    )


def test_jsonl_loaders(tmp_path: Path) -> None:
    pre = tmp_path / "pre.jsonl"
    pre.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"skill": "logic", "input": "a [SEP] give me the missing statement", "output": "b"},
                {
                    "skill": "qa",
                    "template": "qa",
                    "fields": {"context": "c", "question": "q?", "answer": "x"},
                },
                {"skill": ["fact", "logic"], "input": "i", "output": "o"},
            ]
        )
    )
    rows = load_pretrain_jsonl(pre)
    assert [r.skills for r in rows] == [("logic",), ("qa",), ("fact", "logic")]
    assert rows[1].input == "c [SEP] give me the answer of q?" and rows[1].output == "x"
    down = tmp_path / "mytask.jsonl"
    down.write_text(
        json.dumps({"context": "c", "question": "q", "options": ["x", "y"], "answer": "y"})
        + "\n"
        + json.dumps({"input": "i", "output": "o"})
        + "\n"
    )
    mc, gen = load_downstream_jsonl(down)
    assert (
        mc.task == "mytask"
        and mc.answer == 1
        and mc.output == "y"
        and gen.output == "o"
        and not gen.is_choice
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"context": "c", "question": "q", "options": ["x"], "answer": 3}) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        load_downstream_jsonl(bad)


def test_hub_rows_of_the_papers_datasets_convert() -> None:
    """Rows shaped like the hub's (no network): every converter gives the right option."""
    rows = {
        "reclor": {"context": "c", "question": "q", "answers": ["a", "b", "c", "d"], "label": 2},
        "csqa": {"question": "q", "choices": {"label": ["A", "B"], "text": ["x", "y"]}, "answerKey": "B"},
        "arc": {
            "question": "q",
            "choices": {"label": ["1", "2", "3"], "text": ["x", "y", "z"]},
            "answerKey": "3",
        },
        "race": {"article": "art", "question": "q", "options": ["w", "x", "y", "z"], "answer": "C"},
        "dream": {"dialogue": ["M: hi", "W: yo"], "question": "q", "choice": ["x", "y", "z"], "answer": "z"},
        "anli": {
            "observation_1": "o1",
            "observation_2": "o2",
            "hypothesis_1": "h1",
            "hypothesis_2": "h2",
            "label": 2,
        },
        "mutual": {"article": "dialog", "options": ["w", "x", "y", "z"], "answers": "B"},
        "wikihop": {"query": "country_of x", "supports": ["s1"], "candidates": ["p", "q"], "answer": "q"},
        "hellaswag": {"ctx": "c", "endings": ["e0", "e1", "e2", "e3"], "label": "3"},
        "piqa": {"goal": "g", "sol1": "s1", "sol2": "s2", "label": 0},
        "hotpotqa": {
            "question": "q?",
            "answer": "Kansas Song",
            "context": {"title": ["T"], "sentences": [["s1.", "s2."]]},
        },
    }
    expected = {
        "reclor": "c",
        "csqa": "y",
        "arc": "z",
        "race": "y",
        "dream": "z",
        "anli": "h2",
        "mutual": "x",
        "wikihop": "q",
        "hellaswag": "e3",
        "piqa": "s1",
        "hotpotqa": "Kansas Song",
    }
    assert set(rows) == set(hub.HUB_TASKS)
    for name, row in rows.items():
        example = hub.HUB_TASKS[name].convert(row)
        assert example.task == name and example.output == expected[name], name
        assert example.is_choice == (name != "hotpotqa")
    assert hub.nli_pretrain({"premise": "p", "hypothesis": "h", "label": -1}) is None
    assert hub.nli_pretrain({"premise": "p", "hypothesis": "h", "label": 2}).output == "contradiction"  # type: ignore[union-attr]


def test_few_shot_subsample_by_count_or_fraction() -> None:
    examples = [Example(t, f"{t}{i}", "o") for t in ("a", "b") for i in range(10)]
    by_count = subsample(examples, count=3, seed=1)
    assert [e.task for e in by_count].count("a") == 3 and len(by_count) == 6
    assert subsample(examples, count=3, seed=1) == by_count != subsample(examples, count=3, seed=2)
    assert len(subsample(examples, fraction=0.5, seed=0)) == 10
    with pytest.raises(AssertionError):
        subsample(examples, count=1, fraction=0.5)
