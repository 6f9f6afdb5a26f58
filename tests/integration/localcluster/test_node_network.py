"""A further node's network for real, inside a throwaway network namespace standing in for the host: the
pod bridge with a first-node pod on it, the node's init process connected by ``hostnet.connect_node``, and
a pod behind the node's own bridge. Pods on either side, the host and the node reach each other in both
directions, and the link goes when the node's init ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

CONNECT = """
import json, sys, time
from pathlib import Path
from localcluster import hostnet, processes
from localcluster.layout import Layout
work = Path(sys.argv[1])
node = Layout(state=work / "state", cache=work / "cache").node(2)
spec = {"mounts": [], "ready": str(work / "ready")}
argv = ["unshare", "--pid", "--mount", "--net", "--fork", "--kill-child=SIGKILL", "--propagation=slave",
        "--mount-proc", sys.executable, "-m", "localcluster.nodeinit", json.dumps(spec)]
record = processes.start("init", argv, pid_dir=work / "pids", log_dir=work, forks=True)
while not (work / "ready").exists():
    time.sleep(0.02)
hostnet.connect_node(node, record.pid)
print(record.pid)
"""

FETCH = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode())"

# Runs as root in a fresh network namespace (the stand-in host). $1: a work directory.
SCENARIO = r"""
set -eu
work=$1
ip link set lo up
ip link add kvpy0 type bridge && ip addr add 10.244.0.1/24 dev kvpy0 && ip link set kvpy0 up
pod() {  # a shell in a network namespace of its own, standing in for a pod; prints its pid. $1: pid file
  file=$1; shift
  "$@" unshare --net sh -c "echo \$\$ > $file; exec sleep 120" >/dev/null 2>&1 &
  for _ in $(seq 100); do [ -s "$file" ] && { cat "$file"; return; }; sleep 0.05; done
}
addr() {  # pid address gateway
  nsenter -t "$1" --net sh -c "ip link set lo up; ip addr add $2 dev eth0; ip link set eth0 up
    ip route add default via $3"
}
pod1=$(pod "$work/pod1")
ip link add p1 type veth peer name eth0 netns "$pod1" && ip link set p1 master kvpy0 up
addr "$pod1" 10.244.0.5/24 10.244.0.1
node=$("$PYTHON" -c "$CONNECT" "$work")
nsenter -t "$node" --net sh -c "ip link add kvpy1 type bridge; ip addr add 10.244.1.1/24 dev kvpy1
  ip link set kvpy1 up"
pod2=$(pod "$work/pod2" nsenter -t "$node" --net --)
nsenter -t "$node" --net ip link add p2 type veth peer name eth0 netns "$pod2"
nsenter -t "$node" --net ip link set p2 master kvpy1 up
addr "$pod2" 10.244.1.5/24 10.244.1.1
mkdir -p "$work/www" && echo served > "$work/www/page"
cd "$work/www"
nsenter -t "$pod1" --net "$PYTHON" -m http.server 8000 >/dev/null 2>&1 & s1=$!
nsenter -t "$pod2" --net "$PYTHON" -m http.server 8000 >/dev/null 2>&1 & s2=$!
"$PYTHON" -m http.server 8001 --bind 10.244.0.1 >/dev/null 2>&1 & s3=$!
get() {
  for _ in $(seq 50); do
    if out=$(nsenter -t "$1" --net "$PYTHON" -c "$FETCH" "$2" 2>/dev/null); then
      echo "$3 $(echo $out)"; return
    fi
    sleep 0.1
  done
  echo "$3 FAILED"
}
get "$pod1" http://10.244.1.5:8000/page pod1-to-pod2
get "$pod2" http://10.244.0.5:8000/page pod2-to-pod1
get "$pod2" http://10.244.0.1:8001/page pod2-to-host
get $$ http://10.244.1.5:8000/page host-to-pod2
kill "$s1" "$s2" "$s3" 2>/dev/null || true
kill -TERM "$node"
for _ in $(seq 100); do ip link show kvpy-node2 >/dev/null 2>&1 || break; sleep 0.05; done
ip link show kvpy-node2 >/dev/null 2>&1 && echo "link kvpy-node2 LEFT" || echo "link kvpy-node2 gone"
kill "$pod1" "$pod2" 2>/dev/null || true
"""


def test_pods_host_and_node_reach_each_other_across_the_node_link(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "PYTHONPATH": str(REPO / "hack" / "cluster"),
        "CONNECT": CONNECT,
        "PYTHON": sys.executable,
        "FETCH": FETCH,
    }
    result = subprocess.run(
        ["unshare", "--net", "bash", "-c", SCENARIO, "scenario", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    context = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-2000:]}"
    for path in ("pod1-to-pod2", "pod2-to-pod1", "pod2-to-host", "host-to-pod2"):
        assert lines.get(path) == "served", f"{path}: {context}"
    assert lines.get("link") == "kvpy-node2 gone", context
