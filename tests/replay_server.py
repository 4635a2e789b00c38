"""A loopback OpenAI-compatible server that replays recorded chat replies, for the openai backend's tests.

Each reply is {"content": str, "prompt_tokens": n, "completion_tokens": m}, optionally with
"tool_calls": [{"name": str, "arguments": object or raw str}] (an assistant turn calling tools; raw
strings replay malformed arguments as a model sent them) and "finish_reason"; or {"status": code,
"message": str} (an HTTP error: 503 to exercise retries, 401 for authentication). `tools=False` makes
a server without tool support: a request carrying `tools` is answered 400 the way vLLM answers it,
without using up a reply. A recorded multi-turn transcript (tests/data/transcripts/*.json: {"replies":
[...]}) loads with `from_transcript`. Requests are recorded.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


NO_TOOLS = ('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set '
            '(replayed: this server takes no tools)')


def _tool_calls(reply: dict, turn: int) -> list[dict]:
    calls = []
    for i, c in enumerate(reply.get("tool_calls") or []):
        args = c.get("arguments", {})
        calls.append({"id": c.get("id", f"call_{turn}_{i}"), "type": "function",
                      "function": {"name": c["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}})
    return calls


class ReplayServer:
    def __init__(self, replies: list[dict], *, repeat_last: bool = True, tools: bool = True):
        self.replies = list(replies)
        self.repeat_last = repeat_last
        self.tools = tools
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append({"path": self.path, "body": body,
                                        "auth": self.headers.get("Authorization")})
                if body.get("tools") and not server.tools:
                    return self._error(400, NO_TOOLS)
                if server.replies:
                    reply = server.replies.pop(0) if (len(server.replies) > 1 or not server.repeat_last) \
                        else server.replies[0]
                else:
                    reply = {"status": 500}
                if "status" in reply:
                    return self._error(reply["status"], reply.get("message", f"replayed {reply['status']}"))
                message = {"role": "assistant", "content": reply.get("content")}
                calls = _tool_calls(reply, len(server.requests))
                if calls:
                    message["tool_calls"] = calls
                finish = reply.get("finish_reason", "tool_calls" if calls else "stop")
                data = {"id": "replay", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
                        "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                        "usage": {"prompt_tokens": reply.get("prompt_tokens", 100),
                                  "completion_tokens": reply.get("completion_tokens", 20),
                                  "total_tokens": reply.get("prompt_tokens", 100) + reply.get("completion_tokens", 20)}}
                payload = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _error(self, status: int, message: str):
                payload = json.dumps({"error": {"message": message, "type": "replay", "code": status}}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @classmethod
    def from_transcript(cls, path, **kw) -> "ReplayServer":
        """A server replaying a recorded transcript file ({"replies": [...]}), each reply once."""
        data = json.loads(Path(path).read_text())
        return cls(data["replies"], **{"repeat_last": False, **kw})

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
