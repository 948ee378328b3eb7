// Package snapidx indexes a snapshot for the panes: pod names by sandbox
// and by UID, image users, image names.
package snapidx

import (
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/human"
)

// Pod is a pod's identity as the sandboxes tell it.
type Pod struct {
	UID       string
	Namespace string
	Name      string
}

// String is "namespace/name", or the UID when no sandbox names the pod.
func (p Pod) String() string {
	if p.Name == "" {
		if p.UID == "" {
			return "<unknown pod>"
		}
		return "pod " + p.UID
	}
	return p.Namespace + "/" + p.Name
}

// Index is a snapshot's lookups.
type Index struct {
	BySandbox map[string]Pod
	ByUID     map[string]Pod
	// Users maps an image ID to the containers using it, as
	// "ns/pod/container", in snapshot order.
	Users map[string][]string
	// Sandbox holds the sandbox image references (IDs and tags), and the
	// IDs of the snapshot's images engine.IsSandboxImage matches.
	Sandbox map[string]bool
	// Images maps an image ID to the image.
	Images map[string]engine.Image
}

// New indexes the snapshot.
func New(s engine.Snapshot) Index {
	x := Index{
		BySandbox: make(map[string]Pod, len(s.Sandboxes)),
		ByUID:     make(map[string]Pod, len(s.Sandboxes)),
		Users:     make(map[string][]string),
		Sandbox:   make(map[string]bool, len(s.Runtime.SandboxImages)),
		Images:    make(map[string]engine.Image, len(s.Images)),
	}
	for _, sb := range s.Sandboxes {
		p := Pod{UID: sb.PodUID, Namespace: sb.PodNamespace, Name: sb.PodName}
		x.BySandbox[sb.ID] = p
		if old, ok := x.ByUID[sb.PodUID]; !ok || old.Name == "" {
			x.ByUID[sb.PodUID] = p
		}
	}
	for _, ref := range s.Runtime.SandboxImages {
		x.Sandbox[ref] = true
	}
	ids := make(map[string]bool, len(s.Images))
	for _, im := range s.Images {
		ids[im.ID] = true
		x.Images[im.ID] = im
		if engine.IsSandboxImage(im, s.Runtime.SandboxImages) {
			x.Sandbox[im.ID] = true // also by digest or normalised name, as the planner matches
		}
	}
	for _, c := range s.Containers {
		id := c.ImageID
		if !ids[id] {
			id = c.ImageRef
		}
		if !ids[id] {
			continue
		}
		x.Users[id] = append(x.Users[id], x.PodOf(c).String()+"/"+c.Name)
	}
	return x
}

// PodOf returns the pod of a container, by sandbox and then by UID.
func (x Index) PodOf(c engine.Container) Pod {
	if p, ok := x.BySandbox[c.PodSandboxID]; ok {
		return p
	}
	if p, ok := x.ByUID[c.PodUID]; ok {
		return p
	}
	return Pod{UID: c.PodUID}
}

// IsSandboxImage reports whether the image is a sandbox (pause) image: by
// ID or by any of its tags, or matched as engine.IsSandboxImage matches
// (digest, normalised name) for an image of the snapshot.
func (x Index) IsSandboxImage(im engine.Image) bool {
	if x.Sandbox[im.ID] {
		return true
	}
	for _, t := range im.RepoTags {
		if x.Sandbox[t] {
			return true
		}
	}
	return false
}

// ImageName is an image's first repo:tag, else its first digest, else its
// short ID.
func ImageName(im engine.Image) string {
	switch {
	case len(im.RepoTags) > 0:
		return im.RepoTags[0]
	case len(im.RepoDigests) > 0:
		return im.RepoDigests[0]
	}
	return human.ShortID(im.ID)
}
