package attacks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

// TestAttacksExecutor holds the rows of issue 8 items 7 and 10 that attack
// the executor's pool and its write-ahead journal.
func TestAttacksExecutor(t *testing.T) {
	runAttacks(t, executorAttacks)
}

// removals counts the node's Remove* calls.
func removals(node *simnode.Node) int {
	n := 0
	for _, c := range node.MutatingCalls() {
		if strings.Contains(c, "Remove") {
			n++
		}
	}
	return n
}

// waitRemovals waits until the node has served a removal.
func waitRemovals(node *simnode.Node) {
	deadline := time.Now().Add(30 * time.Second)
	for removals(node) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

var executorAttacks = []attack{
	{7, "the state dir filling up mid-pass stops the pass at the failed journal write (exit 1); the next run repairs the journal and accounts for every removal", func(t *testing.T) error {
		if os.Geteuid() != 0 {
			t.Skip("mounting a small tmpfs needs root")
		}
		state := t.TempDir()
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", state).CombinedOutput(); err != nil {
			return fmt.Errorf("mount: %v: %s", err, out)
		}
		defer exec.Command("umount", "-l", state).Run()
		// Enough images that the journal's lines cross many pages: a write
		// into the last page's slack needs no new space.
		node, ep := simnode.ServeTemp(t, simnode.Options{Seed: 7, Images: 80, Pods: 3, DeadPerContainer: 2,
			MinImageBytes: 1 << 20, MaxImageBytes: 2 << 20, InitialUsagePercent: 95, Start: time.Now().Add(-24 * time.Hour)})
		node.SetLatency(50 * time.Millisecond)
		cmd := exec.Command(binary(t), "gc", "--reclaim-all", "--yes", "--parallel", "2", "--minimum-image-ttl-duration", "0", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		waitRemovals(node)
		// The disk fills while the pass runs.
		filler := filepath.Join(state, "filler")
		f, err := os.Create(filler)
		if err != nil {
			return err
		}
		block := bytes.Repeat([]byte{1}, 64<<10)
		for {
			if _, err := f.Write(block); err != nil {
				break
			}
		}
		f.Close()
		err = cmd.Wait()
		node.SetLatency(0)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "journal") {
			return fmt.Errorf("exit %v, stderr %q, %d removals; want exit 1 naming the journal", err, stderr.String(), removals(node))
		}
		first := removals(node)
		os.Remove(filler)
		r := nodegc(t, "gc", "--reclaim-all", "--yes", "--minimum-image-ttl-duration", "0", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		if r.code != 0 || removals(node) == first {
			return fmt.Errorf("second run: exit %d, %d removals after %d, stderr %q; want the rest the stopped pass left", r.code, removals(node), first, r.stderr)
		}
		lines, err := engine.ReadJournalLines(state)
		if err != nil {
			return fmt.Errorf("journal after repair: %v", err)
		}
		js, _ := engine.ReadJournal(state)
		if n := removals(node); len(js) != n || len(engine.OpenIntents(lines)) != 0 {
			return fmt.Errorf("%d removals, %d journalled, %d intents open: every removal must be accounted for", n, len(js), len(engine.OpenIntents(lines)))
		}
		return nil
	}},
	{10, "SIGTERM during a pass with 4 removals in flight lets each finish and journals it, and starts none after", func(t *testing.T) error {
		state := t.TempDir()
		node, ep := startSimnode(t)
		node.SetLatency(150 * time.Millisecond)
		cmd := exec.Command(binary(t), "gc", "--reclaim-all", "--yes", "--parallel", "4", "--simulated", "--runtime-endpoint", ep, "--state-dir", state)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		waitRemovals(node)
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		node.SetLatency(0)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "left undone") {
			return fmt.Errorf("exit %v, stderr %q; want exit 1 saying how many were left undone", err, stderr.String())
		}
		lines, err := engine.ReadJournalLines(state)
		if err != nil {
			return err
		}
		js, _ := engine.ReadJournal(state)
		if n := removals(node); n == 0 || len(js) != n || len(engine.OpenIntents(lines)) != 0 {
			return fmt.Errorf("%d removals, %d journalled, %d intents open: each removal in flight must finish with its outcome journalled", n, len(js), len(engine.OpenIntents(lines)))
		}
		return nil
	}},
}
