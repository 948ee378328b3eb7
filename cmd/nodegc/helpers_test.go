package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/internal/simnode"
)

// fixedNow is the clock of every test.
var fixedNow = time.Date(2026, time.January, 2, 15, 4, 5, 0, time.UTC)

// cli is a factory wired to buffers, with no terminal, an empty
// environment and no default kubelet config, so that no test reads the
// host's /var/lib/kubelet/config.yaml.
type cli struct {
	f        *factory
	out, err *bytes.Buffer
	env      map[string]string
	tty      bool
}

func newCLI(stdin string) *cli {
	c := &cli{out: &bytes.Buffer{}, err: &bytes.Buffer{}, env: map[string]string{}}
	c.f = &factory{
		In:            strings.NewReader(stdin),
		Out:           c.out,
		Err:           c.err,
		IsTerminal:    func() bool { return c.tty },
		OutIsTerminal: func() bool { return c.tty },
		Getenv:        func(k string) string { return c.env[k] },
		Now:           func() time.Time { return fixedNow },
	}
	return c
}

// run executes the command line and returns the exit code.
func (c *cli) run(args ...string) int {
	return execute(context.Background(), c.f, args)
}

// stderrLines returns stderr's lines.
func (c *cli) stderrLines() []string {
	s := strings.TrimRight(c.err.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// writeFile writes a file in a temp dir and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startSimnode serves a simulated node on a socket in a temp dir and
// returns it with its endpoint; it is stopped when the test ends.
func startSimnode(t *testing.T, o simnode.Options) (*simnode.Node, string) {
	t.Helper()
	if o.Start.IsZero() {
		o.Start = fixedNow.Add(-time.Hour)
	}
	return simnode.ServeTemp(t, o)
}
