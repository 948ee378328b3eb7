package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDashboardEndsAfterSessionKillAndSIGTERM pins issue 23 item 22: the
// dashboard run as `make demo` runs it (the built binary with --demo:
// straight in the pane, under a parent as make runs it, and under a parent
// that ignores SIGHUP and does not pass it on, as a shell without job
// control, so that only the hung-up terminal tells), its tmux session
// killed (what an SSH drop does) and SIGTERM sent a moment later to what
// ran in the session. Bubble Tea v2.0.10's signal handler could then block
// forever sending its QuitMsg to an event loop that had gone, and the
// process outlived its terminal deaf to SIGTERM. Every run, whatever the
// delays, leaves no nodegc process after 5 s.
func TestDashboardEndsAfterSessionKillAndSIGTERM(t *testing.T) {
	requireTmux(t)
	bin := buildNodegc(t)
	const runs = 24
	parents := []struct {
		name string
		argv []string
	}{
		{"in the pane", nil},
		{"under a parent that ignores SIGHUP", []string{"sh", "-c", `trap "" HUP; "$@"; exit $?`, "sh"}},
		{"under a parent, as make runs it", []string{"sh", "-c", `"$@"; exit $?`, "sh"}},
	}
	for i := range runs {
		// The delay before the kill walks through the first frames and the
		// demo's first second; the delay between the kill and SIGTERM
		// walks 0-1.15 s, where the dashboard is on its way out.
		settle := time.Duration(i%4) * 300 * time.Millisecond
		term := time.Duration(i%6*230) * time.Millisecond
		parent := parents[i%len(parents)]
		name := fmt.Sprintf("run %d: kill %s after the first frame, SIGTERM %s later, %s", i, settle, term, parent.name)
		t.Run(name, func(t *testing.T) {
			tmp := shortTempDir(t)
			s := startSession(t, 100, 30, append(parent.argv, "env", "TMPDIR="+tmp, bin, "--demo")...)
			t.Cleanup(func() { killAll(bin) })
			s.waitText(t, "the Overview pane", overview...)
			time.Sleep(settle)
			ran := sessionProcs(t, s.pid)
			s.tmux(t, "kill-session", "-t", s.name)
			time.Sleep(term)
			for _, pid := range ran {
				syscall.Kill(pid, syscall.SIGTERM)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				left := procsOf(bin)
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("nodegc still runs 5s after the session was killed and SIGTERM sent %s later: pids %v", term, left)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// sessionProcs lists the processes of the session pid leads (the pane's
// shell or nodegc, and what they started).
func sessionProcs(t *testing.T, leader int) []int {
	t.Helper()
	var pids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// Fields after the command name: state, ppid, pgrp, session.
		rest := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(rest) < 4 || rest[3] != strconv.Itoa(leader) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no process in the pane's session %d", leader)
	}
	return pids
}

// procsOf lists the live processes running the executable bin.
func procsOf(bin string) []int {
	var pids []int
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, f := range exes {
		if target, err := os.Readlink(f); err != nil || target != bin {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAll ends every process still running bin: a test ends what it
// started, even when it fails.
func killAll(bin string) {
	for _, pid := range procsOf(bin) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
