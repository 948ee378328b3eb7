package simnode

import (
	"fmt"
	"iter"
	"maps"
	"path"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels the kubelet puts on sandboxes and containers; the engine reads
// the pod UID and the container name from them.
const (
	labelPodUID        = "io.kubernetes.pod.uid"
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelContainerName = "io.kubernetes.container.name"
)

// row is a stored object: it knows its ID and whether it was removed.
type row interface {
	key() string
	removed() bool
	markRemoved()
}

// table keeps objects by ID and in creation order, so listings are
// deterministic. Removal is O(1); the order slice is compacted when half
// of it is removed.
type table[T row] struct {
	byID  map[string]T
	order []T
	dead  int
}

func (t *table[T]) init(capacity int) {
	t.byID = make(map[string]T, capacity)
	t.order = make([]T, 0, capacity)
}

func (t *table[T]) add(v T) {
	t.byID[v.key()] = v
	t.order = append(t.order, v)
}

func (t *table[T]) get(id string) (T, bool) {
	v, ok := t.byID[id]
	return v, ok
}

func (t *table[T]) len() int { return len(t.byID) }

func (t *table[T]) remove(v T) {
	if v.removed() {
		return
	}
	delete(t.byID, v.key())
	v.markRemoved()
	t.dead++
	if t.dead > 256 && 2*t.dead > len(t.order) {
		live := t.order[:0]
		for _, x := range t.order {
			if !x.removed() {
				live = append(live, x)
			}
		}
		clear(t.order[len(live):])
		t.order = live
		t.dead = 0
	}
}

// all yields the live objects in creation order.
func (t *table[T]) all() iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, v := range t.order {
			if !v.removed() && !yield(v) {
				return
			}
		}
	}
}

type image struct {
	id      string
	tags    []string
	digests []string
	size    int64
	pinned  bool
	gone    bool
	msg     *runtimeapi.Image
}

func (i *image) key() string   { return i.id }
func (i *image) removed() bool { return i.gone }
func (i *image) markRemoved()  { i.gone = true }

func (i *image) build() {
	i.msg = &runtimeapi.Image{
		Id:          i.id,
		RepoTags:    i.tags,
		RepoDigests: i.digests,
		Size:        uint64(i.size),
		Pinned:      i.pinned,
	}
}

// spec is how containers name the image: its first tag, else its first
// digest, else its ID.
func (i *image) spec() string {
	switch {
	case len(i.tags) > 0:
		return i.tags[0]
	case len(i.digests) > 0:
		return i.digests[0]
	}
	return i.id
}

type sandbox struct {
	id          string
	uid         string
	name        string
	namespace   string
	attempt     uint32
	ready       bool
	createdAt   int64
	image       string
	logDir      string
	labels      map[string]string
	annotations map[string]string
	containers  []*container
	gone        bool
	msg         *runtimeapi.PodSandbox
}

func (s *sandbox) key() string   { return s.id }
func (s *sandbox) removed() bool { return s.gone }
func (s *sandbox) markRemoved()  { s.gone = true }

func (s *sandbox) state() runtimeapi.PodSandboxState {
	if s.ready {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

func (s *sandbox) metadata() *runtimeapi.PodSandboxMetadata {
	return &runtimeapi.PodSandboxMetadata{Name: s.name, Uid: s.uid, Namespace: s.namespace, Attempt: s.attempt}
}

func (s *sandbox) build() {
	s.msg = &runtimeapi.PodSandbox{
		Id:          s.id,
		Metadata:    s.metadata(),
		State:       s.state(),
		CreatedAt:   s.createdAt,
		Labels:      s.labels,
		Annotations: s.annotations,
	}
}

// live returns the sandbox's containers that were not removed, and drops
// the removed ones from its list so a crash-looping pod does not grow it.
func (s *sandbox) live() []*container {
	out := s.containers[:0]
	for _, c := range s.containers {
		if !c.gone {
			out = append(out, c)
		}
	}
	clear(s.containers[len(out):])
	s.containers = out
	return out
}

type container struct {
	id          string
	sandboxID   string
	uid         string
	name        string
	attempt     uint32
	spec        *runtimeapi.ImageSpec
	imageID     string
	state       runtimeapi.ContainerState
	createdAt   int64
	startedAt   int64
	finishedAt  int64
	exitCode    int32
	logPath     string
	labels      map[string]string
	annotations map[string]string
	gone        bool
	msg         *runtimeapi.Container
}

func (c *container) key() string   { return c.id }
func (c *container) removed() bool { return c.gone }
func (c *container) markRemoved()  { c.gone = true }

func (c *container) build() {
	c.msg = &runtimeapi.Container{
		Id:           c.id,
		PodSandboxId: c.sandboxID,
		Metadata:     &runtimeapi.ContainerMetadata{Name: c.name, Attempt: c.attempt},
		Image:        c.spec,
		ImageRef:     c.imageID,
		State:        c.state,
		CreatedAt:    c.createdAt,
		Labels:       c.labels,
		Annotations:  c.annotations,
	}
}

func (c *container) status() *runtimeapi.ContainerStatus {
	reason := ""
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		reason = "Completed"
		if c.exitCode != 0 {
			reason = "Error"
		}
	}
	return &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.name, Attempt: c.attempt},
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       c.spec,
		ImageRef:    c.imageID,
		Reason:      reason,
		Labels:      c.labels,
		Annotations: c.annotations,
		LogPath:     c.logPath,
	}
}

