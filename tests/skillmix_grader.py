"""A scripted grader served over real HTTP that speaks the OpenAI chat-completions API (a
``http.server`` in a thread): it grades prompts of ``worker.core.skillmix.rubric.grading_prompt`` with the
rule-based grader, answers students' prompts with a fixed text, checks the bearer key, and can be told to
stall (time out) or answer garbage for the first requests of each prompt, to show retries."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from worker.core.skillmix.rubric import TEXT_OPEN
from worker.core.skillmix.rule_grader import rule_points

STUDENT_REPLY = "Answer: Is gardening not a quiet joy, like a slow song of seeds?\nExplanation: a question."


@dataclass
class Script:
    key: str
    garbage_first: int = 0  # the first N requests of each prompt get a garbage answer
    stall_first: int = 0  # the first N requests of each prompt stall for stall_s seconds
    stall_s: float = 2.0
    always_garbage: bool = False
    table_style: str = "pipes"  # pipes | bare | yesno | overall_no_topic
    seen: Counter[str] = field(default_factory=Counter)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def table(prompt: str, style: str) -> str:
    rows = rule_points(prompt)
    if style == "bare":  # no outer pipes, other header, stray text around
        lines = ["Sure! Here's the grading table:", "Criteria | Points Earned", "--- | ---"]
        lines += [f"{label} | {point}" for label, point in rows]
        lines += [f"Total Points Earned | {sum(p for _, p in rows)}", "Explanation: done."]
    elif style == "yesno":
        lines = ["| # | Criterion | Met? | Score |", "|:-:|:--|:--:|--:|"]
        lines += [f"| {i} | {label} | {'yes' if p else 'no'} | {p} |" for i, (label, p) in enumerate(rows, 1)]
    elif style == "overall_no_topic":  # the topic's row left out, a summary row in its place at the end
        kept = [(label, p) for label, p in rows if not label.startswith("Pertains to")]
        lines = ["| Criterion | Points |", "|---|---|", *[f"| {label} | {p} |" for label, p in kept]]
        lines.append(f"| Overall | {sum(p for _, p in kept)} |")
    else:
        lines = ["| Criterion | Points |", "|---|---|", *[f"| {label} | {p} |" for label, p in rows]]
    return "\n".join(lines)


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            request = json.loads(self.rfile.read(length))
            if self.headers.get("Authorization") != f"Bearer {script.key}":
                self._send(401, b'{"error": {"message": "bad key"}}')
                return
            prompt = request["messages"][-1]["content"]
            with script.lock:
                script.requests.append(request)
                script.seen[prompt] += 1
                n = script.seen[prompt]
            if n <= script.stall_first:
                time.sleep(script.stall_s)
            if script.always_garbage or n <= script.garbage_first:
                self._send(200, b"<html>upstream hiccup</html>")
                return
            content = table(prompt, script.table_style) if TEXT_OPEN in prompt else STUDENT_REPLY
            body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
            self._send(200, json.dumps(body).encode())

    return Handler


@contextmanager
def serve(script: Script) -> Iterator[str]:
    """The server's base URL (…/v1) while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
