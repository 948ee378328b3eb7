package cri

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
)

// viaGenerated decodes a ListContainersResponse with the generated code and
// converts it with toContainer, the reference for containerList.decode.
func viaGenerated(b []byte) ([]engine.Container, error) {
	var resp runtimeapi.ListContainersResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		return nil, err
	}
	out := make([]engine.Container, 0, len(resp.GetContainers()))
	for _, k := range resp.GetContainers() {
		out = append(out, toContainer(k))
	}
	return out, nil
}

func viaDecoder(b []byte) ([]engine.Container, error) {
	var l containerList
	if err := l.decode(b); err != nil {
		return nil, err
	}
	return l.items, nil
}

// sampleContainers covers what a runtime sends: full and sparse messages,
// every state and an unknown one, image_id set or only image_ref, labels
// with and without the pod UID, annotations, and repeated strings.
func sampleContainers() *runtimeapi.ListContainersResponse {
	full := func(id, sandbox, uid string, st runtimeapi.ContainerState) *runtimeapi.Container {
		return &runtimeapi.Container{
			Id:           id,
			PodSandboxId: sandbox,
			Metadata:     &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3},
			Image:        &runtimeapi.ImageSpec{Image: "docker.io/library/nginx:1.27", Annotations: map[string]string{"a": "b"}, UserSpecifiedImage: "nginx"},
			ImageRef:     "sha256:aaaa",
			ImageId:      "sha256:bbbb",
			State:        st,
			CreatedAt:    1_700_000_000_123_456_789,
			Labels: map[string]string{
				labelPodUID: uid, labelPodName: "web-0", labelPodNamespace: "default", "io.kubernetes.container.name": "app",
			},
			Annotations: map[string]string{"io.kubernetes.container.hash": "abc", "io.kubernetes.container.restartCount": "3"},
		}
	}
	return &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{
		full("c1", "s1", "uid-1", runtimeapi.ContainerState_CONTAINER_RUNNING),
		full("c2", "s1", "uid-1", runtimeapi.ContainerState_CONTAINER_EXITED),
		full("c3", "s2", "ünïcode-uid", runtimeapi.ContainerState_CONTAINER_CREATED),
		full("c4", "s2", "uid-2", runtimeapi.ContainerState_CONTAINER_UNKNOWN),
		full("c5", "s2", "uid-2", runtimeapi.ContainerState(42)),
		{Id: "only-image-ref", ImageRef: "sha256:cccc", CreatedAt: -5},
		{Id: "no-labels", Metadata: &runtimeapi.ContainerMetadata{}, Image: &runtimeapi.ImageSpec{}},
		{Id: "other-labels", Labels: map[string]string{"x": "y"}},
		{},
	}}
}

