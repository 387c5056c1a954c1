"""ctx.log_examples: rows numbered in logging order per table, buffered and sent in
batches, never dropped or duplicated while a sink fails, checked where the kind logs them, redacted,
written to local files, posted by the API sink with their idx and attempt, and a training's rows in
the parent's table under its prefix."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.worker.test_tracking import FlakySink, _context
from worker.tracking import ApiSink, LocalSink, tracked
from worker.tracking.tracked import EXAMPLE_BATCH
from worker.tracking.training import TrainingContext
from worker.tracking.writer import ExampleRow


class ExampleSink(FlakySink):
    def __init__(self, failures: int = 0) -> None:
        super().__init__(failures)
        self.example_batches: list[tuple[str, list[ExampleRow]]] = []

    def write_examples(self, table: str, rows: Sequence[ExampleRow]) -> None:
        self._maybe_fail()
        self.example_batches.append((table, list(rows)))


def test_rows_are_numbered_batched_and_survive_a_failing_sink(tmp_path: Path) -> None:
    sink = ExampleSink(failures=3)
    ctx = _context(tmp_path, sink)
    n = 2 * EXAMPLE_BATCH + 37
    for i in range(n):  # one row at a time, as a kind grading example after example
        ctx.log_examples("gradings", [{"key": f"c{i}", "points": [1, 0], "reply": f"text {i}"}])
    ctx.log_examples("flips", [{"key": "a", "before": "x"}, {"key": "b", "before": "y"}])
    ctx.close("succeeded")
    sizes = [(table, len(rows)) for table, rows in sink.example_batches]
    assert sizes == [("gradings", EXAMPLE_BATCH), ("gradings", EXAMPLE_BATCH), ("gradings", 37), ("flips", 2)]
    rows = [row for table, batch in sink.example_batches if table == "gradings" for row in batch]
    assert [r.idx for r in rows] == list(range(n)) and [r.key for r in rows] == [f"c{i}" for i in range(n)]
    assert rows[5].data == {"points": [1, 0], "reply": "text 5"}  # the key is the row's, not its data's
    flips = sink.example_batches[-1][1]
    assert [(r.idx, r.key, r.data) for r in flips] == [(0, "a", {"before": "x"}), (1, "b", {"before": "y"})]


def test_flush_sends_a_partial_batch_and_a_checkpoint_flushes_first(tmp_path: Path) -> None:
    sink = ExampleSink()
    ctx = _context(tmp_path, sink)
    ctx.log_examples("t", [{"key": "one"}])
    assert sink.example_batches == []  # buffered: fewer rows than a batch
    ctx.save_checkpoint({"w": 1}, 1)
    assert [(t, [r.key for r in rows]) for t, rows in sink.example_batches] == [("t", ["one"])]
    ctx.close("succeeded")


@pytest.mark.parametrize(
    ("table", "rows", "message"),
    [
        ("bad name", [{"key": "a"}], "table's name"),
        ("t", [{"no_key": 1}], "needs a 'key'"),
        ("t", [{"key": ""}], "needs a 'key'"),
        ("t", [{"key": "big", "text": "x" * 70_000}], "at most 65,536"),
        ("t", [{"key": "a"}, {"key": "a"}], "logged twice"),
    ],
)
def test_bad_rows_fail_where_the_kind_logs_them(tmp_path: Path, table: str, rows: Any, message: str) -> None:
    ctx = _context(tmp_path, ExampleSink())
    with pytest.raises(ValueError, match=message):
        ctx.log_examples(table, rows)
    ctx.close("succeeded")


def test_rows_past_the_platforms_row_cap_are_not_kept_and_the_runs_log_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API refuses a row past MAX_EXAMPLE_ROWS (idx < cap): the context keeps the first rows up to the
    cap, sends nothing past it, and the run goes on with a log line at the first row dropped and one at the
    end saying how many were kept (the cap made small here: the real one is 1,000,000 rows)."""
    monkeypatch.setattr(tracked, "MAX_EXAMPLE_ROWS", 3)
    sink = ExampleSink()
    ctx = _context(tmp_path, sink)
    ctx.log_examples("windows", [{"key": f"w{i}"} for i in range(3)])  # at the cap: every row kept
    ctx.log_examples("windows", [{"key": "w3"}, {"key": "w4"}])
    ctx.log_examples("other", [{"key": "a"}])  # the cap is per table
    ctx.close("succeeded")
    assert [(t, [r.key for r in rows]) for t, rows in sink.example_batches] == [
        ("windows", ["w0", "w1", "w2"]),
        ("other", ["a"]),
    ]
    assert sink.lines == [
        "table 'windows' holds at most 3 rows (the platform's cap): the rows from 'w3' on are not kept",
        "table 'windows': kept 3 rows, 2 past the cap not kept",
    ]


def test_rows_are_json_copies_with_the_runs_secrets_masked(tmp_path: Path) -> None:
    sink = ExampleSink()
    ctx = _context(tmp_path, sink)
    ctx.redactor.add("sk-secret-0123456789")
    row = {"key": "k", "reply": "the key is sk-secret-0123456789", "tags": ("a", "b")}
    ctx.log_examples("t", [row])
    row["reply"] = "changed after logging"
    ctx.close("succeeded")
    logged = sink.example_batches[0][1][0].data
    assert "sk-secret-0123456789" not in json.dumps(logged) and logged["reply"].startswith("the key is ")
    assert logged["tags"] == ["a", "b"]


def test_local_sink_writes_a_jsonl_file_per_table(tmp_path: Path) -> None:
    sink = LocalSink(tmp_path / "out")
    sink.write_examples("gradings", [ExampleRow(0, "a", {"x": 1}), ExampleRow(1, "b", {"x": 2})])
    lines = (tmp_path / "out" / "examples" / "gradings.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"idx": 0, "key": "a", "data": {"x": 1}},
        {"idx": 1, "key": "b", "data": {"x": 2}},
    ]


def test_api_sink_posts_rows_with_their_idx_and_attempt() -> None:
    class Client:
        def __init__(self) -> None:
            self.calls: list[tuple[int, str, list[dict[str, Any]], int | None]] = []

        def post_examples(
            self, run_id: int, table: str, rows: list[dict[str, Any]], *, attempt: int | None = None
        ) -> dict[str, Any]:
            self.calls.append((run_id, table, rows, attempt))
            return {}

    client = Client()
    sink = ApiSink(client, run_id=4, attempt=3)  # type: ignore[arg-type]
    sink.write_examples("t", [ExampleRow(7, "k", {"score": float("nan"), "ok": True})])
    assert client.calls == [(4, "t", [{"idx": 7, "key": "k", "data": {"score": None, "ok": True}}], 3)]


def test_a_trainings_rows_go_to_the_parents_table_under_its_prefix(tmp_path: Path) -> None:
    sink = ExampleSink()
    parent = _context(tmp_path, sink)
    child = TrainingContext(
        parent, index=0, count=2, out_dir=tmp_path / "k2", prefix="train/k2/", label="training k=2", tag="k=2"
    )
    child.log_examples("items", [{"key": "a", "v": 1}])
    parent.close("succeeded")
    assert [(t, [r.key for r in rows]) for t, rows in sink.example_batches] == [("train.k2.items", ["a"])]
