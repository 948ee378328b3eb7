package main

import (
	"bytes"
	"strings"
	"testing"

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
