"""
GET  {api_url}/v4/{project}/hello-python/?name=Ada  -> 200 {"greeting": "Hello, Ada!", "runId": "run_…"}
POST {api_url}/v4/{project}/hello-python/echo       -> 200 the JSON body it was sent, and its size

Python's standard library alone. print() reaches `runlet logs --app hello-python` as it is
printed (Runlet sets PYTHONUNBUFFERED=1); secrets are environment variables (os.environ).
On a stop (idle past its cooldown, a redeploy) the server gets SIGTERM and 2 s to exit.
"""
import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: Runlet reuses its connections

    def send_json(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlsplit(self.path)
        if url.path == "/health":
            return self.send_json(200, {"ok": True})
        if url.path in ("/", "/hello"):
            name = parse_qs(url.query).get("name", ["world"])[0]
            print(f"greeting {name}")
            run_id = self.headers.get("X-Runlet-Run-Id")
            return self.send_json(200, {"greeting": f"Hello, {name}!", "runId": run_id})
        self.send_json(404, {"message": "not found"})

    def do_POST(self):
        # The body is read before any answer, a 404 too: on a kept-alive connection, a body left
        # unread is read as the start of the next request, another caller's (then a 501).
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if urlsplit(self.path).path != "/echo":
            return self.send_json(404, {"message": "not found"})
        try:
            value = json.loads(body or b"null")
        except ValueError:
            return self.send_json(400, {"message": "the body is not JSON"})
        self.send_json(200, {"echo": value, "bytes": len(body)})

    def log_message(self, format, *args):  # one line per request, on stderr
        sys.stderr.write(f"{self.command} {self.path} {args[1] if len(args) > 1 else ''}\n")


def stop(signum, frame):
    print("stopping")
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
port = int(os.environ.get("PORT", "8000"))
print(f"listening on {port}")
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
