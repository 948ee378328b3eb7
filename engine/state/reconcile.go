package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// ReconcileOptions are what a Reconciler reads.
type ReconcileOptions struct {
	// Journal is the journal to settle, in Dir.
	Journal *Journal
	Dir     string
	// Reader asks the runtime whether an item still exists.
	Reader model.Reader
	Now    func() time.Time
	Log    *slog.Logger
	// Run names this run: its own passes waited for their calls, so
	// their intents are not waited for (settle).
	Run string
	// Boot is the machine's boot ID (BootID).
	Boot string
	// InFlight is how long an earlier run's removal call may have been
	// in flight (the executor's call timeout).
	InFlight time.Duration
}

// Reconciler settles the intents an earlier, interrupted pass left in
// the journal without an outcome. It is not safe for concurrent use: the
// engine calls it under its lock.
type Reconciler struct {
	o ReconcileOptions
	// Settle and Poll bound settle: how long, and how often,
	// reconciliation asks again about an item whose removal call an
	// earlier run may have had in flight before it journals it. A killed
	// nodegc's RemoveImage has been seen to delete the image in
	// containerd after the CRI cache, which ImageStatus reads, was asked.
	Settle, Poll time.Duration
	// Budget bounds one reconciliation, its settling included: a runtime
	// that hangs must not hold back the first snapshot (the dashboard
	// shows nothing until it has one) or a quit. What it could not ask
	// about stays open, and is tried again after Retry, or at once after
	// a pass whose journal write failed (Invalidate).
	Budget, Retry time.Duration

	done  bool      // the journal's open intents were settled
	after time.Time // when a round that left intents open may be tried again
}

// NewReconciler returns the reconciler of o.Journal.
func NewReconciler(o ReconcileOptions) *Reconciler {
	return &Reconciler{o: o, Settle: 2 * time.Second, Poll: 50 * time.Millisecond, Budget: 5 * time.Second, Retry: time.Minute}
}

// Done reports whether no intent of an earlier pass is left open; false
// for a nil Reconciler (no journal, so nothing proves it).
func (r *Reconciler) Done() bool { return r != nil && r.done }

// Invalidate makes the next call of Reconcile run at once: a pass's
// journal write failed, so its own intents are open.
func (r *Reconciler) Invalidate() {
	if r != nil {
		r.done, r.after = false, time.Time{}
	}
}

// BootID is the machine's boot ID, or "" where it cannot be read (then no
// started line's absence is trusted).
var BootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// openIntent is an intent without an outcome, and whether its started
// line was found.
type openIntent struct {
	model.JournalEntry
	started bool
}

// callNeverSent reports whether the journal proves that the intent's
// removal call was never sent: the started line is written (handed to the
// kernel) before the call, so its absence is proof for a process that was
// killed, since the kernel keeps what it was handed; a crash of the
// machine can lose it, so only within the boot that wrote the intent.
func callNeverSent(in openIntent, boot string) bool {
	return !in.started && in.Boot != "" && in.Boot == boot
}

// reusable reports whether an item of the kind can exist again after its
// removal: an image (pulled again, under the same ID) or a log path. A
// container or sandbox ID is never reused.
func reusable(k model.ItemKind) bool { return k == model.ItemImage || k == model.ItemLog }

// reconcileOp is the outcome reconciliation journals for an open intent
// whose item exists or not (when the call may have been sent), with the
// reason in words: never removed for an item whose call may not have been
// sent, never not-removed for one the call may have removed.
func reconcileOp(in openIntent, neverSent, exists bool) (model.JournalOp, string) {
	switch {
	case neverSent:
		return model.JournalNotRun, "its removal call was never sent"
	case in.started && !exists:
		return model.JournalRemoved, ""
	case !exists:
		return model.JournalUnknown, "gone, but the machine restarted since its intent, which may have lost the line saying whether its removal call was sent"
	case !reusable(in.Kind):
		return model.JournalNotRemoved, ""
	case in.started:
		return model.JournalUnknown, "still there, but its removal call was sent: it may have removed the item, which was then created again"
	default:
		return model.JournalUnknown, "still there, but the machine restarted since its intent: its removal call may have been sent, and the item created again"
	}
}

// Reconcile settles the intents of an earlier, interrupted pass that
// have no outcome: an intent whose removal call was never sent is closed
// not-run; for the others it asks the runtime (or the filesystem, for
// logs) whether the item still exists and journals what that proves (see
// reconcileOp). An item it cannot ask about stays open for the next try.
// A deleting engine runs it before its first snapshot, and again after a
// pass whose journal write failed. It ends with ctx (a signal) and after
// Budget, and a round that left intents open is not tried again before
// Retry. It returns notes for the next report.
func (r *Reconciler) Reconcile(ctx context.Context) []string {
	if r.done || time.Now().Before(r.after) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.Budget)
	defer cancel()
	notes := r.round(ctx)
	if !r.done {
		r.after = time.Now().Add(r.Retry)
	}
	return notes
}

