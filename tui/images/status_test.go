package images

import (
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// TestStatusSaysWhoPinsAnImage: issue 9 found the unpinned sandbox image
// labelled as pinned. The pane shows the engine's word on each image,
// which says whether the runtime pins it.
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
	m := New(keys.Default(false), style.Default(true))
	m.SetData(s, engine.PlanPass(s, engine.DefaultPolicy(), engine.PassFull, now), now)
	detail := map[string]string{}
	for _, it := range m.items {
		detail[it.row.Image.ID] = it.cells[len(it.cells)-1]
	}
	tests := []struct {
		name string
		id   string
		want string
	}{
		{name: "an unpinned sandbox image is not called pinned", id: "sha256:pause", want: "sandbox image (not pinned by the runtime)"},
		{name: "a pinned sandbox image says both", id: "sha256:pause-pinned", want: "sandbox image, pinned by the runtime"},
		{name: "a pinned image says the runtime pins it", id: "sha256:pinned", want: "pinned by the runtime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := detail[tt.id]; got != tt.want {
				t.Errorf("detail = %q, want %q", got, tt.want)
			}
		})
	}
}
