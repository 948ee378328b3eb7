#!/usr/bin/env bash
# sandbox.sh up|status|down [flags]: a real containerd with a seeded workload
# for trying nodegc by hand (make sandbox / make sandbox-down). It runs on a
# 256 MiB tmpfs filled past the high threshold (85%), with dead containers, an
# old sandbox and a stopped pod, and prints the --runtime-endpoint to pass to
# nodegc. Everything lives under /tmp/nodegc-sandbox; down removes it all.
# Needs root: it mounts a tmpfs and runs containerd. --runtime containerd2 runs
# containerd 2 (built from source once) instead of Debian's containerd 1.6.
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-up}
case "$cmd" in
up | status | down) shift || true ;;
*)
	echo "usage: $0 up|status|down [flags]" >&2
	exit 2
	;;
esac
if [ "$(id -u)" -ne 0 ]; then
	echo "sandbox: needs root (it mounts a tmpfs and runs containerd); try: sudo $0 $cmd" >&2
	exit 1
fi
if [ "$cmd" = up ]; then
	./scripts/install-deps.sh
	# containerd 2 is built from source once (cached); see build-containerd2.sh.
	prev=
	for a in "$@"; do
		case "$prev|$a" in
		-runtime\|containerd2 | --runtime\|containerd2 | -runtime\|containerd-2* | --runtime\|containerd-2* | \
			*\|-runtime=containerd2 | *\|--runtime=containerd2 | *\|-runtime=containerd-2* | *\|--runtime=containerd-2*)
			./scripts/build-containerd2.sh >/dev/null
			;;
		esac
		prev=$a
	done
fi
exec "${GO:-go}" run ./internal/realnode/cmd/nodegc-sandbox "$cmd" "$@"
