package simnode

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime identity a Node reports in Version unless Options override it.
const (
	DefaultRuntimeName    = "simnode"
	DefaultRuntimeVersion = "v1.6.0-sim"
	DefaultSandboxImage   = "registry.k8s.io/pause:3.6"
	DefaultMountpoint     = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs"
	DefaultPodLogsDir     = "/var/log/pods"
)

// ImageFsInfoKey is the key of the runtime's verbose Status info under
// which a Node publishes its whole simulated image filesystem as FsStats
// JSON. A simulated filesystem cannot be measured with statfs, so a
// program that talks to the node over its socket reads it from here
// (ImageFsFromInfo) and hands the engine a Statfs that does; nodegc's CRI
// adapter and engine know nothing of it. The key also marks the runtime as
// simulated: nodegc treats a runtime as simulated only when told so
// (--simulated), and refuses a runtime whose mark disagrees with the flag.
const ImageFsInfoKey = "nodegc.simnode/imageFs"

// DefaultStart is the clock of a Node whose Options leave Start unset.
var DefaultStart = time.Date(2025, time.June, 1, 12, 0, 0, 0, time.UTC)

const (
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// Options configure a Node. A zero field takes its default; the zero
// Options give a node with only its sandbox image.
type Options struct {
	// Seed makes the node reproducible: the same Options give the same
	// images, pods, containers, IDs and timestamps.
	Seed int64
	// Start is the node's clock when it is created; everything generated
	// is older. Zero means DefaultStart.
	Start time.Time
	// Now, when set, stamps the objects created through the gRPC API (a
	// crictl runp, a pull). Nil means the node's logical clock: Start,
	// then the time given to the last Step.
	Now func() time.Time

	// Images is the number of images besides the sandbox image. Running
	// containers use only the first half of them, so the rest are unused.
	Images int
	// Pods is the number of running pods (READY sandboxes).
	Pods int
	// ContainersPerPod is the number of containers in each pod (default 1).
	ContainersPerPod int
	// DeadPerContainer is the number of exited earlier attempts kept for
	// each container of each pod, running or deleted.
	DeadPerContainer int
	// DeletedPods are pods deleted from the API server whose NOTREADY
	// sandbox and exited containers remain on the node. RemovablePods
	// lists them.
	DeletedPods int
	// StaleSandboxes is the number of running pods that also keep an
	// older NOTREADY sandbox (attempt 0) with no containers.
	StaleSandboxes int

	// MinImageBytes and MaxImageBytes bound the size of generated images,
	// drawn log-uniformly (defaults 5 MiB and 500 MiB).
	MinImageBytes, MaxImageBytes int64
	// CapacityBytes is the image filesystem's size. Zero sizes it so that
	// the initial usage is InitialUsagePercent, and at least 1 GiB.
	CapacityBytes int64
	// InitialUsagePercent is used only when CapacityBytes is zero
	// (default 70).
	InitialUsagePercent int
	// BaseUsageBytes is what the image filesystem holds besides images.
	BaseUsageBytes int64
	// Mountpoint is the image filesystem's mountpoint (default
	// DefaultMountpoint).
	Mountpoint string
	// PodLogsDir is the kubelet's podLogsDir the generated log paths live
	// in (default DefaultPodLogsDir).
	PodLogsDir string

	// SandboxImage is the configured sandbox image (default
	// DefaultSandboxImage). It is reported in the verbose Status "config"
	// as containerd does, and every sandbox runs it.
	SandboxImage string
	// PinSandboxImage pins the sandbox image as containerd 1.7 and later
	// do. By default it is not pinned, as in containerd 1.6.
	PinSandboxImage bool
	// RuntimeName and RuntimeVersion are reported by Version (defaults
	// DefaultRuntimeName and DefaultRuntimeVersion).
	RuntimeName, RuntimeVersion string
	// Unmarked leaves ImageFsInfoKey out of the verbose Status info, so
	// the node no longer says it is simulated: tests use it to check that
	// nodegc's --simulated is refused on a runtime that is not one.
	Unmarked bool

	// Workload is what each Step does; the zero Workload only advances
	// the clock.
	Workload Workload
}

// Workload drives Step: each probability is per step, so a Step every
// second gives rates per second.
type Workload struct {
	// PullProbability is the chance a new image is pulled.
	PullProbability float64
	// PullMinBytes and PullMaxBytes bound the size of pulled images
	// (defaults Options.MinImageBytes and MaxImageBytes).
	PullMinBytes, PullMaxBytes int64
	// DieProbability is the chance each running container of a live pod
	// dies; the kubelet restarts it at once as a new attempt.
	DieProbability float64
	// PodStartProbability is the chance a new pod starts. New pods
	// prefer the most recently pulled images, which then come into use.
	PodStartProbability float64
	// PodDeleteProbability is the chance a live pod is deleted: its
	// containers exit, its sandbox stops, and it becomes removable.
	PodDeleteProbability float64
	// GrowthBytes is written to the image filesystem each step besides
	// images (container layers, logs), up to its capacity.
	GrowthBytes int64
}

// FsStats is the simulated image filesystem, published under
// ImageFsInfoKey. Its JSON is that of nodegc's engine.FsStats.
type FsStats struct {
	Mountpoint     string `json:"mountpoint"`
	CapacityBytes  int64  `json:"capacityBytes"`
	AvailableBytes int64  `json:"availableBytes"`
	UsedBytes      int64  `json:"usedBytes"`
	Inodes         int64  `json:"inodes"`
	InodesFree     int64  `json:"inodesFree"`
}

// Node is a simulated node: an in-memory CRI runtime with a workload
// generator and fault injection. It is safe for concurrent use.
type Node struct {
	o Options

	mu         sync.Mutex
	rng        *rand.Rand
	clock      time.Time
	lastStamp  int64
	images     table[*image]
	refs       map[string]*image // every tag, digest and ID (with and without "sha256:")
	sandboxes  table[*sandbox]
	containers table[*container]
	deleted    []string        // pod UIDs the workload deleted, in order
	deletedSet map[string]bool // the same, as a set
	imageBytes int64
	growth     int64
	pulled     []*image // images the workload pulled, newest last
	nextPull   int

	ctl    serving
	events eventHub // the open GetContainerEvents streams (events.go)
}

// serving is the gRPC side of a Node: the server, its listener, the live
// connections, recorded calls and injected faults.
type serving struct {
	mu      sync.Mutex
	cond    *sync.Cond
	srv     *grpc.Server
	lis     netListener // the listener Serve is accepting on
	next    netListener // the listener Up opened for Serve to take
	addr    string
	conns   map[*trackedConn]struct{}
	stopped bool
	down    bool

	done     chan struct{} // closed when Serve returns (Start only)
	serveErr error         // what Serve returned (Start only)

	calls   []string
	faults  []*Fault
	latency time.Duration
	// mutating delays the calls IsMutating names (SetMutatingLatency).
	mutating time.Duration
}

// New builds a node from the options. It is deterministic in the options.
func New(o Options) *Node {
	o = withDefaults(o)
	n := &Node{
		o:          o,
		rng:        rand.New(rand.NewPCG(uint64(o.Seed), 0x9e3779b97f4a7c15)),
		clock:      o.Start,
		refs:       make(map[string]*image, 3*(o.Images+1)),
		deletedSet: make(map[string]bool),
	}
	n.images.init(o.Images + 1)
	per := o.ContainersPerPod * (o.DeadPerContainer + 1)
	n.sandboxes.init(o.Pods + o.DeletedPods + o.StaleSandboxes)
	n.containers.init((o.Pods + o.DeletedPods) * per)
	n.ctl.cond = sync.NewCond(&n.ctl.mu)
	n.ctl.conns = make(map[*trackedConn]struct{})
	n.generate()
	if o.CapacityBytes == 0 {
		used := n.usedBytes()
		capacity := max(used*100/int64(o.InitialUsagePercent), gib)
		n.o.CapacityBytes = (capacity + mib - 1) / mib * mib
	}
	return n
}

func withDefaults(o Options) Options {
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	if o.ContainersPerPod <= 0 {
		o.ContainersPerPod = 1
	}
	if o.MinImageBytes <= 0 {
		o.MinImageBytes = 5 * mib
	}
	if o.MaxImageBytes < o.MinImageBytes {
		o.MaxImageBytes = max(500*mib, o.MinImageBytes)
	}
	if o.Workload.PullMinBytes <= 0 {
		o.Workload.PullMinBytes = o.MinImageBytes
	}
	if o.Workload.PullMaxBytes < o.Workload.PullMinBytes {
		o.Workload.PullMaxBytes = max(o.MaxImageBytes, o.Workload.PullMinBytes)
	}
	if o.InitialUsagePercent <= 0 || o.InitialUsagePercent > 100 {
		o.InitialUsagePercent = 70
	}
	if o.Mountpoint == "" {
		o.Mountpoint = DefaultMountpoint
	}
	if o.PodLogsDir == "" {
		o.PodLogsDir = DefaultPodLogsDir
	}
	if o.SandboxImage == "" {
		o.SandboxImage = DefaultSandboxImage
	}
	if o.RuntimeName == "" {
		o.RuntimeName = DefaultRuntimeName
	}
	if o.RuntimeVersion == "" {
		o.RuntimeVersion = DefaultRuntimeVersion
	}
	return o
}

// Options returns the node's effective options: the defaults filled in
// and CapacityBytes computed.
func (n *Node) Options() Options { return n.o }

// Now returns the node's clock: Options.Now if set, else the logical clock.
func (n *Node) Now() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.now()
}

