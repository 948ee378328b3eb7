package fleet

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodegc/nodegc/api/v1alpha1"
)

// State is what the fleet view knows of a node's agent.
type State string

// States, from worst to best for the default order.
const (
	// Failed: the node's object cannot be read as its agent should have
	// written it (a field of the wrong type, no heartbeat, a band upside
	// down). Err says what; the other rows are not affected.
	Failed State = "error"
	// Stale: the object's heartbeat is older than StaleAfter: the agent
	// is down, or cannot write.
	Stale State = "stale"
	// NoAgent: the node has no NodeGC object.
	NoAgent State = "no agent"
	// OK: the object is fresh.
	OK State = "ok"
)

// HeartbeatPeriod is how often an agent writes its object when nothing
// changed (the kubelet's NodeStatus period, KEP-589).
const HeartbeatPeriod = 5 * time.Minute

// StaleAfter is the age past which an object's heartbeat is stale:
// three missed periods.
const StaleAfter = 3 * HeartbeatPeriod

// Node is one row of the fleet view: a Node and its NodeGC object.
type Node struct {
	// Name is the Node's name (and its object's).
	Name string `json:"name"`
	// Ready is the Node's Ready condition as kubectl shows it: Ready,
	// NotReady or Unknown, with ",SchedulingDisabled" when cordoned.
	Ready string `json:"ready,omitempty"`
	State State  `json:"state"`
	// Err says why State is not OK.
	Err string `json:"error,omitempty"`
	// Status is the object's status as its agent wrote it; nil without an
	// object, or when it could not be read.
	Status *v1alpha1.NodeGCStatus `json:"status,omitempty"`
	// bad is why the object could not be read ("" when it could).
	bad string
}

// NotReady reports whether the Node's Ready condition is not True
// (NotReady, or Unknown when its kubelet stopped reporting).
func (n Node) NotReady() bool { return notReady(n.Ready) }

// Heartbeat is when the agent last wrote its object; zero when unknown.
func (n Node) Heartbeat() time.Time {
	if n.Status == nil || n.Status.HeartbeatTime == nil {
		return time.Time{}
	}
	return n.Status.HeartbeatTime.Time
}

// object is what the informer keeps of a NodeGC: its name and version,
// and its row, decoded once when it arrives rather than at every frame.
type object struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	row Node
}

// DeepCopyObject returns a copy (runtime.Object): the row is never
// changed once made, so the copy shares it.
func (o *object) DeepCopyObject() runtime.Object {
	c := *o
	c.ObjectMeta = *o.ObjectMeta.DeepCopy()
	return &c
}

// GetObjectKind returns the object's kind.
func (o *object) GetObjectKind() schema.ObjectKind { return &o.TypeMeta }

// decodeObject is the objects' informer's transform: an unstructured
// NodeGC (from the watch) becomes an object whose row holds its status,
// or why it could not be read. A list's items come decoded already
// (objectList).
func decodeObject(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // a tombstone, or already decoded
	}
	n, err := v1alpha1.FromUnstructured(u)
	return newObject(u.GetName(), u.GetResourceVersion(), n, err), nil
}

// newObject is the object of NodeGC name at version rv, decoded as n, or
// not (err).
func newObject(name, rv string, n *v1alpha1.NodeGC, err error) *object {
	o := &object{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	o.row.Name = name
	switch {
	case err != nil:
		o.row.bad = oneLine(err.Error())
	case badStatus(&n.Status) != "":
		o.row.bad = badStatus(&n.Status)
	default:
		st := n.Status // the rest of the object (its managed fields) is not kept
		o.row.Status = &st
	}
	return o
}

// objectList is a list of NodeGC objects decoded straight from the API
// server's JSON into objects: at 5,000 objects, the unstructured list
// and its conversion took 4 times the CPU of this typed decode
// (BenchmarkListOf5000). Should the list not decode at once, each item
// is decoded alone, so one an agent wrote badly is an error on its row,
// not a failed list.
type objectList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []object
}

// DeepCopyObject returns a copy (runtime.Object).
func (l *objectList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = slices.Clone(l.Items)
	return &c
}

// GetObjectKind returns the list's kind.
func (l *objectList) GetObjectKind() schema.ObjectKind { return &l.TypeMeta }

// UnmarshalJSON decodes a NodeGCList: at once, and when that fails
// (an item an agent wrote badly), each item on its own.
func (l *objectList) UnmarshalJSON(b []byte) error {
	var typed struct {
		Metadata metav1.ListMeta `json:"metadata"`
		Items    []item          `json:"items"`
	}
	if json.Unmarshal(b, &typed) == nil {
		l.ListMeta = typed.Metadata
		l.Items = make([]object, 0, len(typed.Items))
		for i := range typed.Items {
			it := &typed.Items[i]
			n := &v1alpha1.NodeGC{Status: it.Status}
			l.Items = append(l.Items, *newObject(it.Metadata.Name, it.Metadata.ResourceVersion, n, nil))
		}
		return nil
	}
	var raw struct {
		Metadata metav1.ListMeta   `json:"metadata"`
		Items    []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("decode a list of NodeGC objects: %w", err)
	}
	l.ListMeta = raw.Metadata
	l.Items = make([]object, 0, len(raw.Items))
	for _, item := range raw.Items {
		l.Items = append(l.Items, *decodeItem(item))
	}
	return nil
}

// item is what the fleet reads of a NodeGC in a list: its name, version
// and status; its managed fields (a third of its bytes) are skipped, not
// decoded.
type item struct {
	Metadata struct {
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Status v1alpha1.NodeGCStatus `json:"status"`
}

// decodeItem decodes one NodeGC of a list; one that does not decode
// keeps its name and the error.
func decodeItem(item []byte) *object {
	var n v1alpha1.NodeGC
	err := json.Unmarshal(item, &n)
	if err != nil {
		var meta struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(item, &meta) // the name, if the metadata decodes
		n.ObjectMeta = meta.Metadata
		err = fmt.Errorf("read NodeGC %s: %w", n.Name, err)
	}
	return newObject(n.Name, n.ResourceVersion, &n, err)
}

// badStatus says what is wrong with a status the API server's schema
// let through but no agent writes; "" when nothing is.
func badStatus(s *v1alpha1.NodeGCStatus) string {
	switch {
	case s.HeartbeatTime == nil:
		return "the agent's object has no status.heartbeatTime"
	case s.Band.Low > s.Band.High:
		return fmt.Sprintf("the agent's object has status.band.low %d above high %d", s.Band.Low, s.Band.High)
	case s.ImageFs != nil && s.ImageFs.AvailableBytes > s.ImageFs.CapacityBytes:
		return fmt.Sprintf("the agent's object has status.imageFs.availableBytes %d above capacityBytes %d", s.ImageFs.AvailableBytes, s.ImageFs.CapacityBytes)
	}
	return ""
}

// judge is a row's state at now: Failed when its object could not be
// read, Stale when its heartbeat is older than StaleAfter, else OK.
func judge(row Node, now time.Time) (State, string) {
	switch {
	case row.bad != "":
		return Failed, row.bad
	case now.Sub(row.Heartbeat()) > StaleAfter:
		return Stale, fmt.Sprintf("no heartbeat since %s (the agent writes one every %s)", row.Heartbeat().UTC().Format(time.RFC3339), HeartbeatPeriod)
	}
	return OK, ""
}
