package executor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nodegc/nodegc/engine/model"
	"github.com/nodegc/nodegc/engine/rules"
)

// StopTimeout is how long an UNKNOWN container is given to stop before it is
// removed.
const StopTimeout = 10 * time.Second

// DefaultParallel is the pool of a pass that names none: 8 removals in
// flight. Measured on a quiet machine against 8 raw RemoveImage calls in
// flight (issue 42; docs/performance.md, "The default pool's width"), 8
// keeps their speed (0.97x on containerd 1.6, 1.01x on 2.2) while the
// probe of the kubelet PLEG's calls keeps a p99 of 1.17x and 1.26x the
// serial pass's; 16 was 1.5x as fast, with a p99 of 1.5-1.7x. 1 is the
// kubelet's strict one at a time.
const DefaultParallel = 8

// AutoParallel is the Options.Parallel of the adaptive pool (`--parallel
// auto`), which finds how many removals to keep in flight from the
// runtime (see knee). It is opt-in: measured beside the pinned pool on a
// loaded machine it neither reached the best raw speed nor kept the
// kubelet's listings as fast as a serial pass, and its probes list the
// node during the pass, which a node in trouble pays for.
const AutoParallel = -1

// CallTimeout bounds each runtime call of a pass. The calls do not inherit
// the pass's cancellation (a stop lets the items in flight finish), so this
// is what bounds a stop's wait on a runtime that hangs.
const CallTimeout = 2 * time.Minute

// executor applies one plan. It re-checks every item against the runtime
// just before it removes it, so a plan that went stale between planning
// and applying can only remove less, never more. A pass is a chain of
// steps: the pass's set-up (newExecutor: its tasks from tasks.go, its
// journal readied by the Host, its views from view.go), the pool
// (pool.go) running each task's re-check and removal (image.go,
// container.go, sandbox.go, log.go) with its journal lines (journal.go),
// and the pass journal's end.
type executor struct {
	d Deps
	// stop is the pass's context: once done, no new item starts.
	stop context.Context
	// calls is stop without its cancellation, for the runtime calls of
	// the items in flight.
	calls context.Context
	r     *model.PassReport
	// passID is the report's, copied once: the workers read it while
	// the report's other fields change under mu.
	passID  string
	journal *passJournal
	// views are the node's containers (and images) the re-checks read.
	views passViews
	// sandboxRefs are the runtime's sandbox image references, read once
	// per pass; infoErr is set when they could not be read, and then no
	// image is removed (the sandbox-image guard must not fail open).
	sandboxRefs []string
	infoErr     error
	parallel    int   // the pinned pool's width; 0: adaptive
	knee        *Knee // the adaptive pool's controller for this phase
	// target is the space pass's bytesToFree when the plan's space pass
	// runs (targeted): no space removal starts once the bytes removed
	// plus the bytes in flight reach it.
	target int64

	mu         sync.Mutex
	cond       *sync.Cond
	inflight   int
	spaceN     int   // space removals in flight
	spaceBytes int64 // their planned bytes
	spaceOK    int   // space removals done
	freed      int64 // planned bytes of the images removed so far
	results    [][]model.ItemResult
	prog       model.Progress
	// plan is the plan's items in execution order, indexed as the tasks.
	plan []model.ItemResult
	// written marks the tasks whose intent is on disk, closed those whose
	// outcome line is written too; writingAhead is set while the next
	// group's intents are written in the background.
	written, closed []bool
	writingAhead    bool
	ahead           sync.WaitGroup // the write-ahead goroutine
	// work sends the feeder's tasks to the pool's workers.
	work chan task
	// links is the pass's handle on the container log links directory
	// (linksDir), under linksMu.
	linksMu sync.Mutex
	links   *logDir
}

// Deps is what a pass reads of its engine, copied once at its set-up,
// so that the executor depends on these and not on the Engine.
type Deps struct {
	Reader  model.Reader
	Remover model.Remover
	// Journal is the deletion journal the pass writes its lines to,
	// readied by Host.ReadyJournal; Boot is the machine's boot ID,
	// written on intent lines.
	Journal Journal
	Boot    string
	// PodLogsDir and LinksDir are the pod log directories and the
	// container log links' directory.
	PodLogsDir, LinksDir string
	// Parallel is Options.Parallel: removals in flight (0:
	// DefaultParallel, AutoParallel: the adaptive pool).
	Parallel int
	Now      func() time.Time
	Log      *slog.Logger
	// KneeFor makes the adaptive pool's controller of a phase.
	KneeFor func(widest int) *Knee
	// ContainerGen counts the runtime's container events: a view is
	// listed again when it moves. Following reports whether the engine
	// follows that stream (Engine.Following).
	ContainerGen *atomic.Uint64
	Following    func() bool
	// Publish hands the pass's progress to its listeners.
	Publish func(model.Progress)
}

