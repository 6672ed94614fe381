#!/usr/bin/env python3
"""A validating webhook that allows every request and writes one JSON line per write it sees:
operation, kind, name, namespace, the writer's username, whether it was a dry run, and the new
and the old object's labels, annotations (but kubectl.kubernetes.io/last-applied-configuration,
and values cut to 200 characters) and ownerReferences. It is how the suites know what a real
tool wrote, as whom, and with which owner: the OLM v0 suites (scripts/cluster-olm-v0.sh,
registered for olm-operator's writes and any object labelled olm.owner) and the suites of the
tools control-plane/witness.sh registers it for (Flux, Timoni, Argo CD), whose records
e2e-tests/corpus/witnessed.py checks against the corpus.

usage: witness.py --port PORT --cert FILE --key FILE --log FILE
Serves POST /validate over HTTPS on 127.0.0.1, and GET /healthz.
"""

import argparse
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SKIPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


def meta(obj):
    if not isinstance(obj, dict):
        return None
    m = obj.get("metadata") or {}
    annotations = {
        k: (v if len(v) <= 200 else v[:200] + "...")
        for k, v in (m.get("annotations") or {}).items()
        if k not in SKIPPED_ANNOTATIONS
    }
    return {
        "labels": m.get("labels") or {},
        "annotations": annotations,
        "ownerReferences": [
            {k: r.get(k) for k in ("kind", "name", "controller", "blockOwnerDeletion")}
            for r in (m.get("ownerReferences") or [])
        ],
        "generation": m.get("generation"),
        "deletionTimestamp": m.get("deletionTimestamp"),
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "single-owner-witness"

    def log_message(self, fmt, *args):
        pass

    def _reply(self, code, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._reply(200, b"ok", "text/plain") if self.path == "/healthz" else self._reply(404, b"", "text/plain")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            req = json.loads(self.rfile.read(length))["request"]
        except (ValueError, KeyError, TypeError) as e:
            self._reply(400, {"error": f"not an AdmissionReview: {e}"})
            return
        user = req.get("userInfo") or {}
        obj = req.get("object") or req.get("oldObject") or {}
        line = {
            "time": round(time.time(), 3),
            "operation": req.get("operation"),
            "kind": (req.get("kind") or {}).get("kind", ""),
            "name": req.get("name") or (obj.get("metadata") or {}).get("name"),
            "namespace": req.get("namespace", ""),
            "subResource": req.get("subResource", ""),
            "dryRun": bool(req.get("dryRun")),
            "user": user.get("username"),
            "object": meta(req.get("object")),
            "oldObject": meta(req.get("oldObject")),
        }
        with self.server.lock:
            with open(self.server.cfg.log, "a") as f:
                f.write(json.dumps(line, sort_keys=True) + "\n")
        self._reply(200, {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                          "response": {"uid": req.get("uid", ""), "allowed": True}})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--log", required=True)
    cfg = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", cfg.port), Handler)
    server.daemon_threads = True
    server.cfg = cfg
    server.lock = threading.Lock()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cfg.cert, cfg.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(f"witness on https://127.0.0.1:{cfg.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
