#!/usr/bin/env python3
"""The kubelet's part for the Kubewarden policy server's pods, which kwok only marks Running
and Ready (control-plane/kubewarden.bash): for each pod of the PolicyServer that has an address
and is not terminating, one backend process started as the pod's container would be, from what
the controller wrote (the ConfigMap's policies.yml, the Secret's tls.crt and tls.key), listening
on port 8443 of the pod's address in the pods' network namespace; a pod that goes (a rollout
after the controller changed the ConfigMap, a PolicyServer scaled down) has its process stopped
and its address removed. A backend that exits is started again, as a kubelet restarts a
container, unless the backends are paused (control-plane/cluster.sh backend-stop writes
DIR/backends-paused; backend-start removes it).

usage: policy-server-pods.py DIR NETNS IFACE NAMESPACE POLICY_SERVER -- BACKEND_COMMAND...
  BACKEND_COMMAND: the backend with its flags but the address, policies and certificate, which
  are appended: --addr IP --port 8443 --readiness-probe-port 8081 --policies FILE
  --cert-file FILE --key-file FILE.
Once a pod's backend answers /readiness, the pod's status is marked Ready (its Ready and
ContainersReady conditions, its container ready), as the kubelet writes it when a readiness
probe passes; kwok started the pod without (kwok-stages.yaml). Writes
DIR/pod-ips (the addresses served, one a line) after each change, and logs to stderr.
"""

import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request


def is_ready(pod):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in pod.get("status", {}).get("conditions") or [])


def mark_ready(namespace, pod):
    """The pod's status as the kubelet writes it once the container's readiness probe passes."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    patch = {"status": {
        "conditions": [{"type": t, "status": "True", "reason": None, "lastTransitionTime": now}
                       for t in ("ContainersReady", "Ready")],
        "containerStatuses": [{"name": c["name"], "ready": True} for c in pod["spec"]["containers"]],
    }}
    kubectl("-n", namespace, "patch", "pod", pod["metadata"]["name"], "--subresource", "status",
            "--type", "strategic", "-p", json.dumps(patch))


def ready(ip):
    try:
        with urllib.request.urlopen(f"http://{ip}:8081/readiness", timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False


def kubectl(*args):
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, check=True).stdout


def log(message):
    print(f"policy-server-pods: {message}", file=sys.stderr, flush=True)


def main():
    argv = sys.argv[1:]
    split = argv.index("--")
    state_dir, netns, iface, namespace, server = argv[:split]
    backend = argv[split + 1:]
    pods_dir = os.path.join(state_dir, "pods")
    os.makedirs(pods_dir, exist_ok=True)
    paused = os.path.join(state_dir, "backends-paused")
    running = {}  # pod uid -> (ip, Popen)
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def end(uid):
        ip, proc = running.pop(uid)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log(f"pod {uid}: backend at {ip} stopped")

    def addresses(wanted):
        """The namespace holds exactly the live pods' addresses: a pod whose backend is stopped
        keeps its address (a connection to it is refused at once, as to a pod whose container
        died), a pod that is gone loses it."""
        shown = subprocess.run(["ip", "-n", netns, "-4", "-o", "addr", "show", "dev", iface],
                               capture_output=True, text=True).stdout
        held = {f.split("/")[0] for line in shown.splitlines() for f in line.split() if "/32" in f}
        for ip in held - wanted:
            subprocess.run(["ip", "-n", netns, "addr", "del", f"{ip}/32", "dev", iface], capture_output=True)
        for ip in wanted - held:
            subprocess.run(["ip", "-n", netns, "addr", "replace", f"{ip}/32", "dev", iface], capture_output=True)

    def begin(pod):
        uid, ip, name = pod["metadata"]["uid"], pod["status"]["podIP"], pod["metadata"]["name"]
        where = os.path.join(pods_dir, name)
        os.makedirs(where, exist_ok=True)
        config = json.loads(kubectl("-n", namespace, "get", "configmap", f"policy-server-{server}", "-o", "json"))
        secret = json.loads(kubectl("-n", namespace, "get", "secret", f"policy-server-{server}", "-o", "json"))
        with open(os.path.join(where, "policies.yml"), "w") as f:
            f.write(config["data"]["policies.yml"])
        for key in ("tls.crt", "tls.key"):
            with open(os.path.join(where, key), "wb") as f:
                f.write(base64.b64decode(secret["data"][key]))
        out = open(os.path.join(state_dir, f"backend-{name}.log"), "ab")
        proc = subprocess.Popen(
            ["ip", "netns", "exec", netns, *backend, "--addr", ip, "--port", "8443",
             "--readiness-probe-port", "8081", "--policies", os.path.join(where, "policies.yml"),
             "--cert-file", os.path.join(where, "tls.crt"), "--key-file", os.path.join(where, "tls.key")],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        running[uid] = (ip, proc)
        log(f"pod {name}: backend at {ip} started (ConfigMap resourceVersion {config['metadata']['resourceVersion']})")

    last_ips = None
    while not stopping:
        try:
            pods = json.loads(kubectl("-n", namespace, "get", "pods", "-l",
                                      f"kubewarden/policy-server={server}", "-o", "json"))["items"]
        except (subprocess.CalledProcessError, json.JSONDecodeError) as e:
            log(f"cannot list the pods: {e}")
            time.sleep(1)
            continue
        live = {p["metadata"]["uid"]: p for p in pods
                if p.get("status", {}).get("podIP") and not p["metadata"].get("deletionTimestamp")}
        for uid in [u for u in running if u not in live]:
            end(uid)
        addresses({p["status"]["podIP"] for p in live.values()})
        # A terminating pod whose backend is stopped is deleted for good, as the kubelet
        # confirms a deletion once the pod's containers have stopped (without it the pod would
        # stand for its grace period, and the controller waits for the old pods to go).
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp") and pod["metadata"]["uid"] not in running:
                subprocess.run(["kubectl", "-n", namespace, "delete", "pod", pod["metadata"]["name"],
                                "--grace-period=0", "--force", "--wait=false"], capture_output=True)
        if os.path.exists(paused):
            for uid in list(running):
                end(uid)
        else:
            for uid, pod in live.items():
                if uid in running and running[uid][1].poll() is not None:
                    log(f"pod {pod['metadata']['name']}: backend exited ({running[uid][1].returncode}): restarting it")
                    end(uid)
                if uid not in running:
                    try:
                        begin(pod)
                    except (subprocess.CalledProcessError, KeyError, json.JSONDecodeError) as e:
                        log(f"pod {pod['metadata']['name']}: cannot start its backend yet: {e}")
            # The readiness probe: a pod whose backend answers is marked Ready, as the kubelet
            # writes it into the pod's status; until then no endpoint sends it a write.
            for uid, (ip, proc) in running.items():
                pod = live.get(uid)
                if pod is None or proc.poll() is not None or is_ready(pod) or not ready(ip):
                    continue
                try:
                    mark_ready(namespace, pod)
                    log(f"pod {pod['metadata']['name']}: backend at {ip} ready")
                except subprocess.CalledProcessError as e:
                    log(f"pod {pod['metadata']['name']}: cannot mark it Ready: {e.stderr}")
        ips = sorted(ip for ip, _ in running.values())
        if ips != last_ips:
            with open(os.path.join(state_dir, "pod-ips.tmp"), "w") as f:
                f.write("".join(f"{ip}\n" for ip in ips))
            os.replace(os.path.join(state_dir, "pod-ips.tmp"), os.path.join(state_dir, "pod-ips"))
            last_ips = ips
        time.sleep(0.3)
    for uid in list(running):
        end(uid)


if __name__ == "__main__":
    main()
