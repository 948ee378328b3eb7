package model

import (
	"encoding/json"
	"fmt"
	"time"
)

// ItemKind is the kind of object a pass acts on.
type ItemKind string

// Item kinds.
const (
	ItemImage     ItemKind = "image"
	ItemContainer ItemKind = "container"
	ItemSandbox   ItemKind = "sandbox"
	ItemLog       ItemKind = "log"
)

// Outcome is what happened to one planned item.
type Outcome string

// Outcomes.
const (
	// OutcomeRemoved: the runtime removed it.
	OutcomeRemoved Outcome = "removed"
	// OutcomeGone: it was already gone (NotFound) when re-checked or removed.
	OutcomeGone Outcome = "already-gone"
	// OutcomeSkipped: the re-check just before deletion found it must stay
	// (now in use, running, pinned or ready); Detail says why.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeFailed: the runtime returned an error; Error has it.
	OutcomeFailed Outcome = "failed"
	// OutcomePlanned: a dry-run; nothing was done.
	OutcomePlanned Outcome = "planned"
	// OutcomeNotRun is an item a stopped pass never started: the operator
	// quit or signalled, or the journal could not be written.
	OutcomeNotRun Outcome = "not-run"
)

// ItemResult is the executor's record of one planned item.
type ItemResult struct {
	Time      time.Time `json:"time"`
	Kind      ItemKind  `json:"kind"`
	ID        string    `json:"id"`
	Outcome   Outcome   `json:"outcome"`
	Reason    string    `json:"reason"`
	Detail    string    `json:"detail,omitempty"`
	SizeBytes int64     `json:"sizeBytes,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// PassReport is the record of one pass, real or dry-run.
type PassReport struct {
	// ID numbers real passes from 1 within one run of the engine; a
	// dry-run's is 0.
	ID int64 `json:"id"`
	// Run names the engine's run (its start time and a random suffix);
	// with ID it makes the pass ID the journal records (PassID). Empty
	// for a dry run.
	Run    string   `json:"run,omitempty"`
	Kind   PassKind `json:"kind"`
	DryRun bool     `json:"dryRun"`
	// Shadow marks a periodic pass of a scheduler in shadow mode: a dry
	// run (DryRun is set, nothing was removed) whose items are what the
	// pass would have removed, compared with what others remove.
	Shadow     bool         `json:"shadow,omitempty"`
	Forced     bool         `json:"forced"`
	StartedAt  time.Time    `json:"startedAt"`
	FinishedAt time.Time    `json:"finishedAt"`
	Plan       Plan         `json:"plan"`
	Items      []ItemResult `json:"items"`
	// EstimatedBytesFreed sums the runtime-reported sizes of the images
	// removed: an estimate, since layers may be shared.
	EstimatedBytesFreed int64 `json:"estimatedBytesFreed"`
	// MeasuredBytesFreed is the image filesystem's available bytes after
	// minus before; nil when it could not be measured.
	MeasuredBytesFreed *int64   `json:"measuredBytesFreed,omitempty"`
	ImageFsBefore      *FsStats `json:"imageFsBefore,omitempty"`
	ImageFsAfter       *FsStats `json:"imageFsAfter,omitempty"`
	Events             []Event  `json:"events"`
	// Error is a pass-level failure (the snapshot could not be taken);
	// per-item failures are in Items.
	Error string `json:"error,omitempty"`
	// Stopped says why the pass stopped before its end (the operator quit
	// or signalled, a journal write failed); the items it never started
	// are OutcomeNotRun, and Undone counts them.
	Stopped string `json:"stopped,omitempty"`
	Undone  int    `json:"undone,omitempty"`
	// Skipped says why a periodic container pass was skipped without
	// listing the node (Engine.RunPeriodic): e.g. "unchanged since pass
	// #12 (no container event, nothing due by the clock); …". Such a pass
	// has no items, its Plan is that earlier pass's, and it wrote nothing.
	Skipped string `json:"skipped,omitempty"`
	// UsageFrom says where ImageFsBefore and ImageFsAfter come from:
	// UsageFromListing (a pass with nothing to remove reads the usage of
	// its own listing once), or "" (measured just before and just after
	// the removals).
	UsageFrom string `json:"usageFrom,omitempty"`
	// Notes are things the pass found and settled on its way (intents an
	// interrupted pass left without outcome, reconciled).
	Notes []string `json:"notes,omitempty"`
}

// UsageFromListing is the PassReport.UsageFrom of a pass with nothing to
// remove: its image filesystem usage is the one read with its listing,
// before and after alike, and MeasuredBytesFreed is not set.
const UsageFromListing = "listing"

// Progress is how far a running pass has come: items and image bytes done
// of those planned. The scheduler publishes it in Notice.Progress, and gc on
// a terminal prints it.
type Progress struct {
	Pass      int64    `json:"pass"`
	Kind      PassKind `json:"kind"`
	ItemsDone int      `json:"itemsDone"`
	Items     int      `json:"items"`
	// BytesDone sums the planned sizes of the images tried so far;
	// Bytes sums those of every image planned.
	BytesDone int64 `json:"bytesDone"`
	Bytes     int64 `json:"bytes"`
}

// Count returns how many items had the outcome.
func (r PassReport) Count(o Outcome) int {
	n := 0
	for _, it := range r.Items {
		if it.Outcome == o {
			n++
		}
	}
	return n
}

// CountKind returns how many items are of the kind, whatever their
// outcome (a dry run's: what it would remove).
func (r PassReport) CountKind(k ItemKind) int {
	n := 0
	for _, it := range r.Items {
		if it.Kind == k {
			n++
		}
	}
	return n
}

// PassID is the pass's ID, unique across runs: "<run>/<n>", the pass
// field of its journal lines. A dry run has none ("").
func (r PassReport) PassID() string {
	if r.Run == "" || r.ID == 0 {
		return ""
	}
	return fmt.Sprintf("%s/%d", r.Run, r.ID)
}

// ImageGCError returns the event with which the pass's image GC failed
// as the kubelet's image GarbageCollect returns an error
// (image_gc_manager.go v1.36): FreeDiskSpaceFailed (not enough could be
// freed) or InvalidDiskCapacity. The pass's items may all have succeeded.
func (r PassReport) ImageGCError() (Event, bool) {
	for _, ev := range r.Events {
		if ev.Reason == EventFreeDiskSpaceFailed || ev.Reason == EventInvalidDiskCapacity {
			return ev, true
		}
	}
	return Event{}, false
}

// OK reports whether the pass ran and no item failed.
func (r PassReport) OK() bool {
	return r.Error == "" && r.Stopped == "" && r.Count(OutcomeFailed) == 0
}

// JournalEntry is one line of the append-only, write-ahead deletion
// journal: an intent before an item goes to the runtime, its outcome after.
type JournalEntry struct {
	Time time.Time `json:"time"`
	// Op is what the line records; "" in journals written before intents.
	Op JournalOp `json:"op,omitempty"`
	// Pass is the PassID of the pass that removed it: unique across
	// runs, so lines of different runs never share one.
	Pass        JournalPass `json:"pass"`
	PassKind    PassKind    `json:"passKind"`
	Kind        ItemKind    `json:"kind"`
	ID          string      `json:"id"`
	RepoTags    []string    `json:"repoTags,omitempty"`
	RepoDigests []string    `json:"repoDigests,omitempty"`
	SizeBytes   int64       `json:"sizeBytes,omitempty"`
	Reason      string      `json:"reason"`
	PodUID      string      `json:"podUID,omitempty"`
	Name        string      `json:"name,omitempty"`
	// Error is the runtime's refusal (JournalFailed).
	Error string `json:"error,omitempty"`
	// Reconciled marks an outcome written at a later start for an intent
	// whose outcome a crash lost.
	Reconciled bool `json:"reconciled,omitempty"`
	// Boot is the machine's boot ID on an intent line: reconciliation
	// trusts the absence of a started line only within the same boot.
	Boot string `json:"boot,omitempty"`
}

// JournalPass is a journal line's pass ID (PassReport.PassID). Journals
// written before pass IDs were unique across runs hold a bare number; it
// reads as its decimal string, so an old journal still reads.
type JournalPass string

// UnmarshalJSON accepts a string or, from an old journal, a number.
func (p *JournalPass) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*p = JournalPass(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("pass: want a string or a number, got %s", b)
	}
	*p = JournalPass(n.String())
	return nil
}

// JournalOp says what a journal line records.
type JournalOp string

// Journal operations. Every item the executor sends to the runtime has an
// intent line on disk before the call and exactly one outcome line after
// it (or, after a crash, from the next start's reconciliation). Between
// them, a started line is written (not synced) just before the removal
// call is sent; the engine's reconciliation reads what its presence or absence proves.
const (
	// JournalIntent: the item is about to go to the runtime.
	JournalIntent JournalOp = "intent"
	// JournalStarted: the item's removal call is being sent. Only
	// reconciliation reads it; ReadJournalLines leaves it out.
	JournalStarted JournalOp = "started"
	// JournalRemoved: the runtime removed it (or, Reconciled, an intent
	// whose outcome was lost, whose removal call was sent, and whose item
	// the runtime no longer has).
	JournalRemoved JournalOp = "removed"
	// JournalUnknown: reconciliation cannot tell whether nodegc removed
	// the item; Error says why (the call was sent and the item exists
	// again, or a reboot may have lost the started line).
	JournalUnknown JournalOp = "unknown"
	// JournalGone: the runtime said it was already gone.
	JournalGone JournalOp = "already-gone"
	// JournalFailed: the runtime refused; Error says why.
	JournalFailed JournalOp = "failed"
	// JournalNotRemoved: reconciliation found the item of an intent still
	// there, and it cannot have been removed and created again (container
	// and sandbox IDs are never reused).
	JournalNotRemoved JournalOp = "not-removed"
	// JournalSkipped: the re-check just before the call kept the item.
	JournalSkipped JournalOp = "skipped"
	// JournalNotRun: the pass stopped (or reached its target) before the
	// item's turn; or, Reconciled, its removal call was never sent.
	JournalNotRun JournalOp = "not-run"
	// JournalCheckpoint: no intent before it is open, so reconciliation
	// reads only the lines after the last one. ReadJournalLines leaves it
	// out.
	JournalCheckpoint JournalOp = "checkpoint"
)