func (n *Node) now() time.Time {
	if n.o.Now != nil {
		return n.o.Now()
	}
	return n.clock
}

// stamp returns the clock in nanoseconds, strictly increasing from call to
// call so that objects created at the same instant still have an order.
func (n *Node) stamp() int64 {
	t := n.now().UnixNano()
	if t <= n.lastStamp {
		t = n.lastStamp + 1
	}
	n.lastStamp = t
	return t
}

// FsStats returns the simulated image filesystem.
func (n *Node) FsStats() FsStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fsStats()
}

func (n *Node) usedBytes() int64 { return n.o.BaseUsageBytes + n.growth + n.imageBytes }

// ImageFs returns the simulated image filesystem: what statfs would say
// of it. A program that runs an engine against the node in-process
// measures the image filesystem with it (engine.Options.Statfs), since
// there is nothing on disk to statfs.
func (n *Node) ImageFs() FsStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fsStats()
}

// ImageFsFromInfo reads the simulated image filesystem from a runtime's
// verbose Status info (ImageFsInfoKey). ok is false for a runtime that is
// not a simulated node. nodegc, talking to a node in another process
// (nodegc simnode) with --simulated, measures its image filesystem
// through it; it also checks with it that the runtime is what --simulated
// says.
func ImageFsFromInfo(info map[string]string) (fs FsStats, ok bool, err error) {
	raw, ok := info[ImageFsInfoKey]
	if !ok {
		return FsStats{}, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &fs); err != nil {
		return FsStats{}, true, fmt.Errorf("simulated image filesystem: %w", err)
	}
	return fs, true, nil
}

