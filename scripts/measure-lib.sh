# shellcheck shell=bash
# What scripts/measure-idle.sh and scripts/measure-attach.sh share; they
# source it (it is not run by itself). It gives them: log and die, which
# name the script; a temp dir ($work) and a tmux server of their own (tm),
# both removed on exit with every process started here; the nodegc binary
# ($bin: BIN, or one built); and a simulated large node with an agent on it.
#
# The sourcing script sets me (its short name: messages and temp names)
# and runs from the repository's root.

log() { echo "measure-$me: $*" >&2; }
die() {
	log "$*"
	exit 1
}
need_tmux() {
	command -v tmux >/dev/null 2>&1 || die "tmux is missing (apt-get install tmux, or scripts/install-deps.sh)"
}

work=$(mktemp -d "/tmp/nodegc-$me.XXXXXX")
sock="$work/tmux.sock" # in $work, so that it goes with it
tm() { tmux -S "$sock" "$@"; }
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
	# As `make build` builds it: static, so no libc pages in the RSS.
	CGO_ENABLED=0 ${GO:-go} build -trimpath -o "$work/nodegc" ./cmd/nodegc
	bin=$work/nodegc
fi

# running PID: the process exists and is not a zombie (tmux 3.3a now and
# then leaves its pane's exited process unreaped).
running() {
	[ -r "/proc/$1/stat" ] || return 1
	[ "$(sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f1)" != Z ]
}

# start_simnode: `nodegc simnode --preset large` (1,000 pods, 2,000
# images) on $work/sim.sock; sets simpid.
start_simnode() {
	"$bin" simnode --listen "unix://$work/sim.sock" --preset large 2>"$work/sim.log" &
	simpid=$!
	for _ in $(seq 100); do [ -S "$work/sim.sock" ] && break; sleep 0.1; done
	[ -S "$work/sim.sock" ] || die "simnode: no socket: $(tail -3 "$work/sim.log")"
}

# stop_simnode: ends the simulated node, if one runs.
stop_simnode() {
	[ -n "$simpid" ] || return 0
	kill "$simpid" 2>/dev/null || true
	wait "$simpid" 2>/dev/null || true
	simpid=
	rm -f "$work/sim.sock"
}

# start_agent [VAR=VALUE...]: `nodegc agent` on the simulated node, with
# those environment variables, state dir $work/state-agent, metrics on a
# free loopback port ($port), and the flags in EXTRA; sets agentpid.
start_agent() {
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	# shellcheck disable=SC2086
	env "$@" "$bin" agent --metrics-bind-address "127.0.0.1:$port" --kubelet-pid -1 --simulated --runtime-endpoint "unix://$work/sim.sock" \
		--state-dir "$work/state-agent" ${EXTRA:-} 2>"$work/agent.log" &
	agentpid=$!
}

# wait_agent PATH: waits, at most 120 s, until the agent's PATH (/healthz,
# /readyz) answers 200.
wait_agent() {
	local deadline=$((SECONDS + 120))
	until curl -fs "http://127.0.0.1:$port$1" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || die "agent: $1 did not answer within 120 s: $(tail -3 "$work/agent.log")"
		running "$agentpid" || die "agent: exited: $(tail -3 "$work/agent.log")"
		sleep 0.2
	done
}

# stop_agent: stops the agent (SIGTERM) and waits for it.
stop_agent() {
	[ -n "$agentpid" ] || return 0
	kill "$agentpid" 2>/dev/null || true
	wait "$agentpid" 2>/dev/null || true
	agentpid=
}
