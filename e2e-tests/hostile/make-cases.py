#!/usr/bin/env python3
"""The hostile-input table: raw payloads for the guest's `validate` and `validate_settings`,
each with the expected answer and a fragment of the expected message.

usage: make-cases.py OUTDIR   (writes OUTDIR/NAME.bin and OUTDIR/cases.tsv)

cases.tsv columns: name, guest function, expected (accept|reject|valid|invalid), the answer's
code (400 for unreadable input, 403 for a rule's refusal, null for none), message fragment.
"""
import json
import pathlib
import random
import sys

KIND = "olm.operatorframework.io/owner-kind"
NAME = "olm.operatorframework.io/owner-name"
REVISION = "olm.operatorframework.io/revision"
CASES = []


def case(name, function, payload, expected, fragment="", code=None):
    """A rejection is unreadable input (400) unless `code` says otherwise."""
    if code is None:
        code = 400 if expected == "reject" else "null"
    CASES.append((name, function, payload if isinstance(payload, bytes) else payload.encode(), expected, code, fragment))


def req(obj="null", old="null", operation="UPDATE", settings="{}", extra=""):
    return (f'{{"request":{{"uid":"h","operation":"{operation}","namespace":"ns","name":"o",'
            f'"kind":{{"group":"","version":"v1","kind":"ConfigMap"}}{extra},"object":{obj},"oldObject":{old}}},'
            f'"settings":{settings}}}')


def obj(labels='{}', annotations='{}', spec='{}', metadata_extra=""):
    return f'{{"apiVersion":"v1","metadata":{{"name":"o"{metadata_extra},"labels":{labels},"annotations":{annotations}}},"spec":{spec}}}'


def owner(name):
    return json.dumps({KIND: "ClusterExtension", NAME: name})


