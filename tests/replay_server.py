"""A loopback OpenAI-compatible server that replays recorded chat replies, for the openai backend's tests.

Each reply is either {"content": str, "prompt_tokens": n, "completion_tokens": m} or {"status": code}
(an HTTP error, e.g. 503 to exercise retries, 401 for authentication). Requests are recorded.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ReplayServer:
    def __init__(self, replies: list[dict], *, repeat_last: bool = True):
        self.replies = list(replies)
        self.repeat_last = repeat_last
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append({"path": self.path, "body": body,
                                        "auth": self.headers.get("Authorization")})
                if server.replies:
                    reply = server.replies.pop(0) if (len(server.replies) > 1 or not server.repeat_last) \
                        else server.replies[0]
                else:
                    reply = {"status": 500}
                if "status" in reply:
                    self.send_response(reply["status"])
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps({"error": {"message": f"replayed {reply['status']}",
                                                           "type": "replay"}}).encode())
                    return
                data = {"id": "replay", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": reply["content"]}}],
                        "usage": {"prompt_tokens": reply.get("prompt_tokens", 100),
                                  "completion_tokens": reply.get("completion_tokens", 20),
                                  "total_tokens": reply.get("prompt_tokens", 100) + reply.get("completion_tokens", 20)}}
                payload = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
