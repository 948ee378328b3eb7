package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// TestPoolRemovesThePlanOnRealContainerd runs a reclaim pass with the
// default pool, which adapts its width to the runtime, on each real
// containerd: it removes exactly the plan, and the journal holds an intent
// and an outcome for each removal.
func TestPoolRemovesThePlanOnRealContainerd(t *testing.T) {
	forEachRuntime(t, testPoolRemovesThePlanOnRealContainerd)
}

func testPoolRemovesThePlanOnRealContainerd(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 512*MiB)
	c := dial(t, n)
	imgs := n.Must(t).ImportImages(48, 0, "pool")
	state := t.TempDir()
	detectAt(t, n, c, state, time.Now().Add(-time.Hour))
	e := newEngine(t, n, engineOptions{Runtime: c, Policy: engine.DefaultPolicy(), StateDir: state, AdaptivePool: true})
	defer e.Close()
	r, err := e.Run(context.Background(), engine.PassReclaimAll)
	if err != nil {
		t.Fatal(err)
	}
	got := itemsWith(r, engine.ItemImage, engine.OutcomeRemoved)
	if !r.OK() || !sameSet(got, ids(imgs)) {
		t.Errorf("ok %v, removed %v, want every imported image %v", r.OK(), got, ids(imgs))
	}
	if j := journalIDs(t, state, engine.ItemImage, 0); !sameSet(j, got) {
		t.Errorf("journal %v, report %v", j, got)
	}
	lines, err := engine.ReadJournalLines(state)
	if err != nil {
		t.Fatal(err)
	}
	if open := engine.OpenIntents(lines); len(open) != 0 || len(lines) != 2*len(got) {
		t.Errorf("journal has %d lines and open intents %v for %d removals, want an intent and an outcome each", len(lines), open, len(got))
	}
}

// TestSIGKILLMidPassLosesNothing kills `nodegc gc --reclaim-all` with
// SIGKILL at random points of its pass (after a random number of journal
// lines reached the disk), 20 times, on the real containerd, with a pool
// of 4 and with the default pool, which adapts its width, in turn. After
// the next start's reconciliation the journal accounts for every image the
// runtime no longer has, names none it still has, and holds no intent
// without an outcome.
func TestSIGKILLMidPassLosesNothing(t *testing.T) {
	n := startNode(t, realnode.Containerd16, 512*MiB)
	c := dial(t, n)
	bin := nodegc(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	const runs, perRun = 20, 10
	interrupted := 0
	for run := range runs {
		imgs := n.Must(t).ImportImages(perRun, 0, fmt.Sprintf("kill%d", run))
		state := t.TempDir()
		detectAt(t, n, c, state, time.Now().Add(-time.Hour))
		// Kill once this many journal lines are on disk: 1 is right after
		// the first intent, 2*perRun-1 just before the last outcome.
		killAt := 1 + rng.IntN(2*perRun-1)
		pool := []string{"--parallel", "4"}
		if run%2 == 1 {
			pool = nil // the default pool
		}
		args := append(append([]string{"gc", "--reclaim-all", "--yes"}, pool...), cliFlags(t, n, state)...)
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		journal := filepath.Join(state, "journal.jsonl")
		deadline := time.Now().Add(2 * time.Minute)
	wait:
		for {
			select {
			case <-done:
				break wait
			default:
			}
			if b, err := os.ReadFile(journal); err == nil && bytes.Count(b, []byte("\n")) >= killAt {
				cmd.Process.Kill()
				<-done
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				<-done
				t.Fatalf("run %d: gc did not finish in 2 minutes; stderr:\n%s", run, stderr.String())
			}
			time.Sleep(200 * time.Microsecond)
		}

		// The next start reconciles the journal.
		e := newEngine(t, n, engineOptions{Runtime: c, Policy: engine.DefaultPolicy(), StateDir: state})
		if _, err := e.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		lines, err := engine.ReadJournalLines(state)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		removed := map[string]bool{}
		for _, l := range lines {
			if l.Op == engine.JournalRemoved {
				removed[l.ID] = true
			}
		}
		gone := 0
		for _, img := range imgs {
			switch on := listed(t, n, img.ID); {
			case !on && !removed[img.ID]:
				t.Errorf("run %d (killed at line %d): image %s is gone but the journal does not say so", run, killAt, img.Ref)
			case on && removed[img.ID]:
				t.Errorf("run %d: the journal says %s was removed, the runtime still has it", run, img.Ref)
			case !on:
				gone++
			}
		}
		if open := engine.OpenIntents(lines); len(open) > 0 {
			t.Errorf("run %d: intents without outcome after reconciliation: %v", run, open)
		}
		if gone > 0 && gone < perRun {
			interrupted++
		}
		// Clear this run's images for the next one.
		if _, err := e.Run(context.Background(), engine.PassReclaimAll); err != nil {
			t.Fatal(err)
		}
		e.Close()
	}
	t.Logf("%d of %d runs were killed with some but not all images removed", interrupted, runs)
	if interrupted == 0 {
		t.Errorf("no run was killed in the middle of its removals: the test proved nothing")
	}
}
