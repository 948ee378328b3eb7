#!/usr/bin/env bash
# Measures the idle dashboard: nodegc --demo (small, then --demo-scale large)
# runs in a detached tmux session of 100x30 at the default refresh, and the
# script reads its CPU time (utime+stime, fields 14 and 15 of /proc/PID/stat)
# and VmRSS from /proc 3 s after the first frame and again DURATION seconds
# later. It prints the CPU used over that window as a percentage of one core,
# the RSS at the window's start (RSS0) and end, the most it read once a
# minute in between (RSSMAX; RSS_LOG=FILE keeps every reading, with its
# anonymous and file-backed parts: the binary's own pages are file-backed),
# and the peak since start (VmHWM). Targets (issue 5): under 2% of one core, RSS under 80 MB.
#
# Usage: scripts/measure-idle.sh [scale...]   (default: small large)
# A scale "node-events" or "node-polling" measures instead the dashboard
# against a separate `nodegc simnode --preset large` process (issue 10):
# 120x36, with the runtime's event stream or with --events=false; run it
# with SETTLE=90 (and DURATION=1800 for the 30-minute RSS check). Passes
# on, SETTLE=90 puts in the window the full container pass that follows
# the preset's first one (which removes 4,050 items, so the next cannot be
# skipped as quiet); SETTLE=200 measures the idle node after it.
# A scale "agent" measures `nodegc agent` (no screen, no tmux) against a
# separate `nodegc simnode --preset large`, metrics on a loopback port, and
# then times SCRAPES scrapes of /metrics (default 100, one every 100 ms):
# median, p90 and most (issue 24: at most 0.3% of a core, 40 MB RSS, flat
# over 30 minutes; a scrape at most 5 ms). Run it with SETTLE=90.
# Environment: DURATION (default 60), SETTLE (default 3), BIN (a built
# nodegc; default: build one), EXTRA (more flags for nodegc), PROFILE (a
# directory: the dashboard, or the agent, writes there a CPU profile of
# about the window, SETTLE seconds after it starts for DURATION, and heap
# profiles at the window's start and end, as SCALE.cpu.pprof,
# SCALE.heap.pprof.base and SCALE.heap.pprof; read them with
# `go tool pprof`). What it shares with scripts/measure-attach.sh is in
# scripts/measure-lib.sh.
set -euo pipefail

