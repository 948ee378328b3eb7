package executor

import (
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
)

// fakeRuntime is the executor's tests' name for the shared fake runtime.
type fakeRuntime = nodetest.FakeRuntime

func newFakeRuntime() *fakeRuntime { return nodetest.NewFakeRuntime() }

// execNow is the time of the executor's tests.
var execNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
