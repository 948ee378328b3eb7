package main

import (
	"bytes"
	"io"
	"os"
	"sync"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/tui"
)

// openDashboard draws the dashboard's first frame at once (tui.Open), the
// moment runLiveDashboard starts: before the agent is asked for its
// status or the engine is opened, which is where an attaching dashboard
// spent its first 200 ms (issue 24). It says what the dashboard waits
// for: the agent, when the state dir has its control socket, else its
// own engine. The dashboard draws over the frame (opts.opening).
//
// Until the returned release is called, what is written on stderr (a
// warning about the kubelet config, say) is held: written now, it would
// land in the frame's alternate screen and be lost with it. release
// leaves the alternate screen unless the dashboard did, then writes what
// was held and lets stderr through again. It may be called more than
// once. Nothing is drawn or held when stdout is not a terminal.
func openDashboard(opts *rootOptions) (release func()) {
	out, ok := opts.IO.Out.(*os.File)
	if !ok {
		return func() {}
	}
	note := "starting nodegc's engine on this node"
	if g := opts.Global; g.StateDir != "" && control.Present(g.StateDir) {
		note = "connecting to the agent through " + control.SocketPath(g.StateDir)
	}
	op := tui.Open(out, tui.Options{ReadOnly: opts.ReadOnly, RefreshInterval: opts.Refresh, Version: version}, note)
	if op == nil {
		return func() {}
	}
	opts.opening = op
	held := &heldWriter{to: opts.IO.Err}
	opts.IO.Err = held
	var once sync.Once
	return func() {
		once.Do(func() {
			op.Close()
			held.release()
		})
	}
}

// heldWriter keeps what is written to it until release, then writes it
// to `to`, and passes on what follows.
type heldWriter struct {
	mu       sync.Mutex
	to       io.Writer
	buf      bytes.Buffer
	released bool
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.released {
		return w.to.Write(p)
	}
	return w.buf.Write(p)
}

// release writes what was held and lets the writes that follow through.
func (w *heldWriter) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.released {
		w.released = true
		_, _ = w.to.Write(w.buf.Bytes())
		w.buf.Reset()
	}
}
