package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodegc/nodegc/engine"
)

// PrivateRuntimeLocks points engine.RuntimeLockDirEnv at a new directory
// of this test process's (unless the variable is set already), for a test
// package's TestMain to call before m.Run. The engines a suite starts, in
// process or as commands that inherit the environment, then lock their
// runtimes there, not in /var/lib/nodegc/runtimes on the machine running
// the tests, which they would create and leave behind as root. Each test
// runtime has a socket of its own, so engines on different runtimes never
// meet; two deleting engines on one runtime still do, as on a node. The
// returned function removes the directory and restores the environment;
// TestMain calls it after m.Run.
func PrivateRuntimeLocks() (func(), error) {
	if _, ok := os.LookupEnv(engine.RuntimeLockDirEnv); ok {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "nodegc-runtime-locks-")
	if err != nil {
		return nil, fmt.Errorf("runtime lock dir: %w", err)
	}
	locks := filepath.Join(dir, "runtimes")
	if err := os.Setenv(engine.RuntimeLockDirEnv, locks); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("runtime lock dir: %w", err)
	}
	return func() {
		os.Unsetenv(engine.RuntimeLockDirEnv)
		os.RemoveAll(dir)
	}, nil
}

// Main runs the tests of a package that starts real engines, as its
// TestMain: m.Run with PrivateRuntimeLocks, then each cleanup in order
// (the package's own temporary files), then it exits with m's code.
func Main(m *testing.M, cleanup ...func()) {
	unlock, err := PrivateRuntimeLocks()
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
		unlock()
	}
	for _, c := range cleanup {
		c()
	}
	os.Exit(code)
}

// Eventually reports whether cond becomes true within d, asking every 20
// ms: a real runtime updates some of its views asynchronously (CRI learns
// of what ctr does through events).
func Eventually(d time.Duration, cond func() bool) bool {
	poll := func(context.Context) (bool, error) { return cond(), nil }
	return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, d, true, poll) == nil
}
