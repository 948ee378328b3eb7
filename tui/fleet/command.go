package fleet

import (
	"context"
	"fmt"
	"slices"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/internal/texttable"
)

// The node view sends commands to the node's agent through its NodeGC
// object's spec (Commander), with the keys of the node's own dashboard:
// i, x and R force an image, container or reclaim-all pass, d previews a
// full pass (whose outcome offers y to run it), p pauses the periodic
// passes until an expiry or resumes them. Each asks first, naming the
// node and the action; the acknowledgement and the outcome are read
// back from the object's status as the watch brings it.

// Commander writes commands into a node's NodeGC object (a
// *fleet.Commands): each returns the command's ID, or why the API server
// refused it.
type Commander interface {
	Pass(ctx context.Context, node, kind string, preview bool) (string, error)
	Pause(ctx context.Context, node string, until time.Time) (string, error)
	Resume(ctx context.Context, node string) error
}

// DefaultPauseFor is how long a pause from the fleet lasts unless the
// operator chooses (--pause-for, or + and - before confirming): every
// pause from the fleet ends by itself.
const DefaultPauseFor = time.Hour

// pauseSteps are the lengths + and - step through.
var pauseSteps = []time.Duration{5 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 24 * time.Hour}

// sendTimeout bounds one command's requests.
const sendTimeout = 30 * time.Second

// action is one command: a pass of a kind (or its preview), a pause for
// a length, or a resume.
type action struct {
	pass     engine.PassKind
	preview  bool
	pause    time.Duration
	resume   bool
	pausedBy string
}

// describe names the action for the confirm and the outcome line.
func (a action) describe(now time.Time) string {
	switch {
	case a.resume:
		return "resume the periodic passes (paused by " + a.pausedBy + ")"
	case a.pause > 0:
		return fmt.Sprintf("pause the periodic passes until %s (%s)", now.Add(a.pause).Format("15:04:05"), a.pause)
	case a.preview:
		return "preview a full pass (a dry-run: nothing removed)"
	}
	return map[engine.PassKind]string{engine.PassImages: "force image GC", engine.PassContainers: "force container GC",
		engine.PassFull: "run a full pass", engine.PassReclaimAll: "reclaim all unused (the eviction manager's reclaim)"}[a.pass]
}

// confirmation is the question asked before a command is sent.
type confirmation struct {
	node string
	act  action
	// preview is the preview's outcome a full pass's confirm follows.
	preview *v1alpha1.Pass
}

// sentCommand is the latest command this view sent, and what the
// object's status says of it.
type sentCommand struct {
	node string
	act  action
	id   string
	at   time.Time
	// acked is set once the status acknowledged it; offered once a
	// preview's outcome has opened its full pass's confirm.
	acked, offered bool
	// pauseID is the pause a resume ends.
	pauseID string
}

// sentMsg is a command's send: its ID, or the API server's refusal.
type sentMsg struct {
	node string
	act  action
	id   string
	at   time.Time
	err  error
	// pauseID is the pause a resume ends.
	pauseID string
}

// commandKey handles the command keys in node n's view; handled false
// for any other key.
func (m Model) commandKey(msg tea.KeyPressMsg, n fleet.Node) (Model, tea.Cmd, bool) {
	k := m.Keys
	var act action
	switch {
	case key.Matches(msg, k.ForceImages):
		act.pass = engine.PassImages
	case key.Matches(msg, k.ForceContainers):
		act.pass = engine.PassContainers
	case key.Matches(msg, k.ReclaimAll):
		act.pass = engine.PassReclaimAll
	case key.Matches(msg, k.DryRun):
		act.pass, act.preview = engine.PassFull, true
	case key.Matches(msg, k.Pause):
		var ok bool
		if act, ok = m.pauseAction(n); !ok {
			return m, nil, true
		}
	case key.Matches(msg, k.ReadOnly):
		m.note, m.noteBad = "no commands from this view", true
		return m, nil, true
	default:
		return m, nil, false
	}
	if m.o.Commands == nil {
		m.note, m.noteBad = "no commands from this view", true
		return m, nil, true
	}
	if n.State == fleet.NoAgent {
		m.note, m.noteBad = "node "+n.Name+" has no agent (no NodeGC object): nothing to ask", true
		return m, nil, true
	}
	m.confirm, m.note = &confirmation{node: n.Name, act: act}, ""
	return m, nil, true
}

