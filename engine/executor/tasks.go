package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nodegc/nodegc/engine/model"
)

// task is one planned item of a pass: its place in the report, its
// journal line and its re-check. A task's check returns a checked; the
// helpers below make its verdicts.
type task struct {
	idx   int // in plan order: the report's index
	item  model.ItemResult
	size  int64
	space bool // subject to the space pass's target
	// check is the planned removal, which re-checks the item and, when it
	// is still to go, says how to remove it (image.go,
	// container.go, sandbox.go, log.go).
	check rechecker
	// intent is its journal line: written as the intent (in a group with
	// the next tasks' intents) before the task starts, from the plan; the
	// re-check fills in what the runtime reports for the outcome.
	intent *model.JournalEntry
}

// rechecker is a planned removal of one kind: recheck re-checks its item
// against the runtime just before its removal, fills in what the runtime
// reports in its journal line en, and returns the verdict.
type rechecker interface {
	recheck(x *executor, en *model.JournalEntry) checked
}

// The planned removals of each kind, as the executor re-checks them.
type (
	containerCheck model.ContainerRemoval
	sandboxCheck   model.SandboxRemoval
	logCheck       model.LogRemoval
	imageCheck     model.ImageRemoval
)

// checked is the re-check's verdict on one item: remove is set when it
// is still to go, otherwise it holds its outcome.
type checked struct {
	it     model.ItemResult
	remove *removal
}

// removal is how a re-checked item is removed: the runtime call, what
// its error says it failed to do, and what the engine logs once it is
// removed.
type removal struct {
	what string
	// stop, when set, is sent first, within a CallTimeout of its own; if
	// it fails (but for NotFound) nothing more is done.
	stop func(ctx context.Context) error
	// first, when set, removes what must go before the item (a
	// container's log file and link, each journalled on its own) after
	// the stop; if one of them fails, the call is not sent.
	first func() []model.ItemResult
	call  func(ctx context.Context) error
	log   []any // the Info line's attributes; none: not logged
}

// rt runs one runtime read of a re-check with the per-call timeout.
func rt[T any](x *executor, call func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(x.calls, CallTimeout)
	defer cancel()
	return call(ctx)
}

// recheckFailed records an item whose re-check could not be made: NotFound
// is already gone; anything else fails the item without removing it.
func recheckFailed(it model.ItemResult, err error) model.ItemResult {
	if errors.Is(err, model.ErrNotFound) {
		it.Outcome = model.OutcomeGone
		return it
	}
	it.Outcome, it.Error = model.OutcomeFailed, fmt.Sprintf("re-check: %v", err)
	return it
}

// viewFailed records an item whose view of the node could not be listed:
// it fails without removal, whatever the listing's error wraps (a
// NotFound from a listing says nothing of the item).
func viewFailed(it model.ItemResult, err error) model.ItemResult {
	it.Outcome, it.Error = model.OutcomeFailed, fmt.Sprintf("re-check: %v", err)
	return it
}

// skipped records an item the re-check kept.
func skipped(it model.ItemResult, why string) model.ItemResult {
	it.Outcome, it.Detail = model.OutcomeSkipped, why
	return it
}

// PlannedItems are the plan's items in the order a pass runs them, as
// passTasks numbers them (the dry-run report lists them so).
func PlannedItems(p model.Plan) []model.ItemResult {
	_, items := passTasks(p, false)
	return items
}

// passTasks turns a plan into the pass's tasks, the one source of their
// order and indexes. It returns the phases the pool runs one after
// another (containers, sandboxes, logs, the log links into the pod log
// directories just removed, the images removed for age or reclaim, then
// the images removed for space; within a phase in plan order) and the
// planned items in execution order, indexed as the tasks: containers,
// sandboxes, logs, then images (the kubelet removes containers before
// the sandboxes they held, and image GC runs on its own). targeted makes
// the space tasks subject to the space pass's target.
func passTasks(p model.Plan, targeted bool) (phases [][]task, items []model.ItemResult) {
	var cs, ss, ls, ll, ia, is []task
	add := func(to *[]task, t task) {
		t.idx = len(items)
		items = append(items, t.item)
		*to = append(*to, t)
	}
	for _, c := range p.ContainerGC.Remove {
		add(&cs, task{item: model.ItemResult{Kind: model.ItemContainer, ID: c.ID, Reason: string(c.Reason), Detail: c.Detail},
			intent: &model.JournalEntry{Kind: model.ItemContainer, ID: c.ID, Reason: string(c.Reason), PodUID: c.PodUID, Name: c.Name},
			check:  containerCheck(c)})
	}
	for _, s := range p.SandboxGC.Remove {
		add(&ss, task{item: model.ItemResult{Kind: model.ItemSandbox, ID: s.ID, Reason: s.Reason},
			intent: &model.JournalEntry{Kind: model.ItemSandbox, ID: s.ID, Reason: s.Reason, PodUID: s.PodUID},
			check:  sandboxCheck(s)})
	}
	for _, l := range logsInOrder(p.LogGC) {
		to := &ls
		if l.Reason == model.LogPodDirRemoved {
			to = &ll // re-checked once the pod directories are gone
		}
		add(to, task{item: model.ItemResult{Kind: model.ItemLog, ID: l.Path, Reason: l.Reason},
			intent: &model.JournalEntry{Kind: model.ItemLog, ID: l.Path, Reason: l.Reason},
			check:  logCheck(l)})
	}
	for _, i := range p.ImageGC.Remove {
		to, space := &ia, false
		if i.Reason == model.RemoveForSpace {
			to, space = &is, targeted
		}
		add(to, task{item: model.ItemResult{Kind: model.ItemImage, ID: i.ID, Reason: string(i.Reason), Detail: i.Detail, SizeBytes: i.SizeBytes},
			size: max(i.SizeBytes, 0), space: space,
			intent: &model.JournalEntry{Kind: model.ItemImage, ID: i.ID, RepoTags: i.RepoTags, RepoDigests: i.RepoDigests, SizeBytes: i.SizeBytes, Reason: string(i.Reason)},
			check:  imageCheck(i)})
	}
	for _, ph := range [][]task{cs, ss, ls, ll, ia, is} {
		if len(ph) > 0 {
			phases = append(phases, ph)
		}
	}
	return phases, items
}

// logsInOrder is the log plan in execution order: the links into the pod
// log directories the pass removes go last, after those directories (the
// planner lists them so; a plan from elsewhere may not).
func logsInOrder(p model.LogPlan) []model.LogRemoval {
	out := slices.Clone(p.Remove)
	slices.SortStableFunc(out, func(a, b model.LogRemoval) int {
		return cmp.Compare(b2i(a.Reason == model.LogPodDirRemoved), b2i(b.Reason == model.LogPodDirRemoved))
	})
	return out
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
