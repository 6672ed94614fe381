# Background processes for the scripts that run a local control plane (control-plane/cluster.sh,
# scripts/cluster-olm.sh): free loopback ports, bounded waits, and processes started in the
# background whose PIDs are kept in files and stopped by them. Sourced; the caller defines
# `log MESSAGE` (to stderr).

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# free_ports N: N ports, each free when held together (a port next to a free one may well be
# taken: connections' local ports are handed out in runs).
free_ports() {
  python3 -c 'import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))' "$1"
}

# wait_for SECONDS WHAT COMMAND...: runs COMMAND until it succeeds, at most SECONDS.
wait_for() {
  local seconds="$1" what="$2" deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || { log "$what: not ready after $seconds s"; return 1; }
    sleep 0.2
  done
  log "$what ready after $((seconds - (deadline - SECONDS))) s"
}

# start_in PIDDIR NAME LOGFILE COMMAND...: runs COMMAND in the background, its output in
# LOGFILE, its PID in PIDDIR/NAME.pid. It keeps no descriptor of its caller's but those (bats
# waits for whoever holds its fd 3).
start_in() {
  local pids="$1" name="$2" logfile="$3"
  shift 3
  "$@" </dev/null >"$logfile" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! >"$pids/$name.pid"
}

# stop_pid_file FILE: TERM to the process FILE names, KILL after 5 s; the file removed.
stop_pid_file() {
  local file="$1" pid
  pid="$(cat "$file")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

# stop_all PIDDIR: every process whose PID file is in PIDDIR stopped (stop_pid_file); nothing
# when there is none.
stop_all() {
  local file
  for file in "$1"/*.pid; do
    if [ -f "$file" ]; then stop_pid_file "$file"; fi
  done
}
