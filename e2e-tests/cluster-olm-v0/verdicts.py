#!/usr/bin/env python3
"""policy-server's own log as the verdict records the suites read (policy-host serve's
`--log` lines: policy, uid, operation, kind, name, namespace, verdict {allowed, code}).

policy-server (run with `--log-fmt json --log-level debug`) logs each AdmissionReview it gets
(`admission_review`, in its `validation` span) and then `policy evaluated` with the response's
Debug form, both in that span, whose `request_uid` joins them
(crates/policy-server/src/api/handlers.rs). Its info level names no object, so without this the
suites could not tell which write policy-server refused.

usage: verdicts.py BACKEND_LOG >>requests.jsonl   (follows the log, as tail -f, until killed)
"""
import json
import os
import re
import sys
import time

ALLOWED = re.compile(r"\ballowed: (true|false)\b")
CODE = re.compile(r"\bcode: Some\((\d+)\)")


def span_of(event):
    span = event.get("span") or {}
    return span if span.get("name") == "validation" else {}


def follow(path):
    """The lines of a file that is still being written, as they come."""
    while True:
        try:
            f = open(path, encoding="utf-8", errors="replace")
            break
        except FileNotFoundError:
            time.sleep(0.2)
    partial = ""
    while True:
        chunk = f.readline()
        if not chunk:
            if os.fstat(f.fileno()).st_size < f.tell():
                f.seek(0)  # truncated: the backend started again
                partial = ""
            time.sleep(0.1)
            continue
        partial += chunk
        if partial.endswith("\n"):
            yield partial
            partial = ""


def main():
    pending = {}
    for line in follow(sys.argv[1]):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        fields = event.get("fields") or {}
        span = span_of(event)
        # The review is logged before the span records its uid: the uid is the request's.
        if "admission_review" in fields:
            try:
                request = json.loads(fields["admission_review"]).get("request") or {}
            except (ValueError, AttributeError):
                continue
            if request.get("uid"):
                pending[request["uid"]] = request
            continue
        uid = span.get("request_uid")
        if fields.get("message") == "policy evaluated" and uid in pending:
            request = pending.pop(uid)
            response = str(fields.get("response", ""))
            allowed = ALLOWED.search(response)
            code = CODE.search(response)
            record = {
                "policy": span.get("policy_id"),
                "uid": uid,
                "operation": request.get("operation"),
                "kind": (request.get("kind") or {}).get("kind"),
                "name": request.get("name") or "",
                "namespace": request.get("namespace") or "",
                "subResource": request.get("subResource"),
                "verdict": {"allowed": bool(allowed) and allowed.group(1) == "true",
                            "code": int(code.group(1)) if code else None},
                "from": "policy-server",
            }
            print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
