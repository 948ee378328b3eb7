package model

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
		"Registry/pause:1":              "Registry/pause:1",
		"7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097": "sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097",
		"": "",
	} {
		if got := normalizeRef(in); got != want {
			t.Errorf("normalizeRef(%q) = %q, want %q", in, got, want)
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

// TestSandboxImageConfiguredWithTagAndDigest pins issue 8 item 1: a
// runtime configured with name:tag@digest lists the image by name@digest
// only (containerd's reference.ParseDockerRef drops the tag when a digest
// is present), and that image must still be the sandbox image.
func TestSandboxImageConfiguredWithTagAndDigest(t *testing.T) {
	const dgst = "sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097"
	for _, tt := range []struct {
		name string
		img  Image
		refs []string
		want bool
	}{
		{"listed by name@digest only", Image{ID: "sha256:cfg", RepoDigests: []string{"registry.k8s.io/pause@" + dgst}},
			[]string{"registry.k8s.io/pause:3.9@" + dgst}, true},
		{"short docker.io name with tag and digest", Image{ID: "sha256:cfg", RepoDigests: []string{"docker.io/library/pause@" + dgst}},
			[]string{"pause:3.9@" + dgst}, true},
		{"digest matches under another repository name", Image{ID: "sha256:cfg", RepoDigests: []string{"mirror.local/pause@" + dgst}},
			[]string{"registry.k8s.io/pause:3.9@" + dgst}, true},
		{"tag part matches a tagged image", Image{ID: "sha256:cfg", RepoTags: []string{"registry.k8s.io/pause:3.9"}},
			[]string{"registry.k8s.io/pause:3.9@sha256:0000000000000000000000000000000000000000000000000000000000000000"}, true},
		{"image ID as 64 hex digits without its algorithm", Image{ID: dgst},
			[]string{dgst[len("sha256:"):]}, true},
		{"bare manifest digest", Image{ID: "sha256:cfg", RepoDigests: []string{"registry.k8s.io/pause@" + dgst}},
			[]string{dgst}, true},
		{"another digest and tag is not the sandbox image", Image{ID: "sha256:cfg", RepoTags: []string{"registry.k8s.io/pause:3.10"}, RepoDigests: []string{"registry.k8s.io/pause@sha256:1111111111111111111111111111111111111111111111111111111111111111"}},
			[]string{"registry.k8s.io/pause:3.9@" + dgst}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsSandboxImage(tt.img, tt.refs); got != tt.want {
				t.Errorf("IsSandboxImage(%v, %v) = %v, want %v", tt.img, tt.refs, got, tt.want)
			}
		})
	}
}

func TestNormalizeRefDigestWinsOverTag(t *testing.T) {
	for in, want := range map[string]string{
		"registry.k8s.io/pause:3.9@sha256:abc": "registry.k8s.io/pause@sha256:abc",
		"pause:3.9@sha256:abc":                 "docker.io/library/pause@sha256:abc",
		"localhost:5000/pause:1@sha256:abc":    "localhost:5000/pause@sha256:abc",
	} {
		if got := normalizeRef(in); got != want {
			t.Errorf("normalizeRef(%q) = %q, want %q", in, got, want)
		}
	}
}
