package integration

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// killer is a Remover that kills containerd (SIGKILL, as a crash) right
// after the first removal that succeeds once armed.
type killer struct {
	engine.Remover
	n     *realnode.Node
	armed atomic.Bool
}

func (k *killer) RemoveImage(ctx context.Context, id string) error {
	err := k.Remover.RemoveImage(ctx, id)
	if err == nil && k.armed.CompareAndSwap(true, false) {
		if serr := k.n.Stop(); serr != nil {
			return serr
		}
	}
	return err
}

// TestRacesAndFaults changes the runtime between plan and apply, kills
// containerd in the middle of a pass, and runs the binary against a
// runtime that is down.
func TestRacesAndFaults(t *testing.T) { forEachRuntime(t, testRacesAndFaults) }

func testRacesAndFaults(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 128*MiB)
	m := n.Must(t)
	c := dial(t, n)
	ctx := context.Background()
	state := t.TempDir()
	k := &killer{Remover: c, n: n}
	clk := newClock(time.Now())
	e := newEngine(t, n, engineOptions{Runtime: c, Remover: k, Policy: engine.DefaultPolicy(), StateDir: state, Clock: clk})
	sb := m.RunPod("racer", "default", podUID("faults-racer"), "")

	// plan imports count images, lets an hour pass so they are past
	// MinAge, and plans a reclaim of every unused image: exactly them.
	plan := func(t *testing.T, count int, prefix string) ([]realnode.ImageRef, engine.Plan) {
		t.Helper()
		imgs := m.ImportImages(count, 0, prefix)
		clk.Set(time.Now())
		if _, err := e.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Set(time.Now().Add(time.Hour))
		p, err := e.Plan(ctx, engine.PassReclaimAll)
		if err != nil {
			t.Fatal(err)
		}
		var planned []string
		for _, rm := range p.ImageGC.Remove {
			planned = append(planned, rm.ID)
		}
		if !sameSet(planned, ids(imgs)) {
			t.Fatalf("plan removes %v, want the new images %v", planned, ids(imgs))
		}
		return imgs, p
	}

	t.Run("an image deleted behind nodegc's back between plan and apply counts as already gone", func(t *testing.T) {
		imgs, p := plan(t, 3, "behind")
		journaled := len(journalIDs(t, state, engine.ItemImage, 0))
		m.Ctr("images", "rm", "--sync", imgs[0].Ref, imgs[0].ID)
		if !realnode.Eventually(15*time.Second, func() bool { return !listed(t, n, imgs[0].ID) }) {
			t.Fatalf("CRI still lists %s after ctr images rm", imgs[0].Ref)
		}
		r, err := e.Apply(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if it := item(t, r, imgs[0].ID); it.Outcome != engine.OutcomeGone {
			t.Errorf("deleted image: outcome %q (%s), want %q", it.Outcome, it.Error, engine.OutcomeGone)
		}
		if got := itemsWith(r, engine.ItemImage, engine.OutcomeRemoved); !sameSet(got, ids(imgs[1:])) || !r.OK() {
			t.Errorf("removed %v, want %v; items %+v", got, ids(imgs[1:]), r.Items)
		}
		if got := journalIDs(t, state, engine.ItemImage, journaled); !sameSet(got, ids(imgs[1:])) {
			t.Errorf("journal got %v, want only the images nodegc removed %v", got, ids(imgs[1:]))
		}
	})

	t.Run("a container started on a candidate image between plan and apply keeps that image", func(t *testing.T) {
		imgs, p := plan(t, 2, "late")
		m.StartContainer(sb, "late", imgs[0].Ref, 0)
		r, err := e.Apply(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		it := item(t, r, imgs[0].ID)
		if it.Outcome != engine.OutcomeSkipped || !strings.Contains(it.Detail, "in use") {
			t.Errorf("image now in use: outcome %q detail %q, want skipped as in use", it.Outcome, it.Detail)
		}
		if !listed(t, n, imgs[0].ID) {
			t.Errorf("image %s in use by a running container was removed", imgs[0].Ref)
		}
		if got := item(t, r, imgs[1].ID); got.Outcome != engine.OutcomeRemoved {
			t.Errorf("other image: outcome %q (%s), want removed", got.Outcome, got.Error)
		}
	})

	t.Run("containerd killed in the middle of a pass fails the rest per item and the next pass after a restart succeeds", func(t *testing.T) {
		imgs, p := plan(t, 4, "crash")
		k.armed.Store(true)
		r, err := e.Apply(ctx, p)
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		if n.Running() {
			t.Fatal("containerd was not killed during the pass")
		}
		removed := itemsWith(r, engine.ItemImage, engine.OutcomeRemoved)
		failed := itemsWith(r, engine.ItemImage, engine.OutcomeFailed)
		if len(removed) != 1 || len(failed) != 3 || r.OK() {
			t.Errorf("removed %v, failed %v, ok %v; want 1 removed then 3 failed", removed, failed, r.OK())
		}
		for _, id := range failed {
			if it := item(t, r, id); it.Error == "" {
				t.Errorf("failed item %s has no error", id)
			}
		}
		m.Restart()
		// The adapter's connection may still be in gRPC's reconnect
		// backoff for a moment; the next pass is the one after it has
		// reconnected, as the scheduler's next pass would be.
		if !realnode.Eventually(15*time.Second, func() bool { _, err := c.Info(ctx); return err == nil }) {
			t.Fatal("the CRI adapter did not reconnect after the restart")
		}
		r2, err := e.Run(ctx, engine.PassReclaimAll)
		if err != nil {
			t.Fatalf("pass after restart: %v", err)
		}
		if got := itemsWith(r2, engine.ItemImage, engine.OutcomeRemoved); !r2.OK() || !sameSet(got, failed) {
			t.Errorf("pass after restart: ok %v, removed %v, want %v; items %+v", r2.OK(), got, failed, r2.Items)
		}
		for _, img := range imgs {
			if listed(t, n, img.ID) {
				t.Errorf("image %s still listed", img.Ref)
			}
		}
	})

	t.Run("a runtime that is down at start makes the binary print one line and exit 1", func(t *testing.T) {
		journaled, err := engine.ReadJournal(state)
		if err != nil {
			t.Fatal(err)
		}
		e.Close() // the binary takes the state dir
		m.Stop()
		defer m.Restart()
		for _, cmd := range [][]string{{"gc", "--yes"}, {"plan"}} {
			res := runCLI(t, append(cmd, cliFlags(t, n, state)...)...)
			lines := strings.Split(strings.TrimRight(res.Stderr, "\n"), "\n")
			if res.Code != 1 || len(lines) != 1 || lines[0] == "" || !strings.Contains(lines[0], n.Socket()) {
				t.Errorf("nodegc %s: exit %d, stderr %q; want exit 1 and one line naming the socket", cmd[0], res.Code, res.Stderr)
			}
			if res.Stdout != "" {
				t.Errorf("nodegc %s: stdout %q, want nothing", cmd[0], res.Stdout)
			}
			t.Logf("nodegc %s: %s", cmd[0], lines[0])
		}
		if js, err := engine.ReadJournal(state); err != nil || len(js) != len(journaled) {
			t.Errorf("journal has %d entries (%v) after runs that could not connect, want %d", len(js), err, len(journaled))
		}
	})
}