// Names the generator draws from.
var (
	repositories = []string{
		"docker.io/library/nginx", "docker.io/library/redis", "docker.io/library/postgres",
		"docker.io/library/busybox", "docker.io/library/alpine", "docker.io/library/python",
		"docker.io/library/golang", "docker.io/library/node", "docker.io/library/mysql",
		"docker.io/library/rabbitmq", "docker.io/library/memcached", "docker.io/library/httpd",
		"quay.io/prometheus/prometheus", "quay.io/prometheus/node-exporter",
		"registry.k8s.io/kube-proxy", "registry.k8s.io/coredns/coredns",
		"docker.io/grafana/grafana", "docker.io/bitnami/kafka", "docker.io/fluent/fluent-bit",
		"docker.io/istio/proxyv2", "quay.io/jetstack/cert-manager-controller",
		"quay.io/cilium/cilium", "ghcr.io/acme/api", "ghcr.io/acme/worker",
		"ghcr.io/acme/frontend", "ghcr.io/acme/billing", "ghcr.io/acme/search",
		"ghcr.io/acme/auth", "ghcr.io/acme/ledger", "ghcr.io/acme/notifier",
	}
	apps       = []string{"api", "worker", "frontend", "billing", "search", "auth", "ledger", "notifier", "cache", "gateway"}
	namespaces = []string{"default", "payments", "web", "monitoring", "kube-system"}
	ctrNames   = []string{"app", "sidecar", "proxy", "agent", "exporter", "shipper"}
)

// newImage makes an image with the given references and size and indexes
// it. It does not draw from the random source.
func (n *Node) newImage(id string, tags, digests []string, size int64, pinned bool) *image {
	im := &image{id: id, tags: tags, digests: digests, size: size, pinned: pinned}
	im.build()
	n.images.add(im)
	n.imageBytes += size
	n.refs[id] = im
	n.refs[strings.TrimPrefix(id, "sha256:")] = im
	for _, r := range tags {
		n.refs[r] = im
	}
	for _, r := range digests {
		n.refs[r] = im
	}
	return im
}

// dropImage removes an image and frees its size at once.
func (n *Node) dropImage(im *image) {
	n.images.remove(im)
	n.imageBytes -= im.size
	for _, r := range append(append([]string{im.id, strings.TrimPrefix(im.id, "sha256:")}, im.tags...), im.digests...) {
		if n.refs[r] == im {
			delete(n.refs, r)
		}
	}
}

// generatedImage draws the image number i of the catalogue. One in twenty
// is dangling: no tag, only a digest.
func (n *Node) generatedImage(i int, lo, hi int64) *image {
	repo := repositories[i%len(repositories)]
	round := i / len(repositories)
	id := "sha256:" + n.hexID()
	digest := repo + "@sha256:" + n.hexID()
	size := n.logUniform(lo, hi)
	var tags []string
	if n.rng.IntN(20) != 0 {
		tags = []string{repo + ":v" + strconv.Itoa(1+round/100) + "." + strconv.Itoa(round%100) + "." + strconv.Itoa(i%7)}
	}
	return n.newImage(id, tags, []string{digest}, size, false)
}

// sandboxImage returns the configured sandbox image, pulling it if absent.
func (n *Node) sandboxImage() *image {
	if im, ok := n.refs[n.o.SandboxImage]; ok {
		return im
	}
	repo, _, _ := strings.Cut(n.o.SandboxImage, ":")
	id := "sha256:" + n.hexID()
	return n.newImage(id, []string{n.o.SandboxImage}, []string{repo + "@sha256:" + n.hexID()}, 301_773, n.o.PinSandboxImage)
}

// podSpec is what the generator knows about a pod before it exists.
type podSpec struct {
	uid, name, namespace string
	attempt              uint32
	ready                bool
	createdAt            time.Time
}

// newSandbox stores a sandbox with the kubelet's labels.
func (n *Node) newSandbox(p podSpec) *sandbox {
	s := &sandbox{
		id:        n.hexID(),
		uid:       p.uid,
		name:      p.name,
		namespace: p.namespace,
		attempt:   p.attempt,
		ready:     p.ready,
		createdAt: p.createdAt.UnixNano(),
		image:     n.o.SandboxImage,
		logDir:    path.Join(n.o.PodLogsDir, p.namespace+"_"+p.name+"_"+p.uid),
		labels: map[string]string{
			labelPodUID:       p.uid,
			labelPodName:      p.name,
			labelPodNamespace: p.namespace,
			"app":             strings.SplitN(p.name, "-", 2)[0],
		},
	}
	s.build()
	n.sandboxes.add(s)
	return s
}

