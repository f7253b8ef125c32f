#!/usr/bin/env bash
# burst-compare.sh BINARY REPLICAS [BOUND_SECONDS]
#
# Times a burst of REPLICAS pods (1 CPU, 1 GiB, as `joiner run`'s example)
# from apply to all Running, on `BINARY run`: the embedded local control
# plane and the simulated cloud at their defaults. It drives only what every
# joiner build since `joiner run` existed offers (the demo, then kubectl),
# so two builds -- today's and an old commit's -- are measured the same way:
#
#   git worktree add /tmp/old <commit> && (cd /tmp/old && go build -o /tmp/joiner-old ./cmd/joiner)
#   go build -o /tmp/joiner-new ./cmd/joiner
#   JOINER_K8S_BIN=bin/k8s hack/burst-compare.sh /tmp/joiner-old 500
#   JOINER_K8S_BIN=bin/k8s hack/burst-compare.sh /tmp/joiner-new 500
#
# It runs the demo with one replica, waits for its scale-down, lifts the
# demo NodePool's CPU limit (1,000 CPUs would cap a 5,000-pod burst), then
# applies a Deployment of REPLICAS pods and polls every 2 s. It prints the
# seconds until every pod ran (or how many ran within BOUND_SECONDS,
# default 1800) and the NodeClaims created.
set -euo pipefail

bin=${1:?usage: burst-compare.sh BINARY REPLICAS [BOUND_SECONDS]}
replicas=${2:?usage: burst-compare.sh BINARY REPLICAS [BOUND_SECONDS]}
bound=${3:-1800}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
if [[ -n "${JOINER_K8S_BIN:-}" ]]; then
	JOINER_K8S_BIN=$(cd "$JOINER_K8S_BIN" && pwd)
	export JOINER_K8S_BIN
fi

dir=$(mktemp -d /tmp/joiner-burst-XXXXXX)
log=$dir/run.out
"$bin" run --replicas 1 --run-dir "$dir/run" >"$log" 2>&1 &
pid=$!
cleanup() {
	kill -INT "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

for _ in $(seq 600); do
	grep -q 'scale-down done' "$log" && break
	kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "FAIL: joiner run exited" >&2; exit 1; }
	sleep 1
done
grep -q 'scale-down done' "$log" || { tail -20 "$log"; echo "FAIL: the demo did not finish" >&2; exit 1; }
k() { kubectl --kubeconfig "$dir/run/controlplane/kubeconfig" "$@"; }

k patch nodepool default --type merge -p '{"spec":{"limits":{"cpu":"100000"}}}' >/dev/null
k create namespace burst >/dev/null
start=$(date +%s%3N)
k apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: burst, namespace: burst}
spec:
  replicas: $replicas
  selector: {matchLabels: {app: burst}}
  template:
    metadata: {labels: {app: burst}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: pause
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: "1", memory: 1Gi}}
EOF

running=0
while :; do
	elapsed_ms=$(($(date +%s%3N) - start))
	running=$(k get pods -n burst --field-selector=status.phase=Running --no-headers 2>/dev/null | wc -l)
	if ((running >= replicas)); then
		break
	fi
	if ((elapsed_ms > bound * 1000)); then
		break
	fi
	sleep 2
done
claims=$(k get nodeclaims --no-headers 2>/dev/null | wc -l)
elapsed=$((elapsed_ms / 1000)).$(printf '%03d' $((elapsed_ms % 1000)))
if ((running >= replicas)); then
	printf 'burst of %d: all Running %s s after apply, %d NodeClaims (%s)\n' "$replicas" "$elapsed" "$claims" "$bin"
else
	printf 'burst of %d: %d Running after %s s (bound), %d NodeClaims (%s)\n' "$replicas" "$running" "$elapsed" "$claims" "$bin"
fi