# Not JSON at all, or cut short.
case("not-json", "validate", "hello", "reject", "the validation payload must be a JSON object, not invalid JSON")
case("empty-payload", "validate", b"", "reject", "unexpected end of input (truncated JSON)")
case("truncated", "validate", req(obj(owner("b")), obj(owner("a")))[:-40], "reject", "unexpected end of input (truncated JSON)")
case("trailing-garbage", "validate", req() + "}", "reject", "trailing characters")
case("payload-array", "validate", "[]", "reject", "the validation payload must be a JSON object, not an array")
case("request-missing", "validate", '{"settings":{}}', "reject", "has no admission request")
case("request-null", "validate", '{"request":null,"settings":{}}', "reject", "has no admission request")
case("request-string", "validate", '{"request":"UPDATE"}', "reject", "request must be a JSON object, not a string")
# Metadata that is not what Kubernetes writes.
case("labels-array", "validate", req(obj('["a"]'), obj()), "reject", "metadata.labels must be a map of strings to strings, not an array")
case("label-value-number", "validate", req(obj(f'{{"{NAME}":1}}'), obj()), "reject", f'metadata.labels "{NAME}" must be a string, not a number')
case("label-value-null", "validate", req(obj(f'{{"{NAME}":null}}'), obj()), "reject", "must be a string, not null")
case("label-value-object", "validate", req(obj(f'{{"{NAME}":{{"a":"b"}}}}'), obj()), "reject", "must be a string, not an object")
case("label-value-deep-array", "validate", req(obj(f'{{"{NAME}":' + "[" * 100000 + "]" * 100000 + "}"), obj()), "reject", "must be a string, not an array")
case("annotations-string", "validate", req(obj(annotations='"a=b"'), obj()), "reject", "metadata.annotations must be a map of strings to strings, not a string")
case("annotation-value-bool", "validate", req(obj(annotations='{"a":true}'), obj()), "reject", 'metadata.annotations "a" must be a string, not a boolean')
case("metadata-string", "validate", req('{"metadata":"o"}'), "reject", "metadata must be a JSON object, not a string")
case("metadata-array", "validate", req(f'{{"metadata":[null,{owner("a")}]}}'), "reject", "metadata must be a JSON object, not an array")
case("object-number", "validate", req("7"), "reject", "request.object must be a JSON object, not a number")
case("operation-number", "validate", '{"request":{"operation":1}}', "reject", "request.operation must be a string, not a number")
case("operation-unknown", "validate", req(operation="PATCH"), "reject", 'unknown operation "PATCH"')
# A DELETE or CONNECT reads no object: once its operation is read (policy-server writes it
# before the objects), the rest of the request is only skipped by its structure, which still
# counts; the settings after the request are still read.
case("delete-metadata-string", "validate", req(old='{"metadata":"o"}', operation="DELETE"), "accept")
case("connect-object-grammar", "validate", req('{"metadata":{"labels":[1,]},"x" 1}', operation="CONNECT"), "accept")
case("delete-mismatched-brackets-in-old-object", "validate", req(old='{"metadata":{"labels":[}}', operation="DELETE"), "reject", "mismatched brackets")
case("delete-unclosed-string-in-old-object", "validate", req(old='{"metadata":{"name":"o}}', operation="DELETE"), "reject", "unexpected end of input (truncated JSON)")
case("delete-grammar-after-operation", "validate", '{"request":{"uid":"h","operation":"DELETE","userInfo":{"a" 1},"dryRun":flase,,"oldObject":7},"settings":{}}', "accept")
case("connect-second-operation", "validate", '{"request":{"operation":"CONNECT","operation":"CREATE","object":{"metadata":{"labels":[1]}}},"settings":{}}', "accept")
case("delete-truncated-after-operation", "validate", '{"request":{"uid":"h","operation":"DELETE","oldObject":{"metadata":{', "reject", "unexpected end of input (truncated JSON)")
case("delete-unbalanced-after-operation", "validate", '{"request":{"operation":"DELETE","oldObject":{"a":[]]},"settings":{}}', "reject", "mismatched brackets")
case("delete-invalid-settings", "validate", req(old=obj(), operation="DELETE", settings='{"ownerLabels":[]}'), "reject", "the policy settings are not valid: no owner keys", code="null")
case("delete-operation-after-objects", "validate", '{"request":{"uid":"h","oldObject":{"metadata":"o"},"operation":"DELETE"},"settings":{}}', "reject", "metadata must be a JSON object, not a string")
# With bindings, who writes is read when a binding covers the owner (and only then), and a
# DELETE's fields after its operation are read too.
BOUND = ('{"bindings":[{"writers":{"serviceAccounts":["olmv1-system/operator-controller"]},'
         f'"owner":{{"{KIND}":"ClusterExtension"}}}}]}}')


def user(info):
    return f',"userInfo":{info}'


owned = obj(owner("a"))
case("userinfo-not-object", "validate", req(owned, owned, settings=BOUND, extra=user("7")), "reject", "request.userInfo must be a JSON object, not a number")
case("userinfo-username-number", "validate", req(owned, owned, settings=BOUND, extra=user('{"username":7}')), "reject", "request.userInfo.username must be a string, not a number")
case("userinfo-groups-string", "validate", req(owned, owned, settings=BOUND, extra=user('{"username":"a","groups":"ops"}')), "reject", "request.userInfo.groups must be a JSON array, not a string")
case("userinfo-group-number", "validate", req(owned, owned, settings=BOUND, extra=user('{"username":"a","groups":["ops",1]}')), "reject", "each of request.userInfo.groups must be a string, not a number")
case("userinfo-duplicate-username", "validate", req(owned, owned, settings=BOUND, extra=user('{"username":"system:serviceaccount:olmv1-system:operator-controller","username":"x"}')), "reject", "duplicate field `username`")
case("userinfo-missing-is-anonymous", "validate", req(owned, owned, settings=BOUND), "reject", "an anonymous writer may not change it", code=403)
case("userinfo-bound", "validate", req(owned, owned, settings=BOUND, extra=user('{"username":"system:serviceaccount:olmv1-system:operator-controller","groups":null}')), "accept")
case("userinfo-unread-when-uncovered", "validate", req(obj(), obj(), settings=BOUND, extra=user('{"username":7,"groups":"x"}')), "accept")
case("delete-bindings-grammar-after-operation", "validate", '{"request":{"uid":"h","operation":"DELETE","dryRun" false,"oldObject":{}},"settings":' + BOUND + '}', "reject", "expected ':' after an object key")
case("delete-bindings-old-object-number", "validate", '{"request":{"uid":"h","operation":"DELETE","userInfo":{"a" 1},"oldObject":7},"settings":' + BOUND + '}', "reject", "request.oldObject must be a JSON object, not a number")
case("delete-bindings-field-twice", "validate", '{"request":{"userInfo":{},"operation":"DELETE","userInfo":{},"oldObject":null},"settings":' + BOUND + '}', "reject", "duplicate field `userInfo`")
case("delete-bindings-no-old-object", "validate", req(operation="DELETE", settings=BOUND), "reject", "request.oldObject is missing or null, but every DELETE request carries it")
case("delete-bindings-unbound", "validate", req(old=owned, operation="DELETE", settings=BOUND, extra=user('{"username":"alice"}')), "reject", 'user "alice" may not delete it', code=403)
STAMP = ('{"stamp":true,"bindings":[{"writers":{"users":["ci"]},'
         f'"owner":{{"{KIND}":"ClusterExtension","{NAME}":"a"}}}}]}}')
