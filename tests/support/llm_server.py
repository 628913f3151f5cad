"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (a real HTTP server): the
answer tests script its replies and read the requests evidex sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evidex import OpenAIConfig

Reply = tuple[int, Any] | Callable[[dict[str, Any]], tuple[int, Any]]


def completion(content: Any) -> tuple[int, Any]:
    """A 200 chat completion whose assistant message carries ``content`` (str, or JSON-dumped)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return 200, {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class FakeLLM:
    """Replies are consumed in order; the last one repeats. A reply may be a function of the
    decoded request (so it can cite whichever source id holds a given passage)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._replies: list[Reply] = [(500, {"error": "no reply scripted"})]
        self._lock = threading.Lock()
        self.delay = 0.0
        #: Set to let every delayed reply go at once (a test that must not depend on the
        #: machine's speed holds replies far past its deadline, then lets them go).
        self.release = threading.Event()
        #: Replies sent, whole.
        self.replied = 0
        llm = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                req = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                       "raw": raw.decode("utf-8", "replace"), "body": body}
                with llm._lock:
                    llm.requests.append(req)
                    reply = llm._replies.pop(0) if len(llm._replies) > 1 else llm._replies[0]
                if llm.delay:
                    llm.release.wait(llm.delay)
                status, payload = reply(body) if callable(reply) else reply
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    with llm._lock:
                        llm.replied += 1
                except OSError:  # the client gave up (timeout tests)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()

    def script(self, *replies: Reply) -> None:
        self._replies = list(replies)

    def config(self, **overrides: Any) -> OpenAIConfig:
        values: dict[str, Any] = {"base_url": f"http://127.0.0.1:{self.port}/v1", "model": "gpt-4o-mini",
                                  "api_key": "k", "retries": 1, "timeout_s": 5}
        values.update(overrides)
        return OpenAIConfig(**values)

    def sources(self, i: int = -1) -> list[dict[str, Any]]:
        return json.loads(self.requests[i]["body"]["messages"][1]["content"])["sources"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
