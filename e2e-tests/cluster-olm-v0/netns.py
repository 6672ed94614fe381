#!/usr/bin/env python3
"""Runs a command in a network namespace of its own, as a pod has, with some loopback ports of
the host forwarded into it (scripts/cluster-olm-v0.sh: olm-operator and catalog-operator both
bind their health server on :8080, and that port cannot be moved by a flag; each gets its own
loopback, on which the API server's port, and catalog-operator's the catalog's, lead to the
host's).

usage (as root): netns.py --forward PORT [--forward PORT]... -- COMMAND [ARG...]

The process unshares its network namespace, brings its loopback up and listens on 127.0.0.1:PORT
there; each connection is relayed to 127.0.0.1:PORT of the host's namespace, by a thread that
entered the host's namespace before creating its socket (setns changes the calling thread's
namespace only). COMMAND runs in the new namespace; TERM and INT are passed on to it, and this
process exits with its status.
"""

import argparse
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading

CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def relay(conn, port, host_ns):
    # This thread enters the host's namespace: the socket it creates is the host's.
    try:
        check(libc.setns(host_ns, CLONE_NEWNET), "setns")
        upstream = socket.create_connection(("127.0.0.1", port), timeout=10)
        upstream.settimeout(None)
    except OSError:
        conn.close()
        return
    t = threading.Thread(target=pump, args=(upstream, conn), daemon=True)
    t.start()
    pump(conn, upstream)
    t.join()
    conn.close()
    upstream.close()


def serve(listener, port, host_ns):
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=relay, args=(conn, port, host_ns), daemon=True).start()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--forward", type=int, action="append", default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    host_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
    check(libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for port in args.forward:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        threading.Thread(target=serve, args=(listener, port, host_ns), daemon=True).start()
    child = subprocess.Popen(command, pass_fds=())
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