case("stamp-metadata-null", "validate", req('{"kind":"ConfigMap","metadata":null}', operation="CREATE", settings=STAMP, extra=user('{"username":"ci"}')), "accept")
case("stamp-escaped-keys", "validate", req('{"metadata":{"labels":{"\\u0061pp":"x\\"y"}}}', operation="CREATE", settings=STAMP, extra=user('{"username":"ci"}')), "accept")
case("stamp-labels-number", "validate", req('{"metadata":{"labels":{"app":1}}}', operation="CREATE", settings=STAMP, extra=user('{"username":"ci"}')), "reject", 'metadata.labels "app" must be a string, not a number')

# Duplicate keys: the last value must not win silently.
dup_owner = f'{{"{NAME}":"a","{NAME}":"b"}}'
case("duplicate-owner-label", "validate", req(obj(dup_owner), obj(owner("a"))), "reject", f'metadata.labels has the key "{NAME}" more than once')
case("duplicate-revision-annotation", "validate", req(obj(annotations=f'{{"{REVISION}":"1","{REVISION}":"1"}}'), obj()), "reject", f'metadata.annotations has the key "{REVISION}" more than once')
# A duplicate of a key the rules do not read is part of what they skip (policy-server, which
# serializes every payload with serde_json, never sends one).
case("duplicate-other-annotation", "validate", req(obj(annotations='{"x":"1","x":"2"}'), obj()), "accept")
case("duplicate-labels-field", "validate", req(obj(owner("a"), metadata_extra=f',"labels":{owner("b")}'), obj(owner("a"))), "reject", "duplicate field `labels`")
case("duplicate-metadata-field", "validate", req('{"metadata":{},"metadata":{}}'), "reject", "duplicate field `metadata`")
case("duplicate-object-field", "validate", req(obj(owner("a")), obj(owner("a")), extra=',"object":null'), "reject", "duplicate field `object`")
# Invalid text in what the rules read.
case("invalid-utf8-in-owner-label", "validate", req(obj(f'{{"{NAME}":"@@"}}'), obj()).encode().replace(b"@@", b"\xc3\x28"), "reject", "not valid UTF-8")
case("lone-surrogate-in-owner-label", "validate", req(obj(f'{{"{NAME}":"\\ud800"}}'), obj()), "reject", "invalid \\u escape: a lone high surrogate")
case("bad-escape-in-revision", "validate", req(obj(annotations=f'{{"{REVISION}":"\\q"}}'), obj()), "reject", "invalid escape")
case("control-character-in-name", "validate", req(obj(metadata_extra=',"namespace":"a\x01b"'), obj()), "reject", "control character")
case("invalid-utf8-in-operation", "validate", req(operation="@@").encode().replace(b"@@", b"\xff"), "reject", "not valid UTF-8")
# Invalid text in what they skip: only the structure of a skipped value is checked (see
# src/reading/json/structural.rs); policy-server never sends such a payload.
case("invalid-utf8-in-spec", "validate", req(obj(owner("a"), spec='{"x":"@@"}'), obj(owner("a"))).encode().replace(b"@@", b"\xff"), "accept")
case("invalid-utf8-in-other-label", "validate", req(obj('{"k":"@@"}'), obj()).encode().replace(b"@@", b"\xc3\x28"), "accept")
case("bad-escape-in-spec", "validate", req(obj(spec='{"x":"\\q"}'), obj()), "accept")
case("control-character-in-spec", "validate", req(obj(spec='{"x":"a\x01b"}'), obj()), "accept")
case("grammar-in-spec", "validate", req(obj(spec='{"x" 1,,:[tru,]}'), obj()), "accept")
# ... but its structure is: brackets balance and match, strings end.
case("mismatched-brackets-in-spec", "validate", req(obj(spec='{"x":[1}}'), obj()), "reject", "mismatched brackets")
case("unclosed-string-in-spec", "validate", req(obj(spec='{"x":"abc}}'), obj()), "reject", "unexpected end of input (truncated JSON)")
case("escaped-quote-in-spec", "validate", req(obj(spec='{"x":"a\\"}"}'), obj()), "accept")
# Strings longer than a 64-byte block, which the skip crosses without classifying brackets:
# brackets and an escaped quote inside still do not count, and one left open is still caught.
LONG = "a" * 200
case("long-string-with-brackets-in-spec", "validate", req(obj(spec='{"x":"' + LONG + '}]\\"[{' + LONG + '"}'), obj()), "accept")
case("unclosed-long-string-in-spec", "validate", req(obj(spec='{"x":"' + LONG + '}}'), obj()), "reject", "unexpected end of input (truncated JSON)")
case("long-string-then-mismatch-in-spec", "validate", req(obj(spec='{"x":["' + LONG + '"}}'), obj()), "reject", "mismatched brackets")
# A ConfigMap's values: long strings with an escape every line, so that blocks inside them hold
# backslashes but no quote (the skip then looks only at the escapes, for the next block). Laid
# out from the skipped value's start, where the skip's blocks begin: an escaped quote right
# after a block that ends in a lone backslash, brackets after it, still inside the string.
def escaped_across_blocks(end):
    # `{"x":"` is bytes 0-5; eleven times nine letters and a `\n` fill bytes 6-126, so the
    # backslash of `\"` is byte 127, the last of the second block, and its quote byte 128.
    return '{"x":"' + ('a' * 9 + '\\n') * 11 + '\\"]}[{' + 'b\\n' * 40 + end
