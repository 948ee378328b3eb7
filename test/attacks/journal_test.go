package attacks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/proctest"
	"github.com/nodegc/nodegc/internal/simfs"
)

// Issue 20 items 8 to 11 and the re-check window: the journal says only
// what nodegc knows, reconciliation honours signals, the journal's
// history is bounded, records from a clock ahead are clamped, and an
// image's re-check does not trust a listing older than ViewWindow.

// dialNode connects to a simulated node's socket for the test.
func dialNode(t *testing.T, ep string) *cri.Client {
	t.Helper()
	c, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// removeImageCalls counts the RemoveImage calls the node served.
func removeImageCalls(calls []string) int {
	n := 0
	for _, c := range calls {
		if strings.HasSuffix(c, "/RemoveImage") {
			n++
		}
	}
	return n
}

func TestJournalNeverClaimsARemovalWhoseCallWasNotSent(t *testing.T) {
	state := t.TempDir()
	node, ep := startSimnode(t)
	node.SetLatency(300 * time.Millisecond)
	cmd := exec.Command(binary(t), "gc", "--images", "--yes", "--parallel", "2", "--minimum-image-ttl-duration", "0", "--image-gc-high-threshold", "1", "--image-gc-low-threshold", "0", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitRemovals(node)
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	node.SetLatency(0)
	sent := removeImageCalls(node.MutatingCalls())
	// Every image the killed pass planned goes for another reason before
	// the next start: its intent may be on disk, its call was never sent.
	c := dialNode(t, ep)
	lines, err := engine.ReadJournalLines(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Op == engine.JournalIntent && l.Kind == engine.ItemImage {
			if err := c.RemoveImage(context.Background(), l.ID); err != nil {
				t.Logf("remove %s: %v", l.ID, err)
			}
		}
	}
	e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simfs.Local(node), Policy: engine.DefaultPolicy(), StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	js, err := engine.ReadJournal(state)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) > sent {
		t.Errorf("the journal says %d images were removed; nodegc sent %d RemoveImage calls", len(js), sent)
	}
	lines, _ = engine.ReadJournalLines(state)
	if open := engine.OpenIntents(lines); len(open) > 0 {
		t.Errorf("%d intents left open after reconciliation", len(open))
	}
}

// hangingImageStatus is a runtime that never answers ImageStatus until
// its context ends (or release is closed, when the test ends, so a call
// a failed test left hung returns and frees the engine). It tells asked
// of each call as it begins, and keeps the error that ended each: it
// says what ended the wait, a signal (context.Canceled) or the
// reconciliation's own deadline (context.DeadlineExceeded).
type hangingImageStatus struct {
	*cri.Client
	asked   chan struct{}
	release chan struct{}
	mu      sync.Mutex
	ended   []error
}

func (h *hangingImageStatus) ImageStatus(ctx context.Context, id string) (engine.Image, error) {
	select {
	case h.asked <- struct{}{}:
	default:
	}
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
	case <-h.release:
		err = errors.New("released at the end of the test")
	}
	h.mu.Lock()
	h.ended = append(h.ended, err)
	h.mu.Unlock()
	return engine.Image{}, err
}

// endedBy returns the errors that ended the ImageStatus calls so far.
func (h *hangingImageStatus) endedBy() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ended)
}

