#!/usr/bin/env python3
"""A git server on loopback for the tools that reconcile from git (Flux's source-controller,
Argo CD's repo server): git's own smart HTTP (`git http-backend`, run as a CGI program per
request) over the bare repositories in ROOT, at http://127.0.0.1:PORT/<name>.git.

Smart HTTP because the tools' git clients (go-git, the git CLI) speak it and Flux's
GitRepository accepts only http(s) and ssh URLs; read-only: pushes are refused
(http.receivepack is off), the suites commit into the bare repositories directly.

usage: git-server.py ROOT PORT   (serves until killed; a line on stdout once it listens)
"""

import http.server
import os
import subprocess
import sys
import urllib.parse

BACKEND = subprocess.run(
    ["git", "--exec-path"], capture_output=True, text=True, check=True
).stdout.strip() + "/git-http-backend"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self):
        self.cgi()

    def do_POST(self):
        self.cgi()

    def cgi(self):
        url = urllib.parse.urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.server.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "safe.directory",
            "GIT_CONFIG_VALUE_0": "*",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": urllib.parse.unquote(url.path),
            "QUERY_STRING": url.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(length),
            "REMOTE_ADDR": self.client_address[0],
            "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        done = subprocess.run([BACKEND], input=body, capture_output=True, env=env)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = done.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        if done.returncode != 0:
            sys.stderr.write(done.stderr.decode(errors="replace"))

    def log_message(self, fmt, *args):
        sys.stderr.write("git-server: " + (fmt % args) + "\n")


def main():
    root, port = os.path.realpath(sys.argv[1]), int(sys.argv[2])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.root = root
    print(f"git-server: serving {root} on http://127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