case("escaped-long-string-with-brackets-in-spec", "validate",
     req(obj(owner("a"), spec=escaped_across_blocks('"}')), obj(owner("a"))), "accept")
case("escaped-long-string-owner-change", "validate",
     req(obj(owner("b"), spec=escaped_across_blocks('"}')), obj(owner("a"))), "reject", f"owned by [{NAME}=a]", code=403)
case("escaped-long-string-unclosed-in-spec", "validate",
     req(obj(owner("a"), spec=escaped_across_blocks('}')), obj(owner("a"))), "reject", "unexpected end of input (truncated JSON)")
# Objects an API server always sends.
case("update-without-old-object", "validate", req(obj(owner("a"))), "reject", "request.oldObject is missing or null, but every UPDATE request carries it")
case("update-without-object", "validate", req(old=obj(owner("a"))), "reject", "request.object is missing or null")
case("create-without-object", "validate", req(operation="CREATE"), "reject", "request.object is missing or null, but every CREATE request carries it")
# Deep nesting of unrelated fields: judged by the labels.
deep = lambda n: '{"x":' * n + "1" + "}" * n
case("nested-1000-owner-change", "validate", req(obj(owner("b"), spec=deep(1000)), obj(owner("a"), spec=deep(1000))), "reject", f"owned by [{NAME}=a]", code=403)
case("nested-1000-same-owner", "validate", req(obj(owner("a"), spec=deep(1000)), obj(owner("a"), spec=deep(1000))), "accept")
case("nested-100000-arrays-same-owner", "validate", req(obj(owner("a"), spec="[" * 100000 + "]" * 100000), obj(owner("a"))), "accept")
case("nested-100000-unclosed", "validate", req(obj(owner("a"), spec="[" * 100000)), "reject", "unexpected end of input (truncated JSON)")
# Huge values.
big = "v" * (1 << 20)
case("annotation-1mib-owner-change", "validate", req(obj(owner("b"), json.dumps({"note": big})), obj(owner("a"), json.dumps({"note": big}))), "reject", f"[{NAME}=b]", code=403)
case("annotation-1mib-helm-owner", "validate", req(obj(annotations=json.dumps({"meta.helm.sh/release-name": big})), obj(annotations=json.dumps({"meta.helm.sh/release-name": big})),
     settings='{"ownerLabels":[],"ownerAnnotations":["meta.helm.sh/release-name"],"ownerKindLabel":""}'), "accept")
