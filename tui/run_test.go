package tui

import (
	"context"
	"errors"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// stuckProgram is a tea.Program as Bubble Tea v2.0.10 left it when its
// signal goroutine blocked: Run never returns, and Quit and Kill, if
// quitWorks and killWorks are false, do nothing (or block).
type stuckProgram struct {
	quitWorks, killWorks bool
	end                  chan struct{}
	quits, kills         chan struct{}
}

func newStuckProgram(quitWorks, killWorks bool) *stuckProgram {
	return &stuckProgram{quitWorks: quitWorks, killWorks: killWorks,
		end: make(chan struct{}), quits: make(chan struct{}, 1), kills: make(chan struct{}, 1)}
}

func (p *stuckProgram) Run() (tea.Model, error) {
	<-p.end
	return Model{}, tea.ErrProgramKilled
}

func (p *stuckProgram) Quit() {
	p.quits <- struct{}{}
	if p.quitWorks {
		close(p.end)
		return
	}
	select {} // blocks, as Send to a gone event loop did
}

func (p *stuckProgram) Kill() {
	p.kills <- struct{}{}
	if p.killWorks {
		close(p.end)
		return
	}
	select {}
}

// Issue 23 item 22: once asked to stop, the dashboard is quit, then
// killed, then left behind, each within its grace: no path out of Run
// waits forever, whatever the program does.
func TestRunUntilBoundsEveryWaitOnTheWayOut(t *testing.T) {
	const grace = 50 * time.Millisecond
	for _, tc := range []struct {
		name                 string
		quitWorks, killWorks bool
		wantErr              error
		wantKill             bool
	}{
		{"a program that quits is not killed", true, false, tea.ErrProgramKilled, false},
		{"a program deaf to quit is killed", false, true, tea.ErrProgramKilled, true},
		{"a program deaf to both is left behind", false, false, errStuck, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newStuckProgram(tc.quitWorks, tc.killWorks)
			stop, cancel := context.WithCancel(context.Background())
			cancel()
			start := time.Now()
			_, err := runUntil(stop, p, grace, grace)
			if took := time.Since(start); took > 2*grace+time.Second {
				t.Errorf("runUntil took %s, want at most the two graces", took)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("err %v, want %v", err, tc.wantErr)
			}
			if len(p.quits) != 1 {
				t.Error("the program was not asked to quit")
			}
			if got := len(p.kills) == 1; got != tc.wantKill {
				t.Errorf("killed %v, want %v", got, tc.wantKill)
			}
		})
	}
}
