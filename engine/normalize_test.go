package engine

import "testing"

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"pause:3.6":                     "docker.io/library/pause:3.6",
		"rancher/mirrored-pause:3.6":    "docker.io/rancher/mirrored-pause:3.6",
		"docker.io/library/pause:3.6":   "docker.io/library/pause:3.6",
		"index.docker.io/library/pause": "docker.io/library/pause:latest",
		"registry.k8s.io/pause:3.9":     "registry.k8s.io/pause:3.9",
		"registry.k8s.io/pause":         "registry.k8s.io/pause:latest",
		"localhost:5000/pause":          "localhost:5000/pause:latest",
		"localhost/pause:1":             "localhost/pause:1",
		"pause@sha256:abc":              "docker.io/library/pause@sha256:abc",
		"sha256:abc":                    "sha256:abc",
		"":                              "",
	} {
		if got := NormalizeRef(in); got != want {
			t.Errorf("NormalizeRef(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSandboxImageMatchesAsTheRuntimeWritesIt(t *testing.T) {
	img := Image{ID: "sha256:p", RepoTags: []string{"docker.io/rancher/mirrored-pause:3.6"}}
	for _, ref := range []string{"rancher/mirrored-pause:3.6", "docker.io/rancher/mirrored-pause:3.6", "sha256:p"} {
		if !IsSandboxImage(img, []string{ref}) {
			t.Errorf("%q does not name the sandbox image %v", ref, img.RepoTags)
		}
	}
	if IsSandboxImage(img, []string{"rancher/mirrored-pause:3.7", "mirrored-pause:3.6"}) {
		t.Error("another tag or repository matched the sandbox image")
	}
}
