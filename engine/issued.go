package engine

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrUnknownPlan is returned by ApplyIssued for a plan this engine did
// not issue: an item it would not remove, or a target or trigger that is
// not the plan's. A client applies what it previewed, or a part of it,
// never a plan of its own making.
var ErrUnknownPlan = errors.New("not a plan this engine issued")

// maxIssued is how many issued plans the engine remembers at once; an
// older one must be previewed again. A dashboard holds one preview open
// at a time; gc and plan, one each.
const maxIssued = 16

// applyBytesPerObject and applyBytesBase bound the body of a request to
// apply a plan: a plan's JSON holds at most a few hundred bytes for each
// image, container, sandbox and log file of the node it was made for
// (its removals, its kept images with their reasons), so no issued plan
// comes near this bound, and a body larger than it is refused before it
// is read whole.
const (
	applyBytesPerObject = 4 << 10
	applyBytesBase      = 1 << 20
	// applyBytesNone bounds the body while no plan is issued: a plan's
	// fixed fields (policy, disk reserve) with nothing to remove.
	applyBytesNone = 64 << 10
)

// issuedPlan is what the engine remembers of a plan it issued: each
// removal, by its kind and ID, as the digest of its JSON (so a plan that
// travelled through a client compares equal), and the fields that steer
// the executor.
type issuedPlan struct {
	pass        PassKind
	evaluatedAt time.Time
	triggered   bool
	bytesToFree int64
	items       map[string][sha256.Size]byte
	// objects is how many objects the node had when the plan was made.
	objects int
}

// issuedPlans remembers the plans an engine issued (Plan, PlanAt,
// DryRun) for MaxPlanAge, so that ApplyIssued can refuse any other.
type issuedPlans struct {
	mu    sync.Mutex
	plans []issuedPlan // oldest first
}

// itemKey names a removal in a plan: its kind and ID (a log's path).
func itemKey(kind ItemKind, id string) string { return string(kind) + "\x00" + id }

// digest is the SHA-256 of v's JSON.
func digest(v any) [sha256.Size]byte {
	b, err := json.Marshal(v)
	if err != nil {
		// The plan types marshal without error; a failure makes the item
		// match nothing.
		return [sha256.Size]byte{}
	}
	return sha256.Sum256(b)
}

// add remembers p, made from a snapshot of objects objects, and forgets
// the plans older than MaxPlanAge at now and those past maxIssued.
func (ip *issuedPlans) add(p Plan, objects int, now time.Time) {
	rec := issuedPlan{pass: p.Pass, evaluatedAt: p.EvaluatedAt, triggered: p.ImageGC.Triggered,
		bytesToFree: p.ImageGC.BytesToFree, items: map[string][sha256.Size]byte{}, objects: objects}
	removals(p, func(kind ItemKind, id string, item any) { rec.items[itemKey(kind, id)] = digest(item) })
	ip.mu.Lock()
	defer ip.mu.Unlock()
	ip.expireLocked(now)
	if len(ip.plans) >= maxIssued {
		ip.plans = ip.plans[1:]
	}
	ip.plans = append(ip.plans, rec)
}

// expireLocked forgets the plans a client may no longer apply.
func (ip *issuedPlans) expireLocked(now time.Time) {
	i := 0
	for i < len(ip.plans) && now.Sub(ip.plans[i].evaluatedAt) > MaxPlanAge {
		i++
	}
	ip.plans = ip.plans[i:]
}

// check returns nil when p is a plan issued for its pass kind and
// evaluation time, or a part of one: each removal as issued, the same
// trigger and target. Otherwise it names the first difference.
func (ip *issuedPlans) check(p Plan, now time.Time) error {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	ip.expireLocked(now)
	var rec *issuedPlan
	for i := len(ip.plans) - 1; i >= 0; i-- {
		if q := &ip.plans[i]; q.pass == p.Pass && q.evaluatedAt.Equal(p.EvaluatedAt) {
			rec = q
			break
		}
	}
	switch {
	case rec == nil:
		return fmt.Errorf("%w: no %s plan evaluated at %s was previewed here (preview it again)", ErrUnknownPlan, p.Pass, p.EvaluatedAt.Format(time.RFC3339Nano))
	case p.ImageGC.Triggered != rec.triggered || p.ImageGC.BytesToFree != rec.bytesToFree:
		return fmt.Errorf("%w: imageGC.triggered or imageGC.bytesToFree differs from the plan issued", ErrUnknownPlan)
	}
	var bad error
	removals(p, func(kind ItemKind, id string, item any) {
		if bad == nil && rec.items[itemKey(kind, id)] != digest(item) {
			bad = fmt.Errorf("%w: %s %q is not a removal of the plan issued, as issued", ErrUnknownPlan, kind, id)
		}
	})
	return bad
}

// maxApplyBytes bounds the body of a request to apply a plan: in
// proportion to the largest node a live issued plan was made for.
func (ip *issuedPlans) maxApplyBytes(now time.Time) int64 {
	ip.mu.Lock()
	defer ip.mu.Unlock()
	ip.expireLocked(now)
	if len(ip.plans) == 0 {
		return applyBytesNone
	}
	most := 0
	for _, q := range ip.plans {
		most = max(most, q.objects)
	}
	return applyBytesBase + int64(most)*applyBytesPerObject
}

// MaxApplyBytes is the largest request body that can hold a plan this
// engine issued and still remembers: a server refuses a larger one before
// reading it.
func (e *Engine) MaxApplyBytes() int64 { return e.issued.maxApplyBytes(e.now()) }

// snapshotObjects counts what a plan of s can name: its images,
// containers, sandboxes and log files.
func snapshotObjects(s Snapshot) int {
	n := len(s.Images) + len(s.Containers) + len(s.Sandboxes)
	if s.Logs != nil {
		n += len(s.Logs.PodDirs) + len(s.Logs.ContainerLinks)
	}
	return n
}