// TestReconciliationHonoursSignalsAndADeadline pins what ends a
// reconciliation that waits on a runtime that never answers: a signal
// (the start's context ends, as SIGINT ends gc's) or, with none, the
// reconciliation's own deadline. Nothing is timed: the runtime's call
// ends only with its context, and the error it ends with tells the two
// apart (the signal's context.Canceled, the deadline's
// context.DeadlineExceeded); a snapshot that never returns fails after
// proctest.Hang.
func TestReconciliationHonoursSignalsAndADeadline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signal bool  // the start's context ends once the runtime is asked
		want   error // what ends the runtime's call
	}{
		{"a signal during reconciliation against a runtime that hangs ends it", true, context.Canceled},
		{"a runtime that hangs holds the first snapshot back only until the deadline", false, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			node, ep := startSimnode(t)
			c := dialNode(t, ep)
			imgs, err := c.ListImages(context.Background())
			if err != nil || len(imgs) == 0 {
				t.Fatalf("list images: %v", err)
			}
			// An interrupted pass's intent, as any version writes it.
			in, _ := json.Marshal(engine.JournalEntry{Time: time.Now(), Op: engine.JournalIntent, Pass: "r/1", Kind: engine.ItemImage, ID: imgs[0].ID, Reason: "space"})
			if err := os.WriteFile(filepath.Join(state, "journal.jsonl"), append(in, '\n'), 0o600); err != nil {
				t.Fatal(err)
			}
			rt := &hangingImageStatus{Client: c, asked: make(chan struct{}, 1), release: make(chan struct{})}
			e, err := engine.New(engine.Options{Reader: rt, Remover: rt, Statfs: simfs.Local(node), Policy: engine.DefaultPolicy(), StateDir: state})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			defer close(rt.release) // runs before Close
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.signal {
				go func() {
					select {
					case <-rt.asked:
						cancel()
					case <-ctx.Done():
					}
				}()
			}
			_, err = proctest.Returns(t, "the first snapshot", func() (engine.Snapshot, error) { return e.Snapshot(ctx) })
			if !tc.signal && err != nil {
				t.Errorf("the first snapshot failed: %v", err)
			}
			ended := rt.endedBy()
			if len(ended) == 0 {
				t.Fatal("the reconciliation never asked the runtime about the open intent")
			}
			for _, err := range ended {
				if !errors.Is(err, tc.want) {
					t.Errorf("the runtime's call ended with %v, want %v", err, tc.want)
				}
			}
			lines, err := engine.ReadJournalLines(state)
			if err != nil {
				t.Fatal(err)
			}
			if open := engine.OpenIntents(lines); len(open) != 1 {
				t.Errorf("open intents %+v, want the one it could not check left for the next try", open)
			}
		})
	}
}

