package cgroupfs

// Names resolves the IDs found in cgroup names to what the runtime calls
// them. The caller fills it from a CRI snapshot (sandboxes and containers),
// so this package never talks to the runtime.
type Names interface {
	// Pod returns the namespace and name of the pod with this UID, as its
	// sandbox reports them; ok is false for a pod no sandbox claims.
	Pod(uid string) (namespace, name string, ok bool)
	// Container returns the name of the container with this ID and the UID
	// of its pod; ok is false for a container the runtime does not know.
	Container(id string) (name, podUID string, ok bool)
}

// NameMap is a Names built from lists, for callers that hold a snapshot.
// Register each sandbox with AddPod and also with AddContainer(sandboxID,
// "POD", podUID): the sandbox's pause container has a cgroup of its own,
// named by the sandbox ID. The zero value is empty and ready to use.
type NameMap struct {
	pods       map[string][2]string // uid -> namespace, name
	containers map[string][2]string // id -> name, pod uid
}

// AddPod records the namespace and name of a pod UID.
func (m *NameMap) AddPod(uid, namespace, name string) {
	if m.pods == nil {
		m.pods = make(map[string][2]string)
	}
	m.pods[uid] = [2]string{namespace, name}
}

// AddContainer records the name and pod UID of a container ID.
func (m *NameMap) AddContainer(id, name, podUID string) {
	if m.containers == nil {
		m.containers = make(map[string][2]string)
	}
	m.containers[id] = [2]string{name, podUID}
}

// Pod implements Names.
func (m *NameMap) Pod(uid string) (namespace, name string, ok bool) {
	v, ok := m.pods[uid]
	return v[0], v[1], ok
}

// Container implements Names.
func (m *NameMap) Container(id string) (name, podUID string, ok bool) {
	v, ok := m.containers[id]
	return v[0], v[1], ok
}