// msg builds wire bytes from parts.
func msg(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func str(num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
}

func sub(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

func varint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func label(k, v string) []byte { return sub(fieldContainerLabels, msg(str(1, k), str(2, v))) }

func TestDecodeContainersMatchesGeneratedCode(t *testing.T) {
	sample, err := proto.Marshal(sampleContainers())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		wire []byte
	}{
		{"the containers a runtime sends decode as the generated code decodes them", sample},
		{"an empty response is no container", nil},
		{"a later scalar wins over an earlier one", sub(1, msg(str(1, "a"), str(1, "b"), varint(6, 1), varint(6, 2)))},
		{"metadata sent twice is merged", sub(1, msg(
			sub(3, msg(str(1, "name"), varint(2, 7))),
			sub(3, msg(varint(2, 9))),
		))},
		{"image spec sent twice is merged", sub(1, msg(sub(4, str(1, "img:1")), sub(4, str(18, "img")), sub(4, str(1, "img:2"))))},
		{"a later pod UID label wins, an empty one included", sub(1, msg(label(labelPodUID, "u1"), label("x", "y"), label(labelPodUID, "")))},
		{"a label entry without a value is the empty string", sub(1, msg(sub(8, str(1, labelPodUID))))},
		{"a known field of another wire type is skipped as unknown", sub(1, msg(
			varint(fieldContainerID, 5), str(fieldContainerState, "x"), str(1, "real-id"),
		))},
		{"unknown fields and groups are skipped", msg(
			varint(2, 1),
			sub(1, msg(str(99, "x"), varint(100, 1), protowire.AppendTag(nil, 101, protowire.StartGroupType), protowire.AppendTag(nil, 101, protowire.EndGroupType), str(1, "id"))),
		)},
		{"a negative created_at and a 64-bit state value decode as int64 and int32", sub(1, msg(
			varint(7, uint64(1<<64-1)), varint(6, 1<<40|1),
		))},
		{"repeated strings are shared but equal", msg(sample, sample)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := viaGenerated(tt.wire)
			if err != nil {
				t.Fatalf("generated code: %v", err)
			}
			got, err := viaDecoder(tt.wire)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeContainersRejectsWhatTheGeneratedCodeRejects(t *testing.T) {
	tests := []struct {
		name string
		wire []byte
	}{
		{"a truncated message", sub(1, str(1, "abc"))[:5]},
		{"a length beyond the end", msg(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0x7f, 1})},
		{"invalid UTF-8 in a string the engine keeps", sub(1, msg(str(1, "\xff\xfe")))},
		{"invalid UTF-8 in a label", sub(1, label("k", "\xff"))},
		{"a broken metadata message", sub(1, sub(3, []byte{0x0a, 0x05, 'a'}))},
		{"field number zero", []byte{0x02, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := viaGenerated(tt.wire); err == nil {
				t.Fatal("the generated code accepts it: the case tests nothing")
			}
			if got, err := viaDecoder(tt.wire); err == nil {
				t.Errorf("decoded %+v, want an error", got)
			}
		})
	}
}

// FuzzDecodeContainers checks the decoder against the generated code on
// any bytes: what the generated code decodes, the decoder decodes the same;
// what the decoder rejects, the generated code rejects. (The decoder may
// accept more: it does not look into the fields it skips.)
func FuzzDecodeContainers(f *testing.F) {
	// One container per seed: small inputs keep the fuzzer's minimization
	// of each new input short, where one response of many containers held
	// every worker minimizing for up to a minute at a time. The corpus in
	// testdata/fuzz adds single containers from real responses (simnode
	// and the real containerd; see TestFuzzCorpus* and
	// NODEGC_WRITE_CORPUS).
	for _, seed := range SplitContainers(sampleContainers()) {
		f.Add(seed)
	}
	f.Add(sub(1, msg(sub(3, msg(str(1, "n"), varint(2, 7))), sub(3, varint(2, 9)), label(labelPodUID, "u"))))
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := viaGenerated(b)
		got, gerr := viaDecoder(b)
		if gerr != nil && werr == nil {
			t.Fatalf("decoder rejects what the generated code accepts: %v", gerr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded\n got %+v\nwant %+v", got, want)
		}
	})
}

// SplitContainers marshals each container of a ListContainers response as a
// response of its own: fuzz seeds.
func SplitContainers(resp *runtimeapi.ListContainersResponse) [][]byte {
	var out [][]byte
	for _, c := range resp.GetContainers() {
		b, err := proto.Marshal(&runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{c}})
		if err == nil {
			out = append(out, b)
		}
	}
	return out
}

// TestFuzzCorpusFromSimnode checks the decoder against the generated code on
// a simulated node's whole ListContainers response, and with
// NODEGC_WRITE_CORPUS=1 writes each of a few of its containers to the
// FuzzDecodeContainers seed corpus.
func TestFuzzCorpusFromSimnode(t *testing.T) {
	_, ep := serve(t, small(11))
	c := dial(t, ep, Options{})
	resp, err := c.rt.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	want, werr := viaGenerated(b)
	got, gerr := viaDecoder(b)
	if werr != nil || gerr != nil || len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("decoder %v (%v), generated %v (%v)", got, gerr, want, werr)
	}
	if os.Getenv("NODEGC_WRITE_CORPUS") != "1" {
		return
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeContainers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, seed := range SplitContainers(resp)[:min(4, len(resp.GetContainers()))] {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("simnode-%d", i)), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", seed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// viaGeneratedEvent decodes an event with the generated code and converts
// it as the engine reads it: the reference for containerEvent.
func viaGeneratedEvent(b []byte) (engine.ContainerEvent, error) {
	var r runtimeapi.ContainerEventResponse
	if err := proto.Unmarshal(b, &r); err != nil {
		return engine.ContainerEvent{}, err
	}
	t, ok := eventTypes[r.GetContainerEventType()]
	if !ok {
		t = engine.ContainerEventType(r.GetContainerEventType().String())
	}
	return engine.ContainerEvent{Type: t, ContainerID: r.GetContainerId(), PodSandboxID: r.GetPodSandboxStatus().GetId(), Time: nsTime(r.GetCreatedAt())}, nil
}

// sampleEvent is a deleted event as containerd 2 sends one: the sandbox's
// status and its containers' statuses, labels and annotations included.
func sampleEvent() *runtimeapi.ContainerEventResponse {
	cs := sampleContainers().Containers[0]
	return &runtimeapi.ContainerEventResponse{
		ContainerId:        cs.Id,
		ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT,
		CreatedAt:          1_700_000_000_123_456_789,
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{Id: cs.PodSandboxId, Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "u1", Namespace: "default"},
			State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: 5, Labels: map[string]string{"app": "web"}},
		ContainersStatuses: []*runtimeapi.ContainerStatus{{Id: cs.Id, Metadata: cs.Metadata, State: runtimeapi.ContainerState_CONTAINER_EXITED,
			Image: cs.Image, ImageRef: cs.ImageRef, LogPath: "/var/log/pods/x/0.log", Labels: cs.Labels, Annotations: cs.Annotations}},
	}
}

func TestDecodeEventsMatchesGeneratedCode(t *testing.T) {
	sample, err := proto.Marshal(sampleEvent())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		wire []byte
	}{
		{"the event a runtime sends decodes as the generated code decodes it", sample},
		{"an empty event is a created event of no container", nil},
		{"a later type wins", msg(varint(2, 1), varint(2, 2), varint(2, 3))},
		{"a type the API does not define keeps its number as its name", varint(2, 7)},
		{"a later scalar wins over an earlier one", msg(str(1, "a"), str(1, "b"), varint(3, 1), varint(3, 2))},
		{"the sandbox status sent twice is merged, keeping the ID the second lacks", msg(sub(4, str(1, "s1")), sub(4, varint(3, 1)))},
		{"the sandbox status sent twice is merged, its later ID winning", msg(sub(4, str(1, "s1")), sub(4, varint(3, 1)), sub(4, str(1, "s2")))},
		{"a negative time and a 64-bit type value decode as int64 and int32", msg(varint(3, uint64(1<<64-1)), varint(2, 1<<40|3))},
		{"a known field of another wire type is skipped as unknown", msg(varint(1, 5), str(2, "x"), str(1, "real-id"))},
		{"unknown fields and groups are skipped", msg(str(99, "x"), protowire.AppendTag(nil, 101, protowire.StartGroupType), protowire.AppendTag(nil, 101, protowire.EndGroupType), str(1, "id"))},
		{"the sample twice is merged", msg(sample, sample)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := viaGeneratedEvent(tt.wire)
			if err != nil {
				t.Fatalf("generated code: %v", err)
			}
			var got containerEvent
			if err := got.decode(tt.wire); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got.ev, want) {
				t.Errorf("decoded\n got %+v\nwant %+v", got.ev, want)
			}
		})
	}
}

func TestDecodeEventsRejectsWhatTheGeneratedCodeRejects(t *testing.T) {
	tests := []struct {
		name string
		wire []byte
	}{
		{"a truncated event", str(1, "abc")[:3]},
		{"invalid UTF-8 in the container ID", str(1, "\xff\xfe")},
		{"invalid UTF-8 in the sandbox ID", sub(4, str(1, "\xff"))},
		{"a broken sandbox status", sub(4, []byte{0x0a, 0x05, 'a'})},
		{"field number zero", []byte{0x02, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := viaGeneratedEvent(tt.wire); err == nil {
				t.Fatal("the generated code accepts it: the case tests nothing")
			}
			var got containerEvent
			if err := got.decode(tt.wire); err == nil {
				t.Errorf("decoded %+v, want an error", got.ev)
			}
		})
	}
}
