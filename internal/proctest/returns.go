package proctest

import (
	"testing"
	"time"
)

// Hang is how long Returns waits before it calls a call hung. It is a
// bound on a hang, not on speed: the calls it guards return at once or
// never, and a test asserts no speed (speed is a benchmark's).
const Hang = time.Minute

// Returns runs f and fails t when f has not returned within Hang (f then
// stays behind); otherwise it returns f's results. It is how a test says
// "this never waits on that": Stop with a server that never answers, a
// pass with an API server that refuses.
func Returns[T any](t testing.TB, what string, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(Hang):
		t.Fatalf("%s did not return within %v", what, Hang)
		var zero T
		return zero, nil
	}
}

// Done is Returns for a call with no result.
func Done(t testing.TB, what string, f func()) {
	t.Helper()
	Returns(t, what, func() (struct{}, error) { f(); return struct{}{}, nil })
}
