package model

import (
	"slices"
	"strings"
)

// IsSandboxImage reports whether the image is one of the sandbox ("pause")
// images named by refs (RuntimeInfo.SandboxImages): a ref may be the
// image's ID, one of its tags or one of its digests, written in full or
// short, with a tag, a digest or both. A ref with a digest matches any
// image carrying that manifest digest, whatever the repository name, and
// its name:tag part matches by tag too: a runtime configured with
// "registry.k8s.io/pause:3.9@sha256:…" lists the image as
// "registry.k8s.io/pause@sha256:…" only. nodegc never removes a sandbox
// image, pinned or not: containerd before 1.7 does not pin it, and the
// kubelet, crictl rmi --prune and eraser have all deleted it. Matching errs
// on the side of keeping: every form that could name the image counts.
func IsSandboxImage(img Image, refs []string) bool {
	for _, r := range refs {
		if r == "" {
			continue
		}
		if r == img.ID || slices.Contains(img.RepoTags, r) || slices.Contains(img.RepoDigests, r) {
			return true
		}
		name, tag, digest := splitRef(r)
		if digest != "" {
			if digest == img.ID {
				return true
			}
			for _, d := range img.RepoDigests {
				if _, _, dd := splitRef(d); dd == digest {
					return true
				}
			}
		}
		if name == "" {
			continue
		}
		if tag == "" && digest == "" {
			tag = "latest"
		}
		want := normalizeRef(name + ":" + tag)
		if tag == "" {
			want = normalizeRef(name + "@" + digest)
		}
		for _, t := range slices.Concat(img.RepoTags, img.RepoDigests) {
			if normalizeRef(t) == want {
				return true
			}
		}
	}
	return false
}

// splitRef splits an image reference into its name, tag and digest, each
// possibly empty. A bare "sha256:…" is a digest (an image ID or a manifest
// digest) with no name.
func splitRef(ref string) (name, tag, digest string) {
	if d, ok := bareDigest(ref); ok {
		return "", "", d
	}
	name = ref
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, digest = name[:i], name[i+1:]
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

// bareDigest reports whether ref is a digest with no name, and returns it
// with its algorithm: "sha256:…", "sha512:…", or 64 hex digits alone,
// which distribution/reference's ParseAnyReference reads as a sha256
// image ID.
func bareDigest(ref string) (string, bool) {
	for _, alg := range [...]string{"sha256:", "sha384:", "sha512:"} {
		if strings.HasPrefix(ref, alg) && !strings.ContainsAny(ref, "/@") {
			return ref, true
		}
	}
	if len(ref) == 64 && strings.Trim(ref, "0123456789abcdef") == "" {
		return "sha256:" + ref, true
	}
	return "", false
}

// normalizeRef expands an image reference the way containerd stores it
// (docker's rules, as containerd's reference.ParseDockerRef): a name
// without a registry is on docker.io, a docker.io name without a path is
// under library/, a name with neither tag nor digest is :latest, and a
// digest wins over a tag (name:tag@digest is name@digest). Runtimes report
// the configured sandbox image as written ("pause:3.6"), but list images by
// their full names ("docker.io/library/pause:3.6"), so both must be
// compared normalised.
func normalizeRef(ref string) string {
	if ref == "" {
		return ref
	}
	if d, ok := bareDigest(ref); ok {
		return d
	}
	name, tag, digest := splitRef(ref)
	domain, path := "docker.io", name
	// splitDockerDomain: a first element with a dot or a colon, localhost,
	// or any upper case (not allowed in a repository path) is a registry.
	if i := strings.IndexByte(name, '/'); i >= 0 && (strings.ContainsAny(name[:i], ".:") || name[:i] == "localhost" || strings.ToLower(name[:i]) != name[:i]) {
		domain, path = name[:i], name[i+1:]
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	switch {
	case digest != "":
		return domain + "/" + path + "@" + digest
	case tag != "":
		return domain + "/" + path + ":" + tag
	}
	return domain + "/" + path + ":latest"
}