func (n *Node) fsStats() FsStats {
	used := min(n.usedBytes(), n.o.CapacityBytes)
	inodes := max(n.o.CapacityBytes/(16<<10), 1024)
	inodesUsed := min(n.inodesUsed(), inodes)
	return FsStats{
		Mountpoint:     n.o.Mountpoint,
		CapacityBytes:  n.o.CapacityBytes,
		AvailableBytes: n.o.CapacityBytes - used,
		UsedBytes:      used,
		Inodes:         inodes,
		InodesFree:     inodes - inodesUsed,
	}
}

func (n *Node) inodesUsed() int64 { return 1000 + n.usedBytes()/(64<<10) }

// RemovablePods returns the UIDs of the pods the workload (or Options.
// DeletedPods) deleted that still have a sandbox or a container on the
// node, in deletion order. It stands in for the API server: these are the
// pods the kubelet would find removable.
func (n *Node) RemovablePods() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	present := make(map[string]bool, len(n.deleted))
	for s := range n.sandboxes.all() {
		if n.deletedSet[s.uid] {
			present[s.uid] = true
		}
	}
	for c := range n.containers.all() {
		if n.deletedSet[c.uid] {
			present[c.uid] = true
		}
	}
	out := make([]string, 0, len(present))
	for _, uid := range n.deleted {
		if present[uid] {
			out = append(out, uid)
		}
	}
	return out
}

// Counts is a summary of what a node holds.
type Counts struct {
	Images, Sandboxes, ReadySandboxes    int
	Containers, Running, Exited, Unknown int
}

// Counts counts the node's objects.
func (n *Node) Counts() Counts {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := Counts{Images: n.images.len(), Sandboxes: n.sandboxes.len(), Containers: n.containers.len()}
	for s := range n.sandboxes.all() {
		if s.ready {
			c.ReadySandboxes++
		}
	}
	for k := range n.containers.all() {
		switch k.state {
		case runtimeapi.ContainerState_CONTAINER_RUNNING:
			c.Running++
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			c.Exited++
		case runtimeapi.ContainerState_CONTAINER_UNKNOWN:
			c.Unknown++
		}
	}
	return c
}

// SetContainerUnknown puts a container in CONTAINER_UNKNOWN, as a runtime
// does when it lost track of the process, so tests can exercise the
// stop-before-remove rule. It reports whether the container exists.
func (n *Node) SetContainerUnknown(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.containers.get(id)
	if !ok {
		return false
	}
	c.state = runtimeapi.ContainerState_CONTAINER_UNKNOWN
	c.build()
	return true
}

// hexID returns 64 random hex digits, like a containerd ID.
func (n *Node) hexID() string {
	var b [32]byte
	for i := range 4 {
		binary.LittleEndian.PutUint64(b[i*8:], n.rng.Uint64())
	}
	return hex.EncodeToString(b[:])
}

// podUID returns a random version-4 UUID, like a pod UID.
func (n *Node) podUID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], n.rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], n.rng.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// logUniform draws a size between lo and hi, log-uniformly, so that small
// images are common and large ones rare.
func (n *Node) logUniform(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	return int64(math.Exp(l + n.rng.Float64()*(h-l)))
}

// between returns a duration in [lo, hi).
func (n *Node) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(n.rng.Int64N(int64(hi-lo)))
}

func (n *Node) String() string {
	c := n.Counts()
	return fmt.Sprintf("simnode: %d images, %d sandboxes, %d containers (%d running)", c.Images, c.Sandboxes, c.Containers, c.Running)
}
