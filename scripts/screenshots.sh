#!/usr/bin/env bash
# Regenerates screenshots/*.png from the real binary: nodegc --demo runs in a
# detached tmux session of a fixed size, the script presses keys as a person
# would, captures each screen with `tmux capture-pane -e -p` and renders it
# with freeze (pinned in tools.mod). Usage: scripts/screenshots.sh [outdir]
#
# Environment: VERSION (shown on the Overview; default "dev"), SEED (the
# simulated node's seed; default 1), COLS/ROWS (default 100x30), KEEP=1 keeps
# the captured .ansi files next to the PNGs.
set -euo pipefail

cd "$(dirname "$0")/.."
out=${1:-screenshots}
cols=${COLS:-100}
rows=${ROWS:-30}
seed=${SEED:-1}
version=${VERSION:-dev}
go=${GO:-go}

log() { echo "screenshots: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# Tools: tmux to run the dashboard, rsvg-convert (librsvg2-bin) for freeze's
# PNG output, and a monospaced font for it.
need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v rsvg-convert >/dev/null 2>&1 || need+=(librsvg2-bin)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ] || need+=(fonts-dejavu-core)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		die "missing ${need[*]}: install them (apt-get install ${need[*]})"
	fi
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

work=$(mktemp -d /tmp/nodegc-shots.XXXXXX)
sock="$work/tmux.sock" # in $work, so that it goes with it
tm() { tmux -S "$sock" "$@"; }
cleanup() {
	tm kill-server >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

log "building"
$go build -ldflags "-X main.version=$version" -o "$work/nodegc" ./cmd/nodegc
# Build freeze once, so the renders below do not each pay for it.
$go build -modfile=tools.mod -o "$work/freeze" github.com/charmbracelet/freeze

# screen prints the pane as plain text.
screen() { tm capture-pane -p -t shots; }

# wait_for REGEX: polls the pane until REGEX (grep -E) shows, then until
# two captures 300 ms apart are the same, so the frame is complete.
wait_for() {
	local re=$1 deadline=$((SECONDS + 20)) prev="" cur
	until screen | grep -Eq -- "$re"; do
		[ $SECONDS -lt $deadline ] || {
			screen >&2
			die "timed out waiting for /$re/"
		}
		sleep 0.2
	done
	while :; do
		cur=$(tm capture-pane -e -p -t shots)
		[ "$cur" = "$prev" ] && break
		[ $SECONDS -lt $deadline ] || die "screen did not settle waiting for /$re/"
		prev=$cur
		sleep 0.3
	done
}

# carry_sgr: capture-pane -e writes a colour once and lets it run on over
# the following lines, and ends colours with 39/49, as a terminal allows;
# freeze starts every line plain and does not honour 39/49. So rewrite each
# SGR sequence as a reset plus the full state in force, and open each line
# with that state.
carry_sgr() {
	perl -e '
	my %st; my @ord = qw(b f i u k r fg bg);
	sub canon { my @p = ("0"); for my $k (@ord) { push @p, $st{$k} if defined $st{$k} } return "\e[" . join(";", @p) . "m" }
	sub apply {
		my @p = split /[;:]/, $_[0]; @p = (0) unless @p;
		while (@p) {
			my $c = shift @p; $c = 0 if $c eq "";
			if ($c == 0) { %st = () }
			elsif ($c == 1) { $st{b} = 1 } elsif ($c == 2) { $st{f} = 2 } elsif ($c == 22) { delete @st{qw(b f)} }
			elsif ($c == 3) { $st{i} = 3 } elsif ($c == 23) { delete $st{i} }
			elsif ($c == 4) { $st{u} = 4 } elsif ($c == 24) { delete $st{u} }
			elsif ($c == 5) { $st{k} = 5 } elsif ($c == 25) { delete $st{k} }
			elsif ($c == 7) { $st{r} = 7 } elsif ($c == 27) { delete $st{r} }
			elsif ($c == 38 || $c == 48) {
				my $k = $c == 38 ? "fg" : "bg"; my $m = shift @p;
				if ($m == 5) { $st{$k} = "$c;5;" . shift @p } elsif ($m == 2) { $st{$k} = "$c;2;" . join(";", splice(@p, 0, 3)) }
			}
			elsif ($c == 39) { delete $st{fg} } elsif ($c == 49) { delete $st{bg} }
			elsif (($c >= 30 && $c <= 37) || ($c >= 90 && $c <= 97)) { $st{fg} = $c }
			elsif (($c >= 40 && $c <= 47) || ($c >= 100 && $c <= 107)) { $st{bg} = $c }
		}
	}
	while (<>) {
		my $pre = %st ? canon() : "";
		s/\e\[([0-9;:]*)m/apply($1); canon()/ge;
		print $pre, $_;
	}
	'
}

# shot NAME: captures the pane with its colours and renders NAME.png, in a
# monospaced font the renderer has (freeze's embedded font is ignored by
# rsvg-convert, which then falls back to a proportional one).
shot() {
	local name=$1
	tm capture-pane -e -p -t shots | carry_sgr >"$work/$name.ansi"
	"$work/freeze" --language ansi --window --theme dracula \
		--background '#1e1f29' --padding 20,24 --margin 0 \
		--border.radius 8 --font.family 'DejaVu Sans Mono' \
		--font.size 14 --line-height 1.2 \
		-o "$out/$name.png" <"$work/$name.ansi" >/dev/null
	[ -s "$out/$name.png" ] || die "freeze wrote no $out/$name.png"
	[ "${KEEP:-}" = 1 ] && cp "$work/$name.ansi" "$out/$name.ansi"
	log "wrote $out/$name.png"
}

# press KEY...: sends keys to the dashboard.
press() { tm send-keys -t shots "$@"; }

mkdir -p "$out"
# COLORTERM makes the dashboard write truecolor, which tmux keeps as RGB in
# its grid, so the capture holds the dashboard's exact colours.
tm new-session -d -x "$cols" -y "$rows" -s shots \
	"env COLORTERM=truecolor TERM=tmux-256color '$work/nodegc' --demo --demo-seed $seed; sleep 600"
tm set-option -t shots status off >/dev/null

wait_for 'NODEGC .*cpu [0-9.]+%'
shot overview

press 2
wait_for 'cut line'
shot images

press 3
wait_for 'POD / CONTAINER'
shot containers

press 4
# The Cgroups pane: the kubepods tree, or a line saying why there is none
# (the simulated node has no cgroups).
wait_for 'kubepods|[Cc]groups[:.]|no kubepods|cgroup'
shot cgroups

press 1
wait_for 'IMAGE FILESYSTEM'
press D
wait_for 'Dry-run'
shot preview

# Apply exactly the previewed plan, so the Events pane has a pass to show.
press y
press 5
wait_for 'removed|freed'
shot events

# enter on the pass: what it removed.
press Enter
wait_for 'Pass #[0-9]+'
shot pass-detail
# esc alone: tmux sends esc and a key typed at once as alt+key.
press Escape
sleep 0.3

# An image's details: tags, digests, size, its place in the order, and
# the containers using it.
press 2
wait_for 'IMAGE +(ID +)?SIZE'
press j j Enter
wait_for 'CONTAINERS USING IT'
shot image-detail
press Escape
sleep 0.3

# The history on Overview, at a size that gives it room.
press 1
tm resize-window -t shots -x 160 -y 48
wait_for 'USAGE HISTORY'
shot history
tm resize-window -t shots -x "$cols" -y "$rows"

press 1
wait_for 'IMAGE FILESYSTEM'
press '?'
wait_for 'shift\+tab'
shot help

press q

# The fleet view needs a cluster: test/fleet's simulated one (root, ip(8),
# etcd and `make kube`), FLEET_NODES simulated nodes behind a real
# kube-apiserver. FLEET=0 skips it.
if [ "${FLEET:-1}" = 1 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		log "fleet.png: not root, skipped (test/fleet needs network namespaces)"
	else
		log "fleet: ${FLEET_NODES:-24} simulated nodes behind a kube-apiserver"
		NODEGC_FLEET_NODES=${FLEET_NODES:-24} NODEGC_FLEET_SHOT="$work/fleet.raw" \
			flock /tmp/nodegc-real.lock $go test -count=1 -timeout 15m -run 'TestFleetAtScale$' ./test/fleet >"$work/fleet.log" 2>&1 ||
			{ tail -40 "$work/fleet.log" >&2; die "test/fleet failed"; }
		carry_sgr <"$work/fleet.raw" >"$work/fleet.ansi"
		"$work/freeze" --language ansi --window --theme dracula \
			--background '#1e1f29' --padding 20,24 --margin 0 \
			--border.radius 8 --font.family 'DejaVu Sans Mono' \
			--font.size 14 --line-height 1.2 \
			-o "$out/fleet.png" <"$work/fleet.ansi" >/dev/null
		[ -s "$out/fleet.png" ] || die "freeze wrote no $out/fleet.png"
		log "wrote $out/fleet.png"
	fi
fi
log "done: $(ls "$out"/*.png | tr '\n' ' ')"
