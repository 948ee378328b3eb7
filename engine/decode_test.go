package engine

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
)

func TestDecodeSnapshotAcceptsTheContract(t *testing.T) {
	s, err := DecodeSnapshot([]byte(nodetest.ValidSnapshotJSON))
	if err != nil {
		t.Fatalf("DecodeSnapshot: %v", err)
	}
	lastUsed := time.Date(2025, 3, 1, 11, 0, 0, 5e8, time.UTC)
	finished := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	want := Snapshot{
		APIVersion: APIVersion, Kind: KindSnapshot, TakenAt: nodetest.T0,
		Runtime: RuntimeInfo{Name: "containerd", Version: "1.7.24", Endpoint: "unix:///run/containerd/containerd.sock", SandboxImages: []string{"registry.k8s.io/pause:3.9"}},
		ImageFs: FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: 1000, AvailableBytes: 0, UsedBytes: 1000, Inodes: 10, InodesFree: 5},
		Images: []Image{
			{ID: "sha256:a", RepoTags: []string{"a:1"}, RepoDigests: []string{}, SizeBytes: 100},
			{ID: "sha256:b", SizeBytes: 50, Pinned: true},
		},
		ImageRecords: []ImageRecord{{ID: "sha256:a", FirstDetected: nodetest.Ago(2 * time.Hour), LastUsed: &lastUsed}},
		Sandboxes:    []Sandbox{{ID: "sb1", PodUID: "u1", PodName: "web", PodNamespace: "shop", State: SandboxNotReady, CreatedAt: nodetest.Ago(3 * time.Hour)}},
		Containers: []Container{{ID: "c1", PodSandboxID: "sb1", PodUID: "u1", Name: "web", Attempt: 2, ImageID: "sha256:a", ImageRef: "a:1",
			State: ContainerExited, CreatedAt: nodetest.Ago(3 * time.Hour), FinishedAt: &finished, ExitCode: 137}},
		PodSource: PodSource{Ready: true, RemovablePodUIDs: []string{"u9"}},
	}
	t.Run("a snapshot that follows the contract decodes field for field, ignoring unknown fields", func(t *testing.T) {
		if !reflect.DeepEqual(s, want) {
			t.Errorf("got  %+v\nwant %+v", s, want)
		}
	})
	t.Run("a decoded snapshot validates", func(t *testing.T) {
		if err := s.Validate(); err != nil {
			t.Errorf("Validate: %v", err)
		}
	})
	t.Run("a snapshot survives a JSON round trip", func(t *testing.T) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeSnapshot(b)
		if err != nil {
			t.Fatalf("DecodeSnapshot(Marshal(s)): %v", err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Errorf("round trip changed the snapshot:\n%+v\n%+v", back, s)
		}
	})
}

