// Package feed holds the messages the dashboard's root sends its panes:
// what a refresh, a pass or a cgroup read brought. A pane takes the ones it
// shows in its Update and ignores the rest, so the root routes data
// without knowing which pane shows what.
package feed

import (
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
)

// Snapshot is a refresh: the node and the plan the engine made from it
// at At, with its effective policy. A pane shows the engine's explanation
// of the plan (engine.ExplainImages, engine.ExplainContainers) and decides
// nothing about it. The root sends it to the pane on screen and again to a pane when
// it comes on screen after a refresh it missed.
type Snapshot struct {
	Snap engine.Snapshot
	Plan engine.Plan
	At   time.Time
}

// MaxPasses bounds the passes a pane keeps, and so the earlier runs'
// passes the root reads from the journal at start.
const MaxPasses = 500

// Pass is a finished pass (never a dry-run), sent to every pane.
// Earlier marks a pass of an earlier run, read from the journal at start:
// it belongs to the list of passes, not to this session's history.
type Pass struct {
	Report  engine.PassReport
	Earlier bool
}

// State is the dashboard's state, sent to every pane after each refresh,
// notice or pass: the latest refresh, taken at At, the scheduler's status
// and the dashboard's own.
type State struct {
	Snapshot engine.Snapshot
	Plan     engine.Plan
	At       time.Time
	// Refreshes counts the refreshes applied: a new count is a new
	// refresh.
	Refreshes uint64
	Policy    engine.Policy
	Status    engine.Status
	// Controlled reports whether a scheduler runs passes.
	Controlled bool
	Self       Self
	// HideSelf leaves nodegc's own usage out (golden tests).
	HideSelf bool
	Now      time.Time
	Version  string
	ReadOnly bool
	// Agent is the agent the dashboard is attached to; nil when its
	// engine is its own.
	Agent *Agent
}

// Self is nodegc's own footprint.
type Self struct {
	// CPUPercent is the CPU used since the previous sample, in percent of
	// one core; negative when unknown (first sample).
	CPUPercent float64
	// RSSBytes is the resident set size; 0 when unknown.
	RSSBytes int64
}

// Agent names the nodegc agent the dashboard is attached to.
type Agent struct {
	PID       int
	StartedAt time.Time
}

// Event is a kubelet-style event, sent to every pane.
type Event struct{ Event engine.Event }

// Cgroups is a read of the kubepods cgroup tree (Tree nil when the read
// failed: Err says why), sent to every pane.
type Cgroups struct {
	Tree *cgroupfs.Tree
	At   time.Time
	Err  error
}

// Detail is what enter opens over a pane: a title and lines of text.
type Detail struct {
	Title string
	Lines []string
	// Raw is the object itself, shown as JSON on request (k9s y): the
	// CRI object and nodegc's explanation row of it.
	Raw any
}

// Item is one object a pane's row stands for, which ctrl+d offers to
// remove alone: an image or a dead container.
type Item struct {
	Kind engine.ItemKind
	ID   string
	// Name is how the row names it.
	Name string
}

// Clock is the time the screen is drawn at, sent to the pane on screen
// when it moves: a pane draws every age and countdown from its data's
// timestamps and Now, so they move whatever brought the data.
type Clock struct{ Now time.Time }