rng = random.Random(7)
many = {f"example.com/label-{i}": f"value-{i}" for i in range(10000)}
keys = list(many)
rng.shuffle(keys)
labels_new = {k: many[k] for k in keys}
labels_new[NAME] = "b"
labels_old = dict(many, **{NAME: "a"})
case("labels-10000-owner-change", "validate", req(obj(json.dumps(labels_new)), obj(json.dumps(labels_old))), "reject", f"owned by [{NAME}=a]", code=403)
labels_new[NAME] = "a"
case("labels-10000-same-owner", "validate", req(obj(json.dumps(labels_new)), obj(json.dumps(labels_old))), "accept")
case("object-4mib-owner-change", "validate", req(obj(owner("b"), spec=json.dumps({"data": "d" * (2 << 20)})), obj(owner("a"), spec=json.dumps({"data": "d" * (2 << 20)}))), "reject", f"[{NAME}=b]", code=403)
case("huge-number", "validate", req(obj(owner("a"), spec='{"n":1e999999,"m":-0.0e-99999}'), obj(owner("a"))), "accept")
# Settings that arrive with the request.
case("payload-settings-unknown-key", "validate", req(settings='{"ownerLabel":[]}'), "reject", "unknown field `ownerLabel`")
case("payload-settings-unclosed", "validate", req(settings='{"ownerLabels":["a"'), "reject", "unexpected end of input (truncated JSON)")
case("payload-settings-invalid", "validate", req(settings='{"ownerLabels":["a b"]}'), "reject", "the policy settings are not valid", code="null")
# validate_settings.
case("settings-not-json", "validate_settings", "ownerLabels: [a]", "invalid", "settings cannot be read")
case("settings-empty", "validate_settings", b"", "invalid", "EOF while parsing")
case("settings-null", "validate_settings", "null", "valid")
case("settings-array", "validate_settings", "[]", "invalid", "expected a JSON object")
case("settings-invalid-utf8", "validate_settings", b'{"ownerLabels":["\xff"]}', "invalid", "not valid UTF-8")
case("settings-deep", "validate_settings", '{"ownerLabels":' + "[" * 100000 + "]" * 100000 + "}", "invalid", "invalid type: sequence, expected a string")
case("settings-10000-keys", "validate_settings", json.dumps({"ownerLabels": [f"example.com/k{i}" for i in range(10000)]}), "valid")
case("settings-duplicate-field", "validate_settings", '{"allowAdoption":true,"allowAdoption":false}', "invalid", "duplicate field `allowAdoption`")

# Several tools (the several-tools form): hostile settings, and requests whose keys of two
# tools are malformed, duplicated or huge.
TOOLS = json.dumps({"schemes": [
    {"name": "olm-v1", "ownerLabels": [KIND, NAME]},
    {"name": "helm", "ownerAnnotations": ["meta.helm.sh/release-name", "meta.helm.sh/release-namespace"]},
    {"name": "flux-helm", "ownerLabels": ["helm.toolkit.fluxcd.io/name"]}],
    "aliases": [{"schemes": ["flux-helm", "helm"], "keys": {"helm.toolkit.fluxcd.io/name": "meta.helm.sh/release-name"}}],
    "handoverAnnotation": "example.com/handover-to"})