cd "$(dirname "$0")/.."
me=idle
# shellcheck source=scripts/measure-lib.sh
. scripts/measure-lib.sh
duration=${DURATION:-60}
settle=${SETTLE:-3}
scales=("$@")
[ ${#scales[@]} -gt 0 ] || scales=(small large)

case " ${scales[*]} " in
*" small "* | *" large "* | *" node-"*) need_tmux ;;
esac

hz=$(getconf CLK_TCK)

# ticks PID: utime+stime of PID in clock ticks. The command name (field 2)
# may hold spaces, so count fields after its closing parenthesis.
ticks() {
	local rest
	rest=$(sed 's/^.*) //' "/proc/$1/stat")
	# After ") ", field 3 (state) is $1, so 14 and 15 are $12 and $13.
	awk '{ print $12 + $13 }' <<<"$rest"
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# rss_parts PID: "anon_kb N file_kb M" (RssAnon, RssFile).
rss_parts() { awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } END { print "anon_kb " a " file_kb " f }' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
now() { date +%s.%N; }
printf '%-6s %8s %10s %8s %9s %9s %9s %9s\n' SCALE WINDOW CPU_S CPU_% RSS0_MB RSS_MB RSSMAX_MB PEAK_MB
for scale in "${scales[@]}"; do
	session=idle-$scale
	simpid=
	profenv=()
	profvars=()
	if [ -n "${PROFILE:-}" ]; then
		mkdir -p "$PROFILE"
		profvars=("NODEGC_CPUPROFILE=$(realpath "$PROFILE")/$scale.cpu.pprof"
			"NODEGC_HEAPPROFILE=$(realpath "$PROFILE")/$scale.heap.pprof"
			"NODEGC_PROFILE_AFTER=${settle}s" "NODEGC_PROFILE_FOR=${duration}s")
		for v in "${profvars[@]}"; do profenv+=(-e "$v"); done
	fi
	case $scale in
	agent)
		start_simnode
		start_agent "${profvars[@]}"
		pid=$agentpid
		;;
	node-events | node-polling)
		events=true
		[ "$scale" = node-polling ] && events=false
		start_simnode
		# The state dir exists before the dashboard starts, as on a node
		# where nodegc has run: on a dir it creates, the dashboard starts
		# its passes paused and asks (issue 41), and q answers the question
		# instead of quitting.
		mkdir -m 700 "$work/state-$scale"
		tm new-session -d -x 120 -y 36 -s "$session" "${profenv[@]}" \
			"exec '$bin' --events=$events --kubelet-pid -1 --simulated --runtime-endpoint unix://$work/sim.sock --state-dir $work/state-$scale ${EXTRA:-}"
		;;
	*)
		# exec, so the pane's process is nodegc itself.
		tm new-session -d -x 100 -y 30 -s "$session" "${profenv[@]}" \
			"exec '$bin' --demo --demo-scale $scale ${EXTRA:-}"
		;;
	esac
	deadline=$((SECONDS + 120))
	if [ "$scale" = agent ]; then
		wait_agent /healthz
	else
		pid=$(tm display-message -p -t "$session" '#{pane_pid}')
		until tm capture-pane -p -t "$session" | grep -q 'NODEGC'; do
			[ $SECONDS -lt $deadline ] || die "$scale: the dashboard did not draw within 120 s"
			running "$pid" || die "$scale: nodegc exited"
			sleep 0.2
		done
	fi
	sleep "$settle"
	t0=$(now)
	c0=$(ticks "$pid")
	rss0=$(rss_kb "$pid")
	# RSS once a minute over the window (the most, for the growth check).
	rssmax=$rss0
	left=$duration
	while [ "$left" -gt 0 ]; do
		step=$((left < 60 ? left : 60))
		sleep "$step"
		left=$((left - step))
		r=$(rss_kb "$pid")
		[ "$r" -le "$rssmax" ] || rssmax=$r
		[ -z "${RSS_LOG:-}" ] || echo "$(date +%T) $scale rss_kb $r $(rss_parts "$pid")" >>"$RSS_LOG"
	done
	c1=$(ticks "$pid")
	t1=$(now)
	rss=$(rss_kb "$pid")
	hwm=$(hwm_kb "$pid")
	awk -v s="$scale" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v rss="$rss" -v rss0="$rss0" -v rssmax="$rssmax" -v hwm="$hwm" 'BEGIN {
		w = t1 - t0; cpu = (c1 - c0) / hz
		printf "%-6s %7.1fs %9.2fs %7.2f%% %9.1f %9.1f %9.1f %9.1f\n", s, w, cpu, 100 * cpu / w, rss0 / 1024, rss / 1024, rssmax / 1024, hwm / 1024
	}'
	if [ "$scale" = agent ]; then
		for _ in $(seq "${SCRAPES:-100}"); do
			curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/metrics"
			sleep 0.1
		done | sort -n | awk '{ t[NR] = $1 * 1000 } END {
			printf "agent: %d scrapes of /metrics: median %.2f ms, p90 %.2f ms, max %.2f ms\n", NR, t[int((NR + 1) / 2)], t[int(NR * 0.9)], t[NR] }'
		stop_agent
	fi
	# q asks first while a pass is in flight (the large node's container
	# pass takes seconds): answer it.
	[ "$scale" = agent ] || tm send-keys -t "$session" q
	deadline=$((SECONDS + 20))
	while running "$pid"; do
		if tm capture-pane -p -t "$session" 2>/dev/null | grep -q 'Quit anyway'; then
			tm send-keys -t "$session" y
		fi
		[ $SECONDS -lt $deadline ] || {
			log "$scale: nodegc did not quit on q; killing it"
			kill "$pid"
			break
		}
		sleep 0.2
	done
	stop_simnode
done
