package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nodegc/nodegc/engine"
)

// TestDiskReserveIsLabelledAsNodegcsCheck: issue 9 found "image fs OUT OF
// DISK" printed as if the kubelet said so, for a threshold only the old
// diskSpaceManager (gone from current kubelets) checked.
func TestDiskReserveIsLabelledAsNodegcsCheck(t *testing.T) {
	tests := []struct {
		name string
		d    engine.DiskReserve
		want []string
	}{
		{
			name: "below the reserve says so and names nodegc's check",
			d:    engine.DiskReserve{ThresholdMiB: 256, ImageFs: engine.FsReserve{OK: false, AvailableBytes: 100 << 20}},
			want: []string{"nodegc's check of the old kubelet diskSpaceManager threshold", "image fs BELOW 256 MiB, 100.0 MiB available"},
		},
		{
			name: "above the reserve is ok",
			d:    engine.DiskReserve{ThresholdMiB: 256, ImageFs: engine.FsReserve{OK: true, AvailableBytes: 1 << 30}, RootFs: &engine.FsReserve{OK: false, AvailableBytes: 1 << 20}},
			want: []string{"image fs ok, 1.0 GiB available; root fs BELOW 256 MiB, 1.0 MiB available"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			renderDiskReserve(&b, tt.d)
			out := b.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(strings.ToLower(out), "out of disk") {
				t.Errorf("output says out of disk:\n%s", out)
			}
		})
	}
}

// TestPlanFitsTheTerminal pins issue 12 bug 7: on a terminal the plan table
// is cut to its width instead of wrapping; piped, it keeps its full width.
func TestPlanFitsTheTerminal(t *testing.T) {
	snap := writeFile(t, "snap.json", snapshotJSON)
	for _, tc := range []struct {
		name  string
		width int
	}{{"a terminal 80 wide", 80}, {"piped", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCLI("")
			c.f.OutWidth = func() int { return tc.width }
			if code := c.run("plan", "--from", snap, "--image-gc-high-threshold", "1", "--image-gc-low-threshold", "0"); code != 0 {
				t.Fatalf("exit %d: %s", code, c.err.String())
			}
			widest := 0
			for _, l := range strings.Split(c.out.String(), "\n") {
				widest = max(widest, utf8.RuneCountInString(l))
			}
			switch {
			case tc.width > 0 && widest > tc.width:
				t.Errorf("a line is %d wide on a terminal %d wide", widest, tc.width)
			case tc.width == 0 && widest <= 80:
				t.Errorf("piped output is at most %d wide: this fixture should be wider than 80", widest)
			}
		})
	}
}
