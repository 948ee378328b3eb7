package rules

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/engine/wire"
)

// FuzzDecodeSnapshot feeds arbitrary bytes to the snapshot reader. It must
// never panic; it must reject with a *SnapshotError or accept a snapshot
// that validates; and for every snapshot it accepts, every kind of pass
// must plan without panicking and keep every safety invariant, under the
// default policy and under one that collects as much as it may.
//
//	go test ./engine -run '^$' -fuzz FuzzDecodeSnapshot -fuzztime 30s
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte(nodetest.ValidSnapshotJSON))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"apiVersion":"nodegc/v1","kind":"NodeSnapshot","takenAt":"2025-03-01T12:00:00Z","imageFs":{"capacityBytes":0,"availableBytes":0}}`))
	for seed := range uint64(8) {
		s := nodetest.RandomSnapshot(rand.New(rand.NewPCG(seed, 7)))
		for i := range s.Containers {
			if !IsDead(s.Containers[i].State) && s.Containers[i].State != model.ContainerRunning {
				s.Containers[i].State = model.ContainerExited // a seed the decoder accepts
			}
		}
		b, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		if _, err := wire.DecodeSnapshot(b); err != nil {
			f.Fatalf("seed %d: %v", seed, err)
		}
		f.Add(b)
	}
	greedy := model.DefaultPolicy()
	greedy.Image = model.ImagePolicy{HighThresholdPercent: 0, LowThresholdPercent: 0, MinAge: time.Minute, MaxAge: time.Hour}
	greedy.Container = model.ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: 0}

	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := wire.DecodeSnapshot(data)
		if err != nil {
			var se *model.SnapshotError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SnapshotError: %v", err, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted a snapshot that does not validate: %v", err)
		}
		for _, p := range []model.Policy{model.DefaultPolicy(), greedy} {
			for _, kind := range []model.PassKind{model.PassImages, model.PassContainers, model.PassFull, model.PassReclaimAll} {
				plan := PlanPass(s, p, kind, s.TakenAt)
				if bad := checkPlanSafety(s, p, kind, s.TakenAt, plan); len(bad) > 0 {
					t.Fatalf("%s pass breaks the safety invariants:\n  %s", kind, strings.Join(bad, "\n  "))
				}
			}
		}
	})
}