func TestJournalHistoryIsBoundedAndAStartDoesNotReadIt(t *testing.T) {
	state := t.TempDir()
	_, ep := startSimnode(t)
	// 60 MB of closed lines, as a long-lived node accumulates, streamed to
	// the file so that this process stays small (a child's peak RSS
	// counts its parent's until exec).
	f, err := os.OpenFile(filepath.Join(state, "journal.jsonl"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range 90_000 {
		for _, op := range []engine.JournalOp{engine.JournalIntent, engine.JournalRemoved} {
			enc.Encode(engine.JournalEntry{Time: time.Now(), Op: op, Pass: engine.JournalPass(fmt.Sprintf("old/%d", i)), PassKind: engine.PassImages,
				Kind: engine.ItemImage, ID: fmt.Sprintf("sha256:%064d", i), RepoTags: []string{"registry.example/app:1"}, SizeBytes: 1 << 20, Reason: "space"})
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	for run := range 2 {
		cmd := exec.Command(binary(t), "gc", "--images", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		// A pass that frees too little exits 1; only the journal matters.
		if err := cmd.Run(); err != nil && (cmd.ProcessState == nil || strings.Contains(stderr.String(), "journal")) {
			t.Fatalf("run %d: %v: %s", run, err, stderr.String())
		}
		if rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss; rss > 150<<10 {
			t.Errorf("run %d: peak RSS %d MiB: a start must not hold the journal's history", run, rss>>10)
		}
	}
	fi, err := os.Stat(filepath.Join(state, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 8<<20 {
		t.Errorf("journal.jsonl is %d MiB after two runs: it is never rotated", fi.Size()>>20)
	}
}

func TestRecordsFromAClockAheadDoNotKeepEveryImageTooYoung(t *testing.T) {
	state := t.TempDir()
	node, ep := startSimnode(t)
	c := dialNode(t, ep)
	imgs, err := c.ListImages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Records written while the clock ran a year ahead; it has since
	// stepped back.
	ahead := time.Now().Add(365 * 24 * time.Hour)
	var recs []engine.ImageRecord
	for _, img := range imgs {
		recs = append(recs, engine.ImageRecord{ID: img.ID, FirstDetected: ahead.Add(-48 * time.Hour), LastUsed: &ahead})
	}
	data, _ := json.Marshal(map[string]any{"apiVersion": engine.APIVersion, "kind": "ImageRecords", "savedAt": ahead, "records": recs})
	if err := os.WriteFile(filepath.Join(state, "image-records.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	// The first pass may find them too young (first detected now); once
	// the minimum age has passed, the node at 95% gets its space back.
	args := []string{"gc", "--images", "--yes", "--minimum-image-ttl-duration", "1s", "--simulated", "--runtime-endpoint", ep, "--state-dir", state}
	nodegc(t, args...)
	time.Sleep(1100 * time.Millisecond)
	r := nodegc(t, args...)
	if n := removeImageCalls(node.MutatingCalls()); n == 0 {
		t.Errorf("no image removed at 95%% usage (exit %d): %s%s", r.code, r.stdout, r.stderr)
	}
}

// slowListing is a runtime whose whole container listing takes 300 ms,
// on which a container is created on want once the first image is
// removed: a created container the whole view, listed earlier, cannot
// show.
type slowListing struct {
	*cri.Client
	want    string
	mu      sync.Mutex
	created bool
}

func (s *slowListing) addCreated(cs []engine.Container) []engine.Container {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.created {
		cs = append(cs, engine.Container{ID: "new", Name: "new", ImageID: s.want, State: engine.ContainerCreated})
	}
	return cs
}

func (s *slowListing) ListContainers(ctx context.Context) ([]engine.Container, error) {
	time.Sleep(300 * time.Millisecond)
	cs, err := s.Client.ListContainers(ctx)
	return s.addCreated(cs), err
}

// ListActiveContainers is the state-filtered listing (engine.ActiveLister):
// quick, and it shows the new container.
func (s *slowListing) ListActiveContainers(ctx context.Context) ([]engine.Container, error) {
	cs, err := s.Client.ListContainers(ctx)
	var active []engine.Container
	for _, c := range cs {
		if c.State == engine.ContainerCreated || c.State == engine.ContainerRunning {
			active = append(active, c)
		}
	}
	return s.addCreated(active), err
}

func (s *slowListing) RemoveImage(ctx context.Context, id string) error {
	err := s.Client.RemoveImage(ctx, id)
	s.mu.Lock()
	s.created = true
	s.mu.Unlock()
	// Past ViewWindow, well inside twice the listing's duration.
	time.Sleep(engine.ViewWindow + 50*time.Millisecond)
	return err
}

func TestImageRecheckWindowDoesNotGrowWithASlowListing(t *testing.T) {
	node, ep := startSimnode(t)
	c := dialNode(t, ep)
	pol := engine.DefaultPolicy()
	pol.Image.MinAge = 0
	pe, err := engine.New(engine.Options{Reader: c.ReadOnly(), Statfs: simfs.Local(node), Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pe.Plan(context.Background(), engine.PassReclaimAll)
	if err != nil || len(p.ImageGC.Remove) < 2 {
		t.Fatalf("plan: %v, %d image removals, want 2", err, len(p.ImageGC.Remove))
	}
	p.ImageGC.Remove = p.ImageGC.Remove[:2]
	p.ContainerGC, p.SandboxGC, p.LogGC = engine.ContainerPlan{}, engine.SandboxPlan{}, engine.LogPlan{}
	rt := &slowListing{Client: c, want: p.ImageGC.Remove[1].ID}
	e, err := engine.New(engine.Options{Reader: rt, Remover: rt, Statfs: simfs.Local(node), Policy: pol, StateDir: t.TempDir(), Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := e.Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range r.Items {
		if it.ID == rt.want && it.Outcome != engine.OutcomeSkipped {
			t.Errorf("image %s, which a container created after the last whole listing uses, is %s; want skipped", it.ID, it.Outcome)
		}
	}
}
