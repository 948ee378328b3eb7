// Package e2e drives the built nodegc binary as a person would: the
// dashboard runs on the simulated node (--demo) in a private tmux server of a
// fixed size, keys go in with send-keys and the screen is read back with
// capture-pane.
//
// The tests need tmux (scripts/install-deps.sh installs it). Without it they
// skip, except under NODEGC_REQUIRE_CONTAINERD=1 (CI), where they fail:
//
//	go test ./test/e2e/ -count=1 -v
package e2e
