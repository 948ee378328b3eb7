package snapidx

import (
	"testing"

	"github.com/nodegc/nodegc/engine"
)

func TestIsSandboxImage(t *testing.T) {
	const dgst = "sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097"
	for _, tt := range []struct {
		name string
		ref  string
		img  engine.Image
		want bool
	}{
		{"a tag as configured", "registry.k8s.io/pause:3.9",
			engine.Image{ID: "sha256:p", RepoTags: []string{"registry.k8s.io/pause:3.9"}}, true},
		{"name:tag@digest listed as name@digest only, as the planner matches it", "registry.k8s.io/pause:3.9@" + dgst,
			engine.Image{ID: "sha256:p", RepoDigests: []string{"registry.k8s.io/pause@" + dgst}}, true},
		{"a short name listed by its full name", "pause:3.6",
			engine.Image{ID: "sha256:p", RepoTags: []string{"docker.io/library/pause:3.6"}}, true},
		{"another image is not the sandbox image", "registry.k8s.io/pause:3.9",
			engine.Image{ID: "sha256:app", RepoTags: []string{"docker.io/library/app:1"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := engine.Snapshot{Runtime: engine.RuntimeInfo{SandboxImages: []string{tt.ref}}, Images: []engine.Image{tt.img}}
			if got := New(s).IsSandboxImage(tt.img); got != tt.want {
				t.Errorf("IsSandboxImage(%v) with sandbox image %q = %v, want %v", tt.img, tt.ref, got, tt.want)
			}
		})
	}
}