// pauseAction is p's action on node n: a pause for the chosen length, or
// a resume of a pause sent through the object. A pause asked on the node
// itself is the node's to end: removing the object's pause would not.
func (m *Model) pauseAction(n fleet.Node) (action, bool) {
	if n.Status == nil || n.Status.Paused == nil {
		return action{pause: m.pauseFor}, true
	}
	if p := n.Status.Paused; p.ID == "" {
		m.note, m.noteBad = "paused on the node itself by "+p.By+": a resume from here ends only a pause sent through the object", true
		return action{}, false
	}
	return action{resume: true, pausedBy: n.Status.Paused.By}, true
}

// confirmKey answers the open confirm: y sends, + and - lengthen and
// shorten a pause, the cancel keys close it.
func (m Model) confirmKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	c := *m.confirm
	switch {
	case key.Matches(msg, m.Keys.Confirm):
		m.confirm = nil
		m.note, m.noteBad = "sending: "+c.act.describe(m.o.Now())+" to "+c.node+"…", false
		return m, m.sendCmd(c)
	case c.act.pause > 0 && key.Matches(msg, m.Keys.Slower):
		c.act.pause = stepPause(c.act.pause, +1)
	case c.act.pause > 0 && key.Matches(msg, m.Keys.Faster):
		c.act.pause = stepPause(c.act.pause, -1)
	case key.Matches(msg, m.Keys.Cancel):
		m.confirm = nil
		return m, nil
	}
	m.confirm = &c
	return m, nil
}

// stepPause is the next pause length up (dir +1) or down (-1) from d.
func stepPause(d time.Duration, dir int) time.Duration {
	if dir > 0 {
		if i := slices.IndexFunc(pauseSteps, func(s time.Duration) bool { return s > d }); i >= 0 {
			return pauseSteps[i]
		}
		return d
	}
	for _, s := range slices.Backward(pauseSteps) {
		if s < d {
			return s
		}
	}
	return d
}

// sendCmd sends c's command, off the UI loop.
func (m Model) sendCmd(c confirmation) tea.Cmd {
	cmdr, parent, now := m.o.Commands, m.o.Context, m.o.Now
	pauseID := ""
	if n, ok := m.openRow(); ok && n.Status != nil && n.Status.Paused != nil {
		pauseID = n.Status.Paused.ID
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, sendTimeout)
		defer cancel()
		at := now()
		out := sentMsg{node: c.node, act: c.act, at: at, pauseID: pauseID}
		switch a := c.act; {
		case a.resume:
			out.err = cmdr.Resume(ctx, c.node)
		case a.pause > 0:
			out.id, out.err = cmdr.Pause(ctx, c.node, at.Add(a.pause))
		default:
			out.id, out.err = cmdr.Pass(ctx, c.node, string(a.pass), a.preview)
		}
		return out
	}
}

// sent records a command's send, or says why it was refused.
func (m Model) sent(msg sentMsg) Model {
	if msg.err != nil {
		m.note, m.noteBad = "not sent to "+msg.node+": "+oneLine(msg.err), true
		return m
	}
	m.last = &sentCommand{node: msg.node, act: msg.act, id: msg.id, at: msg.at, pauseID: msg.pauseID}
	m.note, m.noteBad = "", false
	return m.follow()
}

