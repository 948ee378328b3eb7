package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/realnode"
)

// corpusEnv makes the corpus tests write the fuzz seeds they take from a
// runtime into engine/cri's testdata (NODEGC_WRITE_CORPUS=1).
const corpusEnv = "NODEGC_WRITE_CORPUS"

// TestFuzzCorpusFromRealContainerd lists the containers of a real
// containerd (running, exited, created) with the generated CRI client and
// through nodegc's own decoder, and checks that both see the same
// containers in the same states. With NODEGC_WRITE_CORPUS=1 it also writes
// each container, as a ListContainers response of its own, to the
// FuzzDecodeContainers seed corpus.
func TestFuzzCorpusFromRealContainerd(t *testing.T) {
	forEachRuntime(t, testFuzzCorpusFromRealContainerd)
}

func testFuzzCorpusFromRealContainerd(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	c := dial(t, n)
	sb := m.RunPod("corpus", "default", podUID("corpus"), "")
	m.StartContainer(sb, "app", realnode.SandboxImageRef, 0)
	m.ExitedContainer(sb, "done", realnode.SandboxImageRef, 0, 3)
	m.ExitedContainer(sb, "done", realnode.SandboxImageRef, 1, 0)
	ctx := context.Background()
	resp, err := n.RuntimeClient().ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want, have []string
	for _, k := range resp.GetContainers() {
		want = append(want, fmt.Sprintf("%s %s %d %s", k.GetId(), k.GetMetadata().GetName(), k.GetMetadata().GetAttempt(), k.GetState()))
	}
	for _, k := range got {
		have = append(have, fmt.Sprintf("%s %s %d CONTAINER_%s", k.ID, k.Name, k.Attempt, k.State.Short()))
	}
	slices.Sort(want)
	slices.Sort(have)
	if len(want) < 3 || !slices.Equal(want, have) {
		t.Errorf("generated client %v\nnodegc decoder   %v", want, have)
	}
	if os.Getenv(corpusEnv) == "1" {
		writeCorpus(t, rt.Name+"-"+n.Snapshotter(), resp)
	}
}

// writeCorpus writes each container of resp as a seed file.
func writeCorpus(t *testing.T, prefix string, resp *runtimeapi.ListContainersResponse) {
	t.Helper()
	dir := filepath.Join("..", "..", "engine", "cri", "testdata", "fuzz", "FuzzDecodeContainers")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, k := range resp.GetContainers() {
		b, err := proto.Marshal(&runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{k}})
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, fmt.Sprintf("%s-%d", prefix, i))
		if err := os.WriteFile(name, fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
