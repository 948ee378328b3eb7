#!/usr/bin/env bash
# Measures how soon a dashboard that attaches to a node's agent shows its
# first frame, beside a dashboard that runs its own engine (issue 24: a
# dashboard attaching shows its first frame within 200 ms). One
# `nodegc simnode --preset large` (1,000 pods, 2,000 images) and one
# `nodegc agent` on it (state dir A); then ROUNDS rounds, each starting
# the dashboard twice in a 120x36 tmux pane, alternated: attached (state
# dir A, where the agent's control socket is) and standalone (state dir
# B, no agent: its own engine). The screen is read every 10 ms; the times
# are from the tmux command to the first frame (the tab bar) and to the
# node on screen (the image filesystem's capacity line), and, attached,
# to the engine line naming the agent. It prints one line per start and
# the medians.
#
# Usage: scripts/measure-attach.sh   (as root; needs tmux, curl)
# Environment: ROUNDS (default 8), BIN (a built nodegc; default: build one).
set -euo pipefail

cd "$(dirname "$0")/.."
rounds=${ROUNDS:-8}
log() { echo "measure-attach: $*" >&2; }
die() {
	log "$*"
	exit 1
}
command -v tmux >/dev/null 2>&1 || die "tmux is missing (scripts/install-deps.sh)"

work=$(mktemp -d /tmp/nodegc-attach.XXXXXX)
sock="nodegc-attach-$$"
tm() { tmux -L "$sock" "$@"; }
simpid=
agentpid=
cleanup() {
	tm kill-server >/dev/null 2>&1 || true
	[ -z "$agentpid" ] || kill "$agentpid" 2>/dev/null || true
	[ -z "$simpid" ] || kill "$simpid" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

bin=${BIN:-}
if [ -z "$bin" ]; then
	log "building"
	${GO:-go} build -o "$work/nodegc" ./cmd/nodegc
	bin=$work/nodegc
fi

"$bin" simnode --listen "unix://$work/sim.sock" --preset large 2>"$work/sim.log" &
simpid=$!
for _ in $(seq 100); do [ -S "$work/sim.sock" ] && break; sleep 0.1; done
[ -S "$work/sim.sock" ] || die "simnode: no socket: $(tail -3 "$work/sim.log")"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" agent --metrics-bind-address "127.0.0.1:$port" --kubelet-pid -1 --simulated --runtime-endpoint "unix://$work/sim.sock" \
	--state-dir "$work/state-agent" 2>"$work/agent.log" &
agentpid=$!
deadline=$((SECONDS + 120))
until curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
	[ $SECONDS -lt $deadline ] || die "agent: not ready within 120 s: $(tail -3 "$work/agent.log")"
	sleep 0.2
done
sleep 5 # its first passes over the preset

ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

# start MODE STATEDIR: one dashboard start; prints MODE FIRST NODE ATTACHED (ms).
start() {
	local mode=$1 dir=$2 t0 first= node= attached=- screen
	t0=$(date +%s%N)
	tm new-session -d -x 120 -y 36 -s "$mode" \
		"exec '$bin' --kubelet-pid -1 --simulated --runtime-endpoint unix://$work/sim.sock --state-dir $dir"
	local end=$((SECONDS + 60))
	while [ $SECONDS -lt $end ]; do
		screen=$(tm capture-pane -p -t "$mode" 2>/dev/null || true)
		[ -n "$first" ] || ! grep -q 'Overview' <<<"$screen" || first=$(ms "$t0")
		[ -n "$node" ] || ! grep -q 'capacity ' <<<"$screen" || node=$(ms "$t0")
		if [ "$mode" = attached ] && [ "$attached" = - ] && grep -q 'attached to agent' <<<"$screen"; then
			attached=$(ms "$t0")
		fi
		if [ -n "$first" ] && [ -n "$node" ] && { [ "$mode" != attached ] || [ "$attached" != - ]; }; then
			break
		fi
		sleep 0.01
	done
	tm kill-session -t "$mode" >/dev/null 2>&1 || true
	[ -n "$first" ] && [ -n "$node" ] || die "$mode: no frame within 60 s"
	[ "$mode" != attached ] || [ "$attached" != - ] || die "attached: never said so within 60 s"
	echo "$mode $first $node $attached"
}

printf '%-10s %8s %8s %12s\n' MODE FIRST_MS NODE_MS ATTACHED_MS
results=$work/results
for r in $(seq "$rounds"); do
	if [ $((r % 2)) -eq 1 ]; then order=(attached standalone); else order=(standalone attached); fi
	for mode in "${order[@]}"; do
		dir=$work/state-agent
		[ "$mode" = attached ] || dir=$work/state-own
		line=$(start "$mode" "$dir")
		echo "$line" >>"$results"
		# shellcheck disable=SC2086
		printf '%-10s %8s %8s %12s\n' $line
		sleep 1
	done
done
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR == 0) exit; m = (NR + 1) / 2; print (NR % 2) ? a[m] : (a[m - 0.5] + a[m + 0.5]) / 2 }'; }
for mode in attached standalone; do
	f=$(awk -v m="$mode" '$1 == m { print $2 }' "$results" | median)
	n=$(awk -v m="$mode" '$1 == m { print $3 }' "$results" | median)
	a=$(awk -v m="$mode" '$1 == m && $4 != "-" { print $4 }' "$results" | median)
	echo "median $mode: first frame ${f} ms, node on screen ${n} ms${a:+, attached line ${a} ms}"
done
