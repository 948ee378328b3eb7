package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// The tests share one cluster (sharedCluster): the first test that asks
// starts it (about 25 s: containerd, the control plane, the kubelet, and
// deploy/ rolled out), and TestMain ends it after the last, so the suite
// pays for one start however many tests it runs.

func TestMain(m *testing.M) {
	code := m.Run()
	if !suite.teardown() && code == 0 {
		code = 1
	}
	if imageArchive != "" {
		os.RemoveAll(filepath.Dir(imageArchive))
	}
	os.Exit(code)
}

// suite is the shared cluster and the testing.TB it was built with.
var suite = &suiteTB{}

// suiteTB is the testing.TB the shared cluster is built and ended with.
// Its cleanups run in TestMain after every test, its temp dirs and its
// Context last as long, and what it logs or reports goes to the test
// being run (to stderr between tests and after the last). A failure while
// the cluster starts fails (or, without root or binaries, skips) the test
// that started it, and every later test with the same reason.
type suiteTB struct {
	// TB is the test that started the cluster; it serves only the
	// methods suiteTB does not define, none of which the cluster uses.
	testing.TB

	once sync.Once
	c    *cluster
	// skipped or failed says why the cluster did not start.
	skipped, failed string

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	cur      testing.TB // the test being run; nil between tests
	cleanups []func()
	anyFail  bool // a test that used the cluster failed, or a cleanup did
	// idleFail is a failure reported with no test running (a cleanup's).
	idleFail bool
}

// sharedCluster returns the cluster, starting it on first use, with the
// agent's pod rolled out.
func sharedCluster(t *testing.T) *cluster {
	t.Helper()
	suite.enter(t)
	suite.once.Do(func() {
		suite.TB = t
		suite.ctx, suite.cancel = context.WithCancel(context.Background())
		c := startCluster(suite)
		// The kubelet's periods are 1 and 5 minutes; here the agent's
		// passes come every 2 s, so a test waits seconds for the next.
		c.agentArgs = []string{"--container-gc-period=2s", "--image-gc-period=2s"}
		c.port = c.applyDeploy(suite)
		suite.c = c
	})
	switch {
	case suite.c != nil:
		if suite.c.uninstalled { // by TestUninstall: install again
			suite.c.uninstalled = false
			suite.c.port = suite.c.applyDeploy(suite)
		}
		return suite.c
	case suite.skipped != "":
		t.Skip(suite.skipped)
	case suite.failed != "":
		t.Fatalf("the shared cluster did not start: %s", suite.failed)
	}
	t.Fatal("the shared cluster did not start (see the first test that used it)")
	return nil
}

// enter makes t the test the cluster reports to until t ends.
func (s *suiteTB) enter(t *testing.T) {
	s.mu.Lock()
	s.cur = t
	s.mu.Unlock()
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.Failed() {
			s.anyFail = true
		}
		s.cur = nil
	})
}

// teardown runs the cleanups, last first, each on a goroutine of its own
// (a Fatal there ends only it); it reports whether all went well.
func (s *suiteTB) teardown() bool {
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Lock()
	s.cur = nil
	fns := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		done := make(chan struct{})
		go func() {
			defer close(done)
			fns[i]()
		}()
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.idleFail
}

func (s *suiteTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *suiteTB) TempDir() string {
	dir, err := os.MkdirTemp("", "nodegc-cluster-suite-")
	if err != nil {
		s.Fatal(err)
	}
	s.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (s *suiteTB) Context() context.Context { return s.ctx }
func (s *suiteTB) Name() string             { return "cluster" }
func (s *suiteTB) Helper()                  {}

func (s *suiteTB) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.anyFail || (s.cur != nil && s.cur.Failed())
}

func (s *suiteTB) Log(args ...any) { s.Logf("%s", fmt.Sprint(args...)) }

func (s *suiteTB) Logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != nil {
		s.cur.Logf(format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, "cluster: "+format+"\n", args...)
}

func (s *suiteTB) Error(args ...any) { s.Errorf("%s", fmt.Sprint(args...)) }

func (s *suiteTB) Errorf(format string, args ...any) {
	s.Logf("ERROR: "+format, args...)
	s.Fail()
}

func (s *suiteTB) Fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.anyFail = true
	if s.cur != nil {
		s.cur.Fail()
	} else {
		s.idleFail = true
	}
}

func (s *suiteTB) Fatal(args ...any) { s.Fatalf("%s", fmt.Sprint(args...)) }

func (s *suiteTB) Fatalf(format string, args ...any) {
	if s.c == nil && s.failed == "" {
		s.failed = fmt.Sprintf(format, args...)
	}
	s.Errorf(format, args...)
	s.FailNow()
}

// FailNow ends the calling goroutine: the test's, while the cluster
// starts (through its own FailNow), or a cleanup's.
func (s *suiteTB) FailNow() {
	s.Fail()
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur != nil {
		cur.FailNow()
	}
	runtime.Goexit()
}

func (s *suiteTB) Skip(args ...any) { s.Skipf("%s", fmt.Sprint(args...)) }

// Skipf skips the test that is starting the cluster (root or binaries
// are missing); later tests skip with the same reason.
func (s *suiteTB) Skipf(format string, args ...any) {
	s.skipped = fmt.Sprintf(format, args...)
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil {
		s.Logf("skip: %s", s.skipped)
		runtime.Goexit()
	}
	cur.Skip(s.skipped)
}

func (s *suiteTB) SkipNow() { s.Skipf("skipped") }