// unit is the state shared by the attempts of one container of one pod
// (the kubelet's evict unit): its labels and image do not change.
type unit struct {
	s           *sandbox
	name        string
	imageID     string
	spec        *runtimeapi.ImageSpec
	labels      map[string]string
	annotations map[string]string
}

func (n *Node) newUnit(s *sandbox, name string, im *image) *unit {
	return &unit{
		s:       s,
		name:    name,
		imageID: im.id,
		spec:    &runtimeapi.ImageSpec{Image: im.spec()},
		labels: map[string]string{
			labelContainerName: name,
			labelPodName:       s.name,
			labelPodNamespace:  s.namespace,
			labelPodUID:        s.uid,
		},
		annotations: map[string]string{
			"io.kubernetes.container.hash":                   fmt.Sprintf("%08x", n.rng.Uint32()),
			"io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
		},
	}
}

// newContainer stores one attempt of a unit.
func (n *Node) newContainer(u *unit, attempt uint32, state runtimeapi.ContainerState, created, finished int64, exitCode int32) *container {
	c := &container{
		id:          n.hexID(),
		sandboxID:   u.s.id,
		uid:         u.s.uid,
		name:        u.name,
		attempt:     attempt,
		spec:        u.spec,
		imageID:     u.imageID,
		state:       state,
		createdAt:   created,
		startedAt:   created + int64(300*time.Millisecond),
		finishedAt:  finished,
		exitCode:    exitCode,
		logPath:     path.Join(u.s.logDir, u.name, strconv.Itoa(int(attempt))+".log"),
		labels:      u.labels,
		annotations: u.annotations,
	}
	c.build()
	n.containers.add(c)
	u.s.containers = append(u.s.containers, c)
	n.emit(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, c)
	if state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		n.emit(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, c)
	}
	return c
}

// generate builds the initial node from the options.
func (n *Node) generate() {
	o := n.o
	n.sandboxImage()
	catalogue := make([]*image, o.Images)
	for i := range catalogue {
		catalogue[i] = n.generatedImage(i, o.MinImageBytes, o.MaxImageBytes)
	}
	n.nextPull = o.Images
	active := catalogue[:(len(catalogue)+1)/2]
	for p := range o.Pods + o.DeletedPods {
		n.generatePod(p, p >= o.Pods, p < o.StaleSandboxes, active)
	}
}

// generatePod makes one pod with its attempts laid out over its life:
// DeadPerContainer exited attempts, then a running one (or, for a deleted
// pod, an exited one and a NOTREADY sandbox).
func (n *Node) generatePod(p int, deleted, stale bool, active []*image) {
	o := n.o
	app := apps[p%len(apps)]
	spec := podSpec{
		uid:       n.podUID(),
		name:      fmt.Sprintf("%s-%d-%s", app, p, n.hexID()[:5]),
		namespace: namespaces[n.rng.IntN(len(namespaces))],
		ready:     !deleted,
	}
	age := n.between(2*time.Hour, 10*24*time.Hour)
	spec.createdAt = o.Start.Add(-age)
	if stale {
		old := spec
		old.ready = false
		old.createdAt = spec.createdAt.Add(-n.between(time.Hour, 24*time.Hour))
		n.newSandbox(old)
		spec.attempt = 1
	}
	s := n.newSandbox(spec)
	span := age / time.Duration(o.DeadPerContainer+2)
	for j := range o.ContainersPerPod {
		var im *image
		if len(active) > 0 {
			im = active[n.rng.IntN(len(active))]
		} else {
			im = n.sandboxImage()
		}
		name := ctrNames[j%len(ctrNames)]
		if j >= len(ctrNames) {
			name += strconv.Itoa(j)
		}
		u := n.newUnit(s, name, im)
		base := spec.createdAt.Add(time.Second + time.Duration(j)*time.Millisecond)
		for a := range o.DeadPerContainer + 1 {
			created := base.Add(time.Duration(a) * span)
			last := a == o.DeadPerContainer
			if last && !deleted {
				n.newContainer(u, uint32(a), runtimeapi.ContainerState_CONTAINER_RUNNING, created.UnixNano(), 0, 0)
				continue
			}
			finished := created.Add(span / 2)
			code := int32(1)
			if a%3 == 2 || (last && deleted) {
				code = 137
			}
			n.newContainer(u, uint32(a), runtimeapi.ContainerState_CONTAINER_EXITED, created.UnixNano(), finished.UnixNano(), code)
		}
	}
	if deleted {
		n.markDeleted(spec.uid)
	}
}

func (n *Node) markDeleted(uid string) {
	if !n.deletedSet[uid] {
		n.deletedSet[uid] = true
		n.deleted = append(n.deleted, uid)
	}
}

// copyMap copies a map from a request, so the caller's later changes do
// not reach the node.
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
