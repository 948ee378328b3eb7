package main

import (
	"strings"
	"testing"
)

// Issue 23 item 18: the demo's images have a history, so its first plan
// is in least recently used order, not the tie-break's ID order: the
// candidates (removed, or kept below the cut line) were last used at
// different times.
func TestDemoImagesHaveAHistory(t *testing.T) {
	c := newCLI("")
	if _, _, err := runRootWithTUI(t, c, "--demo"); err != nil {
		t.Fatal(err)
	}
	out := c.out.String()
	lines := strings.Split(out, "\n")
	head := -1
	for i, l := range lines {
		if strings.Contains(l, "LAST USED") && strings.Contains(l, "FIRST SEEN") {
			head = i
			break
		}
	}
	if head < 0 {
		t.Fatalf("no image table:\n%s", out)
	}
	from, to := strings.Index(lines[head], "LAST USED"), strings.Index(lines[head], "FIRST SEEN")
	lastUsed := map[string]int{}
	n := 0
	for _, l := range lines[head+1:] {
		if strings.TrimSpace(l) == "" {
			break // the end of the image table
		}
		if !strings.Contains(l, "remove #") && !strings.Contains(l, "keep not-needed") {
			continue
		}
		n++
		lastUsed[strings.TrimSpace(l[from:to])]++
	}
	if n < 5 {
		t.Fatalf("%d candidates, want at least 5:\n%s", n, out)
	}
	for v, k := range lastUsed {
		if k > n/2 {
			t.Errorf("%d of %d candidates were last used %q: the order is no LRU order\n%s", k, n, v, out)
		}
	}
	if len(lastUsed) < n/2 {
		t.Errorf("%d distinct LAST USED values among %d candidates, want most distinct: %v", len(lastUsed), n, lastUsed)
	}
}
