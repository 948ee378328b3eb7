#!/usr/bin/env bash
# Measures how soon a dashboard that attaches to a node's agent shows its
# first frame, beside a dashboard that runs its own engine (issue 24: a
# dashboard attaching shows its first frame within 200 ms). One
# `nodegc simnode --preset large` (1,000 pods, 2,000 images) and one
# `nodegc agent` on it (state dir A); SETTLE seconds later, ROUNDS rounds,
# each starting the dashboard four times in a 120x36 tmux pane: attached
# (state dir A, where the agent's control socket is) and standalone (state
# dir B, no agent: its own engine), each measured two ways, alternated:
#   session  from the tmux command that creates the session and runs
#            nodegc in it (the script's measure before the exec one): it
#            includes the tmux session and, on the first start, its server;
#   exec     from nodegc's exec: the session runs bash first, and the
#            command line, sent with send-keys, has bash write the time
#            ($EPOCHREALTIME) just before it execs nodegc.
# The screen is read about every 10 ms (so each time may be late by that
# and a capture-pane); the times are to the first frame (the tab bar) and
# to the node on screen (the image filesystem's capacity line), and,
# attached, to the engine line naming the agent. It prints one line per
# start and the medians.
#
# Usage: scripts/measure-attach.sh   (as root; needs tmux, curl, bash 5)
# Environment: ROUNDS (default 8), SETTLE (seconds between the agent's
# /readyz and the first start, default 5: its first container pass comes a
# minute after it starts), BIN (a built nodegc; default: build one), VS
# (another built nodegc: each round also starts its dashboard attached to
# the same agent, as mode attached-vs, to compare two builds side by side).
set -euo pipefail

cd "$(dirname "$0")/.."
me=attach
# shellcheck source=scripts/measure-lib.sh
. scripts/measure-lib.sh
rounds=${ROUNDS:-8}
need_tmux

start_simnode
start_agent
wait_agent /readyz
sleep "${SETTLE:-5}"

nowns() { date +%s%N; }

# start METHOD MODE STATEDIR: one dashboard start; prints METHOD MODE FIRST
# NODE ATTACHED (ms).
start() {
	local method=$1 mode=$2 dir=$3 t0 first= node= attached=- screen now b=$bin
	[ "$mode" != attached-vs ] || b=$VS
	local session=$method-$mode cmd="exec '$b' --kubelet-pid -1 --simulated --runtime-endpoint unix://$work/sim.sock --state-dir $dir"
	rm -f "$work/exec-time"
	if [ "$method" = session ]; then
		t0=$(nowns)
		tm new-session -d -x 120 -y 36 -s "$session" "$cmd"
	else
		tm new-session -d -x 120 -y 36 -s "$session" "exec bash --norc --noprofile"
		# The shell is up when the pane shows its prompt.
		until [ -n "$(tm capture-pane -p -t "$session" 2>/dev/null | tr -d '[:space:]')" ]; do sleep 0.01; done
		tm send-keys -t "$session" "printf '%s\n' \"\$EPOCHREALTIME\" >$work/exec-time; $cmd" Enter
	fi
	local end=$((SECONDS + 60))
	while [ $SECONDS -lt $end ]; do
		screen=$(tm capture-pane -p -t "$session" 2>/dev/null || true)
		now=$(nowns)
		[ -n "$first" ] || [[ $screen != *Overview* ]] || first=$now
		[ -n "$node" ] || [[ $screen != *"capacity "* ]] || node=$now
		if [ "$mode" != standalone ] && [ "$attached" = - ] && [[ $screen == *"attached to agent"* ]]; then
			attached=$now
		fi
		if [ -n "$first" ] && [ -n "$node" ] && { [ "$mode" = standalone ] || [ "$attached" != - ]; }; then
			break
		fi
		sleep 0.01
	done
	tm kill-session -t "$session" >/dev/null 2>&1 || true
	[ -n "$first" ] && [ -n "$node" ] || die "$session: no frame within 60 s"
	[ "$mode" = standalone ] || [ "$attached" != - ] || die "$session: never said it was attached within 60 s"
	if [ "$method" = exec ]; then
		[ -s "$work/exec-time" ] || die "$session: the shell wrote no exec time"
		t0=$(tr -d . <"$work/exec-time")000 # microseconds to nanoseconds
	fi
	ms() { [ "$1" = - ] && echo - || echo $((($1 - t0) / 1000000)); }
	echo "$method $mode $(ms "$first") $(ms "$node") $(ms "$attached")"
}

printf '%-8s %-11s %8s %8s %12s\n' METHOD MODE FIRST_MS NODE_MS ATTACHED_MS
results=$work/results
for r in $(seq "$rounds"); do
	order=(attached standalone)
	[ -z "${VS:-}" ] || order=(attached attached-vs standalone)
	if [ $((r % 2)) -eq 0 ]; then
		for ((i = 0, j = ${#order[@]} - 1; i < j; i++, j--)); do
			m=${order[i]} order[i]=${order[j]} order[j]=$m
		done
	fi
	for method in session exec; do
		for mode in "${order[@]}"; do
			dir=$work/state-agent
			[ "$mode" != standalone ] || dir=$work/state-own
			line=$(start "$method" "$mode" "$dir")
			echo "$line" >>"$results"
			# shellcheck disable=SC2086
			printf '%-8s %-11s %8s %8s %12s\n' $line
			sleep 1
		done
	done
done
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR == 0) exit; m = (NR + 1) / 2; print (NR % 2) ? a[m] : (a[m - 0.5] + a[m + 0.5]) / 2 }'; }
range() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) print lo "–" hi }'; }
for method in session exec; do
	for mode in attached ${VS:+attached-vs} standalone; do
		col() { awk -v m="$method" -v d="$mode" -v c="$1" '$1 == m && $2 == d && $c != "-" { print $c }' "$results"; }
		a=$(col 5 | median)
		echo "median $method $mode: first frame $(col 3 | median) ms ($(col 3 | range)), node on screen $(col 4 | median) ms ($(col 4 | range))${a:+, attached line $a ms}"
	done
done
