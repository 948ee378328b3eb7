package images

import (
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/snapidx"
)

// TestStatusSaysWhoPinsAnImage: issue 9 found the unpinned sandbox image
// labelled as pinned. The pane says whether the runtime pins an image.
func TestStatusSaysWhoPinsAnImage(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	s := engine.Snapshot{
		TakenAt: now,
		Runtime: engine.RuntimeInfo{SandboxImages: []string{"registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.10"}},
		Images: []engine.Image{
			{ID: "sha256:pause", RepoTags: []string{"registry.k8s.io/pause:3.9"}},
			{ID: "sha256:pause-pinned", RepoTags: []string{"registry.k8s.io/pause:3.10"}, Pinned: true},
			{ID: "sha256:pinned", RepoTags: []string{"app:1"}, Pinned: true},
		},
	}
	x := snapidx.New(s)
	tests := []struct {
		name string
		img  engine.Image
		want string
	}{
		{name: "an unpinned sandbox image is not called pinned", img: s.Images[0], want: "sandbox image (not pinned by the runtime)"},
		{name: "a pinned sandbox image says both", img: s.Images[1], want: "sandbox image, pinned by the runtime"},
		{name: "a pinned image says the runtime pins it", img: s.Images[2], want: "pinned by the runtime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := status(tt.img, x, engine.Plan{}, map[string]int{}, map[string]engine.ImageKeep{}, now)
			if got != tt.want {
				t.Errorf("status = %q, want %q", got, tt.want)
			}
		})
	}
}