// follow reads the sent command's acknowledgement in the rows: once a
// preview of this view's is done, its full pass's confirm opens.
func (m Model) follow() Model {
	s := m.last
	if s == nil {
		return m
	}
	n, ok := m.row(s.node)
	if !ok || n.Status == nil {
		return m
	}
	c := *s
	st := n.Status
	switch {
	case c.act.resume:
		c.acked = c.acked || st.Paused == nil || st.Paused.ID != c.pauseID
	case c.act.pause > 0:
		c.acked = c.acked || st.Paused != nil && st.Paused.ID == c.id
	default:
		c.acked = c.acked || st.Command != nil && st.Command.ID == c.id
	}
	if out := st.Command; c.act.preview && !c.offered && out != nil && out.ID == c.id && out.Result == "done" && out.Pass != nil {
		c.offered = true
		if m.open == c.node && m.confirm == nil {
			m.confirm = &confirmation{node: c.node, act: action{pass: engine.PassFull}, preview: out.Pass}
		}
	}
	m.last = &c
	return m
}

// row is the named node's row.
func (m Model) row(name string) (fleet.Node, bool) {
	i := slices.IndexFunc(m.nodes, func(n fleet.Node) bool { return n.Name == name })
	if i < 0 {
		return fleet.Node{}, false
	}
	return m.nodes[i], true
}

// sentLine says where the command this view sent to n stands: sent and
// waiting, acknowledged, and its outcome from the status.
func (m Model) sentLine(n fleet.Node, now time.Time) string {
	s := m.last
	if s == nil || s.node != n.Name {
		return ""
	}
	head := s.act.describe(s.at) + " · sent " + s.at.Format("15:04:05")
	if s.id != "" {
		head += " as " + s.id
	}
	st := n.Status
	switch {
	case st == nil:
		return head + " · the object is gone"
	case s.act.resume:
		if s.acked {
			return head + " · done: resumed"
		}
	case s.act.pause > 0:
		switch {
		case st.Paused != nil && st.Paused.ID == s.id:
			return head + " · acknowledged: paused until " + until(st.Paused)
		case s.acked:
			return head + " · the pause has ended"
		}
	case st.Command != nil && st.Command.ID == s.id:
		return head + " · " + outcome(st.Command, now)
	}
	return head + " · waiting for the agent to acknowledge"
}

// outcome is a pass command's outcome as the agent wrote it.
func outcome(c *v1alpha1.CommandOutcome, now time.Time) string {
	switch c.Result {
	case "running":
		return "acknowledged: running since " + format.Ago(c.At.Time, now)
	case "done":
		if p := c.Pass; p != nil && p.Result == "preview" {
			return fmt.Sprintf("done: a %s pass would remove %d items now", p.Kind, p.Removed)
		}
		return "done: " + pass(c.Pass, now)
	}
	return c.Result + ": " + c.Message
}

func until(p *v1alpha1.Pause) string {
	if p.Until == nil {
		return "a resume"
	}
	return p.Until.Format("15:04:05")
}

// confirmLines are the open confirm's lines: the node, the action, the
// preview it follows, and the keys.
func (m Model) confirmLines() []string {
	c := m.confirm
	if c == nil {
		return nil
	}
	var lines []string
	if p := c.preview; p != nil {
		lines = append(lines, fmt.Sprintf("The preview on %s: a full pass would remove %d items now.", c.node, p.Removed))
	}
	lines = append(lines, m.Styles.ModalTitle.Render("On node "+texttable.PrintableLine(c.node)+": "+c.act.describe(m.o.Now())+"?"))
	keys := "y sends it through the node's NodeGC object · esc cancels"
	if c.act.pause > 0 {
		keys = "y sends it through the node's NodeGC object · + longer · - shorter · esc cancels"
	}
	return append(lines, m.Styles.Label.Render(keys))
}

// commandHelp is the node view's command keys.
func (m Model) commandHelp() []key.Binding {
	k := m.Keys
	return []key.Binding{k.ForceImages, k.ForceContainers, k.ReclaimAll, k.ReadOnly, k.DryRun, k.Pause}
}
