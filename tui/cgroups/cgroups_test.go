package cgroups

import (
	"testing"
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Issue 23 item 21: a read that gives no new rate (the same instant
// again) keeps the last one instead of showing "—" until the next.
func TestCPURateStaysUntilANewOneCanBeComputed(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tree := func(cpu time.Duration) *cgroupfs.Tree {
		return &cgroupfs.Tree{Root: &cgroupfs.Node{Path: "/kubepods", CPUUsageNanos: uint64(cpu)}}
	}
	m := New(keys.Default(false), style.Default(true), true)
	m.SetTree(tree(time.Second), at)
	m.SetTree(tree(3*time.Second), at.Add(2*time.Second)) // 1 core
	m.SetTree(tree(3*time.Second), at.Add(2*time.Second)) // the same read again
	if r, ok := m.rate["/kubepods"]; !ok || r != 1 {
		t.Fatalf("rate after a repeated read = %v, %v; want the last rate, 1", r, ok)
	}
	m.SetTree(tree(4*time.Second), at.Add(4*time.Second)) // 0.5 core over 2 s
	if r := m.rate["/kubepods"]; r != 0.5 {
		t.Errorf("the next rate = %v; want 0.5", r)
	}
}