// round is one round of Reconcile, bounded by ctx.
func (r *Reconciler) round(ctx context.Context) []string {
	open, tail, err := readOpenIntents(r.o.Dir)
	if err != nil {
		return []string{fmt.Sprintf("journal not reconciled: %v", err)}
	}
	if len(open) == 0 {
		// A tail of closed lines (a journal an older nodegc wrote, or a
		// pass that ended without its checkpoint) gets one, so the next
		// start need not read it.
		if tail > 0 || r.o.Journal.NeedsCheckpoint() {
			if err := r.o.Journal.Write(CheckpointLine(r.o.Now())); err != nil {
				return []string{fmt.Sprintf("journal not reconciled: %v", err)}
			}
		}
		r.done = true
		return r.o.Journal.RotateNoted(r.o.Log)
	}
	counts := map[model.JournalOp]int{}
	unchecked := 0
	var outs []model.JournalEntry
	neverSent := make([]bool, len(open))
	exists := make([]bool, len(open))
	errs := make([]error, len(open))
	for i, in := range open {
		switch neverSent[i] = callNeverSent(in, r.o.Boot); {
		case neverSent[i]:
		case ctx.Err() != nil:
			// Out of time (or stopped): the rest waits for the next round.
			errs[i] = ctx.Err()
		default:
			exists[i], errs[i] = r.exists(ctx, in.JournalEntry)
		}
	}
	r.settle(ctx, open, exists, errs)
	for i, in := range open {
		if errs[i] != nil {
			if unchecked++; unchecked <= 3 {
				r.o.Log.Warn("reconcile journal intent", "kind", in.Kind, "id", in.ID, "err", errs[i])
			}
			continue
		}
		out := in.JournalEntry
		out.Boot = ""
		out.Time, out.Reconciled = r.o.Now(), true
		out.Op, out.Error = reconcileOp(in, neverSent[i], exists[i])
		counts[out.Op]++
		outs = append(outs, out)
	}
	r.done = unchecked == 0
	if r.done {
		outs = append(outs, CheckpointLine(r.o.Now()))
	}
	// One group, one fsync.
	if err := r.o.Journal.Write(outs...); err != nil {
		r.done = false
		return []string{fmt.Sprintf("journal not reconciled: %v", err)}
	}
	note := fmt.Sprintf("journal: reconciled %d intents an interrupted pass left without outcome: %d removed, %d still there, %d never sent, %d unknown",
		len(open)-unchecked, counts[model.JournalRemoved], counts[model.JournalNotRemoved], counts[model.JournalNotRun], counts[model.JournalUnknown])
	if unchecked > 0 {
		note += fmt.Sprintf(", %d could not be checked (left for the next try)", unchecked)
	}
	r.o.Log.Warn(note)
	return append([]string{note}, r.o.Journal.RotateNoted(r.o.Log)...)
}

// settle asks again, in rounds every Poll for up to
// Settle, about the items the runtime still shows whose removal
// call may have been sent by an earlier run of nodegc in the last
// InFlight: a removal that run had in flight when it died can still
// complete in the runtime. (This run's passes waited for their calls.) It
// updates exists and errs in place, and returns early when ctx ends or
// nothing is left to ask about.
func (r *Reconciler) settle(ctx context.Context, open []openIntent, exists []bool, errs []error) {
	var pending []int
	for i, in := range open {
		if exists[i] && errs[i] == nil && r.o.Now().Sub(in.Time) < r.o.InFlight && !strings.HasPrefix(string(in.Pass), r.o.Run+"/") {
			pending = append(pending, i)
		}
	}
	t := time.NewTicker(r.Poll)
	defer t.Stop()
	for deadline := time.Now().Add(r.Settle); len(pending) > 0 && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pending = slices.DeleteFunc(pending, func(i int) bool {
			exists[i], errs[i] = r.exists(ctx, open[i].JournalEntry)
			return !exists[i] || errs[i] != nil
		})
	}
}

// exists asks whether the item of a journal intent still exists, within
// ctx.
func (r *Reconciler) exists(ctx context.Context, in model.JournalEntry) (bool, error) {
	var err error
	switch in.Kind {
	case model.ItemImage:
		_, err = r.o.Reader.ImageStatus(ctx, in.ID)
	case model.ItemContainer:
		_, err = r.o.Reader.ContainerStatus(ctx, in.ID)
	case model.ItemSandbox:
		_, err = r.o.Reader.SandboxStatus(ctx, in.ID)
	case model.ItemLog:
		_, err = os.Lstat(in.ID)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
	default:
		return false, fmt.Errorf("unknown kind %q", in.Kind)
	}
	if errors.Is(err, model.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