helm_ann = lambda r: json.dumps({"meta.helm.sh/release-name": r, "meta.helm.sh/release-namespace": "ns"})
case("tools-second-owner", "validate", req(obj(owner("a"), helm_ann("r")), obj(owner("a")), settings=TOOLS), "reject",
     "would give it a second owner, [meta.helm.sh/release-name=r, meta.helm.sh/release-namespace=ns] (helm)", code=403)
case("tools-created-with-two", "validate", req(obj(owner("a"), helm_ann("r")), operation="CREATE", settings=TOOLS), "reject",
     "would be created with the owners of two tools", code=403)
case("tools-alias-one-owner", "validate", req(obj('{"helm.toolkit.fluxcd.io/name":"r"}', helm_ann("r")), operation="CREATE", settings=TOOLS), "accept")
case("tools-helm-annotation-number", "validate", req(obj(owner("a"), '{"meta.helm.sh/release-name":7}'), obj(owner("a")), settings=TOOLS), "reject",
     'metadata.annotations "meta.helm.sh/release-name" must be a string, not a number')
case("tools-helm-annotation-twice", "validate", req(obj('{}', '{"meta.helm.sh/release-name":"a","meta.helm.sh/release-name":"b"}'), obj(), settings=TOOLS), "reject",
     'metadata.annotations has the key "meta.helm.sh/release-name" more than once')
case("tools-successor-of-two-tools", "validate", req(obj(owner("a"), json.dumps({"example.com/handover-to": f"{NAME}=b,meta.helm.sh/release-name=r"})), obj(owner("a")), settings=TOOLS), "reject",
     "another tool than", code=403)
many_tools = {f"example.com/k{i}": f"v{i}" for i in range(5000)}
case("tools-5000-labels-second-owner", "validate", req(obj(json.dumps({**many_tools, **json.loads(owner("a")), "helm.toolkit.fluxcd.io/name": "x"})), obj(json.dumps({**many_tools, **json.loads(owner("a"))})), settings=TOOLS),
     "reject", "second owner, [helm.toolkit.fluxcd.io/name=x] (flux-helm)", code=403)
case("settings-tools-deep", "validate_settings", '{"schemes":' + "[" * 100000 + "]" * 100000 + "}", "invalid", "invalid type: sequence, expected a string")
case("settings-tools-1000-schemes", "validate_settings", json.dumps({"schemes": [{"name": f"t{i}", "ownerLabels": [f"example.com/k{i}"]} for i in range(1000)]}), "valid")
case("settings-tools-key-twice", "validate_settings", json.dumps({"schemes": [{"name": "a", "ownerLabels": ["x"]}, {"name": "b", "ownerLabels": ["x"]}]}), "invalid",
     'schemes[1].ownerLabels[0] "x" is also schemes[0].ownerLabels[0] ("a")')
case("settings-tools-alias-unknown", "validate_settings", json.dumps({"schemes": [{"name": "a", "ownerLabels": ["x"]}], "aliases": [{"schemes": ["a", "zz"], "keys": {}}]}), "invalid",
     'aliases[0].schemes names "zz", which is not a scheme')
case("settings-tools-alias-key-twice", "validate_settings", '{"schemes":[{"name":"a","ownerLabels":["x"]},{"name":"b","ownerLabels":["y"]}],"aliases":[{"schemes":["a","b"],"keys":{"x":"y","x":"y"}}]}', "invalid",
     'the owner key "x" is given twice')

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
with open(out / "cases.tsv", "w") as table:
    for name, function, payload, expected, code, fragment in CASES:
        (out / f"{name}.bin").write_bytes(payload)
        table.write(f"{name}\t{function}\t{expected}\t{code}\t{fragment}\n")
