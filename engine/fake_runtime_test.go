package engine

import "github.com/nodegc/nodegc/engine/internal/nodetest"

// fakeRuntime is the engine's tests' name for the shared fake runtime.
type fakeRuntime = nodetest.FakeRuntime

func newFakeRuntime() *fakeRuntime { return nodetest.NewFakeRuntime() }
