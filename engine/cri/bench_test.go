package cri

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

// scaleNode serves simnode.Scale (10,000 images, 100,000 dead and 10,000
// running containers, 5,000 sandboxes) for a benchmark.
func scaleNode(b *testing.B) (*simnode.Node, string) {
	b.Helper()
	return serve(b, simnode.Scale(1))
}

// BenchmarkListAll is the bare client of issue 2: the generated CRI gRPC
// clients listing images, containers and sandboxes over the socket, with
// no conversion. A full `nodegc plan` is measured against it.
func BenchmarkListAll(b *testing.B) {
	_, ep := scaleNode(b)
	conn, err := grpc.NewClient(ep,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(DefaultMaxRecvMsgSize)))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		ims, err := img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
		if err != nil {
			b.Fatal(err)
		}
		ks, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			b.Fatal(err)
		}
		ss, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			b.Fatal(err)
		}
		if len(ims.Images) != 10_001 || len(ks.Containers) != 110_000 || len(ss.Items) != 5_000 {
			b.Fatalf("listed %d images, %d containers, %d sandboxes", len(ims.Images), len(ks.Containers), len(ss.Items))
		}
	}
}

// BenchmarkClientListAll is the same listing through the adapter, with the
// conversion to engine types.
func BenchmarkClientListAll(b *testing.B) {
	_, ep := scaleNode(b)
	c := dial(b, ep, Options{})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.ListImages(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := c.ListContainers(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := c.ListSandboxes(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListContainersExitDetails is the first ListContainers with
// Options.ExitDetails on the scale node: one ContainerStatus per dead
// container (100,000), eight at a time. Later listings hit the cache.
func BenchmarkListContainersExitDetails(b *testing.B) {
	_, ep := scaleNode(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		c, err := Dial(ctx, ep, Options{ExitDetails: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.ListContainers(ctx); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkPlan is a full `nodegc plan` against the same node: the engine
// reads through the adapter (read-only view), updates and persists the
// 10,000 image records, and plans a full pass. Issue 2 asks that it cost at
// most 1.5× BenchmarkListAll.
func BenchmarkPlan(b *testing.B) {
	n, ep := scaleNode(b)
	c := dial(b, ep, Options{})
	e, err := engine.New(engine.Options{Reader: c.ReadOnly(), Statfs: simStatfs(n), Policy: engine.DefaultPolicy(), StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		p, err := e.Plan(ctx, engine.PassFull)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.ContainerGC.Remove) == 0 {
			b.Fatal("the plan removes no dead container")
		}
	}
}
