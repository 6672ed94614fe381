#!/usr/bin/env python3
"""A validating webhook for the cluster-olm suites that allows every request and writes one
JSON line per request it sees (when it came and went, operation, kind, name, namespace, the
writer's userInfo, the owner labels of the new and the old object, dryRun): the suites read it
to know who wrote an extension's objects, and when.

With --sleep-crd-create SECONDS it holds each CREATE of a CustomResourceDefinition (not a dry
run) that long before it allows it. kube-apiserver calls the validating webhooks of a write in
parallel and commits the write when the last one answers, so this delays the whole admission
of the CRD's creation, with the policy's webhook beside it: two installers that both checked
"no such CRD" then both send their CREATE inside that window (the race of
e2e-tests/cluster-olm/race.bats).

usage: witness-webhook.py --port PORT --cert FILE --key FILE --log FILE [--sleep-crd-create S]
Serves POST /validate over HTTPS on 127.0.0.1, and GET /healthz.
"""

import argparse
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OWNER_KEYS = ("olm.operatorframework.io/owner-kind", "olm.operatorframework.io/owner-name")
HELM_KEYS = ("meta.helm.sh/release-name", "meta.helm.sh/release-namespace")


def owner(obj):
    if not isinstance(obj, dict):
        return None
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    refs = meta.get("ownerReferences") or []
    controller = [f"{r.get('kind')}/{r.get('name')}" for r in refs if isinstance(r, dict) and r.get("controller")]
    return {
        "labels": {k: labels[k] for k in OWNER_KEYS if k in labels},
        "helm": {k: annotations[k] for k in HELM_KEYS if k in annotations},
        "controller": controller,
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "witness-webhook"

    def log_message(self, fmt, *args):  # the JSON log is the record; no access log
        pass

    def _reply(self, code, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/healthz":
            self._reply(200, b"ok", "text/plain")
        else:
            self._reply(404, b"not found", "text/plain")

    def do_POST(self):
        start = time.time()
        length = int(self.headers.get("Content-Length") or 0)
        try:
            review = json.loads(self.rfile.read(length))
            req = review["request"]
        except (ValueError, KeyError, TypeError) as e:
            self._reply(400, {"error": f"not an AdmissionReview: {e}"})
            return
        kind = (req.get("kind") or {}).get("kind", "")
        slept = 0.0
        cfg = self.server.cfg
        if cfg.sleep_crd_create > 0 and kind == "CustomResourceDefinition" and req.get("operation") == "CREATE" and not req.get("dryRun"):
            time.sleep(cfg.sleep_crd_create)
            slept = cfg.sleep_crd_create
        user = req.get("userInfo") or {}
        line = {
            "start": round(start, 3),
            "end": round(time.time(), 3),
            "slept": slept,
            "operation": req.get("operation"),
            "kind": kind,
            "name": req.get("name") or ((req.get("object") or {}).get("metadata") or {}).get("name"),
            "namespace": req.get("namespace", ""),
            "subResource": req.get("subResource", ""),
            "dryRun": bool(req.get("dryRun")),
            "user": user.get("username"),
            "groups": user.get("groups") or [],
            "object": owner(req.get("object")),
            "oldObject": owner(req.get("oldObject")),
        }
        with self.server.lock:
            with open(cfg.log, "a") as f:
                f.write(json.dumps(line, sort_keys=True) + "\n")
        self._reply(
            200,
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": req.get("uid", ""), "allowed": True},
            },
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--sleep-crd-create", type=float, default=0.0)
    cfg = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", cfg.port), Handler)
    server.daemon_threads = True
    server.cfg = cfg
    server.lock = threading.Lock()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cfg.cert, cfg.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print(f"witness-webhook on https://127.0.0.1:{cfg.port}, sleep on CRD CREATE: {cfg.sleep_crd_create} s", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
