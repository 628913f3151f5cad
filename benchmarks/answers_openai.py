"""Which questions reach a language model: the on-topic decision alone gates ``generator: openai``.

    .venv/bin/python benchmarks/answers_openai.py [--sets encyclopedia,scifact,shop] [--embedder ID]

A scripted local OpenAI-compatible server (standard library, on a free loopback port) answers
every chat completion with the contract's "not in the sources" reply ({"answer": "",
"citations": []}) and counts the requests. For each development set (answers_sets.py) the
script asks ``kb.answer(..., generator="openai")`` for its answerable development questions and
for off-topic questions (answerable questions of the sets of other domains, as
answers_fit.py builds them) and reports, per set:

* answerable questions that reached the model (the issue's target: >= 98 %), of all and of
  those whose expected passage the answer's search found;
* off-topic questions declined before the call (target: >= 95 %).
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from answers_fit import DOMAIN, OFF_TOPIC, _off_topic
from answers_sets import build, load
from evidex.answer import OpenAIConfig
from evidex.kb import QUESTION_LIMITS


class ScriptedModel:
    """Replies "not in the sources" to every chat completion and counts them."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with owner._lock:
                    owner.calls += 1
                body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                   "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                       "role": "assistant",
                                       "content": json.dumps({"answer": "", "citations": []})}}],
                                   "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                             "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def config(self) -> OpenAIConfig:
        return OpenAIConfig(base_url=f"http://127.0.0.1:{self.server.server_port}/v1", model="m",
                            api_key="k", retries=1, timeout_s=10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="encyclopedia,scifact,shop")
    ap.add_argument("--embedder", default="multilingual-e5-small-int8")
    args = ap.parse_args()
    model = ScriptedModel()
    out = {}
    for name in args.sets.split(","):
        qs = load(name, "dev")
        kb = build(qs, args.embedder)
        counts = {"answerable": [0, 0], "answerable_found": [0, 0], "offtopic": [0, 0]}
        questions = [(q, "answerable") for q in qs.questions if q.split == "dev" and q.answerable]
        questions += [(q, "offtopic") for q in _off_topic(name)]
        for q, kind in questions:
            text = " ".join(q.text.split())
            before = model.calls
            kb.answer(qs.actor, text, generator="openai", openai=model.config())
            reached = model.calls > before
            if kind == "offtopic":
                counts["offtopic"][0] += not reached
                counts["offtopic"][1] += 1
                continue
            counts["answerable"][0] += reached
            counts["answerable"][1] += 1
            found = kb.search(qs.actor, text, limit=6, rerank=True, limits=QUESTION_LIMITS)
            if {h.document_id for h in found} & q.expected:
                counts["answerable_found"][0] += reached
                counts["answerable_found"][1] += 1
        out[name] = {k: {"n": n, "rate": round(ok / n, 4) if n else None} for k, (ok, n) in counts.items()}
        print(name, json.dumps(out[name]), flush=True)
    print(json.dumps({"embedder": args.embedder, "off_topic_per_set": OFF_TOPIC,
                      "domains": DOMAIN, "sets": out}, indent=1))
    model.server.shutdown()


if __name__ == "__main__":
    main()
