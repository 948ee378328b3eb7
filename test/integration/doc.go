// Package integration proves nodegc's real code paths against a real
// containerd: the engine with the CRI adapter, and the built nodegc binary,
// driving a private containerd on a size-limited tmpfs started by
// internal/realnode. It holds only tests and benchmarks.
//
// Every test runs once per runtime of realnode.Runtimes (forEachRuntime):
// Debian's containerd 1.6 and containerd 2.2 built from source by
// scripts/build-containerd2.sh (make deps), in subtests named
// containerd-1.6 and containerd-2.2. Each starts its own node with
// realnode.Start, so without root or a runtime the test skips, except under
// NODEGC_REQUIRE_CONTAINERD=1 (CI), where a skip is a failure. Run it with
//
//	NODEGC_REQUIRE_CONTAINERD=1 go test ./test/integration/ -count=1 -v
//	NODEGC_REQUIRE_CONTAINERD=1 go test ./test/integration/ -count=1 -run '/containerd-2.2'
//
// and the benchmarks (one real image GC pass of 50 images against 50 `ctr
// images rm` processes) with
//
//	NODEGC_REQUIRE_CONTAINERD=1 go test ./test/integration/ -run '^$' -bench . -benchtime=5x -count=1
package integration
