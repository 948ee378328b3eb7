package main

// snapshotJSON is a small NodeSnapshot taken at 2026-01-02T15:00:00Z: an
// image filesystem at 90% (so 100 bytes to free down to 80%), two unused
// images old enough to go, one too young, one in use, the sandbox image,
// and one pod with a running container and two dead attempts of it.
const snapshotJSON = `{
  "apiVersion": "nodegc/v1",
  "kind": "NodeSnapshot",
  "takenAt": "2026-01-02T15:00:00Z",
  "runtime": {"name": "containerd", "version": "1.6.20", "endpoint": "unix:///run/containerd/containerd.sock",
              "sandboxImages": ["registry.k8s.io/pause:3.6"]},
  "imageFs": {"mountpoint": "/var/lib/containerd", "capacityBytes": 1000, "availableBytes": 100,
              "usedBytes": 900, "inodes": 1000, "inodesFree": 500},
  "images": [
    {"id": "sha256:aaaa000000000000000000000000000000000000000000000000000000000001", "repoTags": ["old:1"], "repoDigests": [], "sizeBytes": 60, "pinned": false},
    {"id": "sha256:bbbb000000000000000000000000000000000000000000000000000000000002", "repoTags": ["idle:2"], "repoDigests": [], "sizeBytes": 50, "pinned": false},
    {"id": "sha256:cccc000000000000000000000000000000000000000000000000000000000003", "repoTags": ["nginx:1.25"], "repoDigests": [], "sizeBytes": 30, "pinned": false},
    {"id": "sha256:dddd000000000000000000000000000000000000000000000000000000000004", "repoTags": ["registry.k8s.io/pause:3.6"], "repoDigests": [], "sizeBytes": 1, "pinned": false},
    {"id": "sha256:eeee000000000000000000000000000000000000000000000000000000000005", "repoTags": ["new:5"], "repoDigests": [], "sizeBytes": 10, "pinned": false}
  ],
  "imageRecords": [
    {"id": "sha256:aaaa000000000000000000000000000000000000000000000000000000000001", "firstDetected": "2026-01-02T12:00:00Z"},
    {"id": "sha256:bbbb000000000000000000000000000000000000000000000000000000000002", "firstDetected": "2026-01-01T12:00:00Z", "lastUsed": "2026-01-02T14:00:00Z"},
    {"id": "sha256:cccc000000000000000000000000000000000000000000000000000000000003", "firstDetected": "2026-01-01T12:00:00Z", "lastUsed": "2026-01-02T15:00:00Z"},
    {"id": "sha256:dddd000000000000000000000000000000000000000000000000000000000004", "firstDetected": "2026-01-01T12:00:00Z", "lastUsed": "2026-01-02T15:00:00Z"}
  ],
  "sandboxes": [
    {"id": "s1", "podUID": "u1", "podName": "web", "podNamespace": "default", "attempt": 0,
     "state": "SANDBOX_READY", "createdAt": "2026-01-02T10:00:00Z"}
  ],
  "containers": [
    {"id": "c1", "podSandboxId": "s1", "podUID": "u1", "name": "nginx", "attempt": 2,
     "imageId": "sha256:cccc000000000000000000000000000000000000000000000000000000000003", "imageRef": "nginx:1.25",
     "state": "CONTAINER_RUNNING", "createdAt": "2026-01-02T14:00:00Z", "exitCode": 0},
    {"id": "c2", "podSandboxId": "s1", "podUID": "u1", "name": "nginx", "attempt": 0,
     "imageId": "sha256:cccc000000000000000000000000000000000000000000000000000000000003", "imageRef": "nginx:1.25",
     "state": "CONTAINER_EXITED", "createdAt": "2026-01-02T10:00:00Z", "finishedAt": "2026-01-02T11:00:00Z", "exitCode": 1},
    {"id": "c3", "podSandboxId": "s1", "podUID": "u1", "name": "nginx", "attempt": 1,
     "imageId": "sha256:cccc000000000000000000000000000000000000000000000000000000000003", "imageRef": "nginx:1.25",
     "state": "CONTAINER_EXITED", "createdAt": "2026-01-02T12:00:00Z", "finishedAt": "2026-01-02T13:00:00Z", "exitCode": 1}
  ],
  "podSource": {"ready": false, "removablePodUIDs": []}
}
`

// Image IDs of snapshotJSON.
const (
	idOld   = "sha256:aaaa000000000000000000000000000000000000000000000000000000000001"
	idIdle  = "sha256:bbbb000000000000000000000000000000000000000000000000000000000002"
	idNginx = "sha256:cccc000000000000000000000000000000000000000000000000000000000003"
	idPause = "sha256:dddd000000000000000000000000000000000000000000000000000000000004"
	idNew   = "sha256:eeee000000000000000000000000000000000000000000000000000000000005"
)