// Host is the engine's side of a pass's set-up: readying the journal
// for the pass's items (settling what an earlier pass left open) and
// measuring the image filesystem, before the pass and after it.
type Host interface {
	// ReadyJournal readies the journal for items planned removals
	// (containers of them); it returns the report's notes and clean:
	// no intent of an earlier pass is open.
	ReadyJournal(ctx context.Context, items, containers int) (notes []string, clean bool, err error)
	ImageFs(ctx context.Context) (model.FsStats, error)
}

// Run performs the plan p on the node for the pass whose report r holds
// its number and plan: set up (newExecutor), run in the pool
// (runPhases), its views closed and its journal made durable. It fills
// in r's items in plan order, the bytes its image removals were planned
// to free, the image filesystem before it, its notes and why it
// stopped, and returns whether a journal write failed (the pass's open
// intents are then the next pass's to settle).
func Run(ctx context.Context, d Deps, h Host, r *model.PassReport, p model.Plan) (journalFailed bool) {
	x, phases := newExecutor(ctx, d, h, r, p)
	stopWake := context.AfterFunc(ctx, x.wake)
	x.runPhases(phases)
	x.closeLinksDir()
	stopWake()
	x.views.close() // a background listing does not outlive the pass
	x.endJournal()
	for _, its := range x.results {
		for _, it := range its {
			r.Items = append(r.Items, it)
			if it.Kind == model.ItemImage && it.Outcome == model.OutcomeRemoved {
				r.EstimatedBytesFreed = rules.AddBytes(r.EstimatedBytesFreed, it.SizeBytes)
			}
		}
	}
	return x.journal.failed() != nil
}

// newExecutor sets up the pass of p: its tasks, its journal readied (a
// journal that cannot be readied halts the pass) and the intents an
// earlier pass left settled, its views (the first phase's listed
// meanwhile), the image filesystem measured and, for a pass that
// removes images, the sandbox images read.
func newExecutor(ctx context.Context, d Deps, h Host, r *model.PassReport, p model.Plan) (*executor, [][]task) {
	parallel := d.Parallel
	if parallel == 0 {
		parallel = DefaultParallel
	}
	x := &executor{d: d, stop: ctx, calls: context.WithoutCancel(ctx), r: r, passID: r.PassID(), parallel: parallel, target: p.ImageGC.BytesToFree}
	x.cond = sync.NewCond(&x.mu)
	phases, planned := passTasks(p, p.ImageGC.Triggered && rules.SpacePassPlanned(p.ImageGC))
	x.plan, x.results = planned, make([][]model.ItemResult, len(planned))
	x.written, x.closed = make([]bool, len(planned)), make([]bool, len(planned))
	x.prog = model.Progress{Pass: r.ID, Kind: p.Pass, Items: len(planned)}
	for _, it := range planned {
		x.prog.Bytes += max(it.SizeBytes, 0)
	}
	notes, clean, err := h.ReadyJournal(ctx, len(planned), len(p.ContainerGC.Remove))
	r.Notes = append(r.Notes, notes...)
	if err != nil {
		x.halt(err.Error(), true)
	}
	var first model.ItemKind
	if len(phases) > 0 && err == nil && ctx.Err() == nil {
		first = phases[0][0].item.Kind
	}
	x.views = newPassViews(x.calls, d.Reader, d.ContainerGen, first, d.Following())
	x.journal = newPassJournal(d.Journal, d, d.Boot, x.passID, p.Pass, clean)
	// The sandbox images are read only for a pass that removes images
	// (no other re-check reads them), beside the image filesystem.
	var reading sync.WaitGroup
	if len(p.ImageGC.Remove) > 0 {
		reading.Go(func() {
			if info, err := d.Reader.Info(x.calls); err == nil {
				x.sandboxRefs = info.SandboxImages
			} else {
				x.infoErr = fmt.Errorf("runtime info (for the sandbox images): %w", err)
			}
		})
	}
	if before, err := h.ImageFs(x.calls); err == nil {
		r.ImageFsBefore = &before
	}
	reading.Wait()
	d.Publish(x.prog)
	return x, phases
}

// wake wakes the feeder (the pass was stopped).
func (x *executor) wake() {
	x.mu.Lock()
	x.cond.Broadcast()
	x.mu.Unlock()
}

// endJournal makes the pass's lines durable (passJournal.end); a failed
// sync fails the pass.
func (x *executor) endJournal() {
	notes, err := x.journal.end()
	if err != nil {
		x.halt(fmt.Sprintf("journal write failed (%v)", err), true)
	}
	x.r.Notes = append(x.r.Notes, notes...)
}
