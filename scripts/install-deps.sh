#!/usr/bin/env bash
# Installs what nodegc's real-runtime tests and tools need, when missing:
# containerd, runc, tmux, etcd and prometheus (with promtool) from Debian's
# packages. Safe to run again.
set -euo pipefail
need=()
command -v containerd >/dev/null 2>&1 || need+=(containerd)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
# etcd for the real kube-apiserver the parity suite (test/kubelet) runs.
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
# ip(8) for test/fleet's network namespaces.
command -v ip >/dev/null 2>&1 || need+=(iproute2)
# prometheus (with promtool): promtool lints the agent's /metrics, and the
# real suite starts a prometheus server that scrapes the agent.
{ command -v promtool && command -v prometheus; } >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing ${need[*]} and cannot install them (needs root and apt-get); the real-runtime tests will skip" >&2
	exit 0
fi
echo "install-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