// mutate decodes nodetest.ValidSnapshotJSON into a generic map, applies f and
// encodes it again.
func mutate(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(nodetest.ValidSnapshotJSON), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func item(m map[string]any, list string, i int) map[string]any {
	return m[list].([]any)[i].(map[string]any)
}

func TestDecodeSnapshotErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  func(t *testing.T) []byte
		want string
	}{
		{
			name: "invalid JSON says where",
			doc:  func(*testing.T) []byte { return []byte(`{"apiVersion": `) },
			want: "snapshot: invalid JSON at byte 15: unexpected end of JSON input",
		},
		{
			name: "a document that is not an object is rejected",
			doc:  func(*testing.T) []byte { return []byte(`[1, 2]`) },
			want: "snapshot: want an object, got array",
		},
		{
			name: "a missing apiVersion is required",
			doc:  func(t *testing.T) []byte { return mutate(t, func(m map[string]any) { delete(m, "apiVersion") }) },
			want: "snapshot: apiVersion: required",
		},
		{
			name: "another apiVersion is rejected",
			doc:  func(t *testing.T) []byte { return mutate(t, func(m map[string]any) { m["apiVersion"] = "nodegc/v2" }) },
			want: `snapshot: apiVersion: want "nodegc/v1", got "nodegc/v2"`,
		},
		{
			name: "another kind is rejected",
			doc:  func(t *testing.T) []byte { return mutate(t, func(m map[string]any) { m["kind"] = "GCPlan" }) },
			want: `snapshot: kind: want "NodeSnapshot", got "GCPlan"`,
		},
		{
			name: "a missing takenAt is required",
			doc:  func(t *testing.T) []byte { return mutate(t, func(m map[string]any) { delete(m, "takenAt") }) },
			want: "snapshot: takenAt: required",
		},
		{
			name: "a takenAt that is not a time names the field",
			doc:  func(t *testing.T) []byte { return mutate(t, func(m map[string]any) { m["takenAt"] = "yesterday" }) },
			want: `snapshot: takenAt: want an RFC 3339 time, got string`,
		},
		{
			name: "a missing imageFs is required",
			doc:  func(t *testing.T) []byte { return mutate(t, func(m map[string]any) { delete(m, "imageFs") }) },
			want: "snapshot: imageFs: required",
		},
		{
			name: "a missing capacity is required, though zero is valid",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { delete(m["imageFs"].(map[string]any), "capacityBytes") })
			},
			want: "snapshot: imageFs.capacityBytes: required",
		},
		{
			name: "a missing available is required",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { delete(m["imageFs"].(map[string]any), "availableBytes") })
			},
			want: "snapshot: imageFs.availableBytes: required",
		},
		{
			name: "a capacity given as a string names the field and both types",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { m["imageFs"].(map[string]any)["capacityBytes"] = "1000" })
			},
			want: "snapshot: imageFs.capacityBytes: want a number, got string",
		},
		{
			name: "a missing image id names the image by index",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { delete(item(m, "images", 1), "id") })
			},
			want: "snapshot: images[1].id: required",
		},
		{
			name: "a duplicate image id names both",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { item(m, "images", 1)["id"] = "sha256:a" })
			},
			want: "snapshot: images[1].id: duplicate of images[0]",
		},
		{
			name: "a negative image size is rejected",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { item(m, "images", 0)["sizeBytes"] = -1 })
			},
			want: "snapshot: images[0].sizeBytes: must not be negative, got -1",
		},
		{
			name: "a wrong type inside a list names the index",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { item(m, "images", 1)["sizeBytes"] = "big" })
			},
			want: "snapshot: images[1].sizeBytes: want a number, got string",
		},
		{
			name: "a wrong element type in a nested list names both indexes",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { item(m, "images", 0)["repoTags"] = []any{"a:1", 7} })
			},
			want: "snapshot: images[0].repoTags[1]: want a string, got number 7",
		},
		{
			name: "a list given as an object names the field",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { m["containers"] = map[string]any{} })
			},
			want: "snapshot: containers: want an array, got object",
		},
		{
			name: "a negative attempt names the field and the value",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { item(m, "containers", 0)["attempt"] = -1 })
			},
			want: "snapshot: containers[0].attempt: want a non-negative integer that fits uint32, got number -1",
		},
		{
			name: "a bool given as a string names the field",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { m["podSource"].(map[string]any)["ready"] = "yes" })
			},
			want: "snapshot: podSource.ready: want true or false, got string",
		},
		{
			name: "an image record without firstDetected is rejected",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { delete(item(m, "imageRecords", 0), "firstDetected") })
			},
			want: "snapshot: imageRecords[0].firstDetected: required",
		},
		{
			name: "a bad lastUsed names the record",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { item(m, "imageRecords", 0)["lastUsed"] = 12 })
			},
			want: "snapshot: imageRecords[0].lastUsed: want an RFC 3339 time, got number 12",
		},
		{
			name: "a missing container id is required",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { delete(item(m, "containers", 0), "id") })
			},
			want: "snapshot: containers[0].id: required",
		},
		{
			name: "a missing container state is required",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { delete(item(m, "containers", 0), "state") })
			},
			want: "snapshot: containers[0].state: required",
		},
		{
			name: "an unknown container state is rejected with its value",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { item(m, "containers", 0)["state"] = "FOO" })
			},
			want: `snapshot: containers[0].state: unknown value "FOO" (want a CONTAINER_ state or CONTAINER_STATE_<n>)`,
		},
		{
			name: "a missing container createdAt is required",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { delete(item(m, "containers", 0), "createdAt") })
			},
			want: "snapshot: containers[0].createdAt: required",
		},
		{
			name: "a bad container createdAt names the field",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { item(m, "containers", 0)["createdAt"] = "2025-13-01" })
			},
			want: "snapshot: containers[0].createdAt: want an RFC 3339 time, got string",
		},
		{
			name: "a missing sandbox id is required",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { delete(item(m, "sandboxes", 0), "id") })
			},
			want: "snapshot: sandboxes[0].id: required",
		},
		{
			name: "an unknown sandbox state is rejected",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { item(m, "sandboxes", 0)["state"] = "READY" })
			},
			want: `snapshot: sandboxes[0].state: unknown value "READY" (want SANDBOX_READY, SANDBOX_NOTREADY or SANDBOX_STATE_<n>)`,
		},
		{
			name: "a missing sandbox state is required",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { delete(item(m, "sandboxes", 0), "state") })
			},
			want: "snapshot: sandboxes[0].state: required",
		},
		{
			name: "a wrong type in an optional section names the field",
			doc: func(t *testing.T) []byte {
				return mutate(t, func(m map[string]any) { m["rootFs"] = map[string]any{"capacityBytes": true} })
			},
			want: "snapshot: rootFs.capacityBytes: want a number, got bool",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeSnapshot(tt.doc(t))
			if err == nil {
				t.Fatalf("DecodeSnapshot succeeded, want %q", tt.want)
			}
			var se *SnapshotError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *SnapshotError", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\nwant    %q", err.Error(), tt.want)
			}
		})
	}
}

func TestSnapshotValidate(t *testing.T) {
	t.Run("a snapshot built in code is checked like a decoded one", func(t *testing.T) {
		s := nodetest.BaseSnapshot()
		s.Containers = []Container{{ID: "c", State: ContainerExited}}
		err := s.Validate()
		var se *SnapshotError
		if !errors.As(err, &se) || se.Field != "containers[0].createdAt" || se.Msg != "required" {
			t.Errorf("Validate = %v, want containers[0].createdAt: required", err)
		}
	})
	t.Run("the base test snapshot is valid", func(t *testing.T) {
		if err := nodetest.BaseSnapshot().Validate(); err != nil {
			t.Errorf("Validate = %v", err)
		}
	})
	t.Run("an error without a field reads as one line", func(t *testing.T) {
		if got := (&SnapshotError{Msg: "x"}).Error(); got != "snapshot: x" || strings.Contains(got, "\n") {
			t.Errorf("Error() = %q", got)
		}
	})
}
