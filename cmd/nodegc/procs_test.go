package main

import (
	"slices"
	"testing"

	"github.com/nodegc/nodegc/engine"
)

// TestOneProcWhileIdle pins the dashboard's Ps: one while no pass runs,
// all of them (the runtime's choice at start) while one does, each
// change set once.
func TestOneProcWhileIdle(t *testing.T) {
	idle := engine.Status{}
	running := func(k engine.PassKind) engine.Status { return engine.Status{Running: k} }
	for _, tc := range []struct {
		name    string
		first   engine.Status
		notices []engine.Status
		want    []int
	}{
		{"an idle start: one P", idle, nil, []int{1}},
		{"a pass: all the Ps while it runs, one after", idle,
			[]engine.Status{running(engine.PassContainers), running(engine.PassContainers), idle}, []int{1, 4, 1}},
		{"started inside a pass: all the Ps at once", running(engine.PassImages),
			[]engine.Status{idle}, []int{4, 1}},
		{"notices of an idle node change nothing", idle,
			[]engine.Status{idle, idle, idle}, []int{1}},
		{"back-to-back passes keep all the Ps", idle,
			[]engine.Status{running(engine.PassImages), running(engine.PassContainers), idle}, []int{1, 4, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := make(chan engine.Notice, len(tc.notices))
			for _, st := range tc.notices {
				ch <- engine.Notice{Status: st}
			}
			close(ch)
			var got []int
			followPasses(ch, tc.first, 4, func(n int) int { got = append(got, n); return 0 })
			if !slices.Equal(got, tc.want) {
				t.Errorf("Ps set %v; want %v", got, tc.want)
			}
		})
	}
}
