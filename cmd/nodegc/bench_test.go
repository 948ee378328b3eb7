package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simnode"
)

// bareListAll is issue 2's bare client: the generated CRI clients listing
// images, containers and sandboxes, with no conversion. It returns the
// mean time of n listings.
func bareListAll(b *testing.B, ep string, n int) time.Duration {
	b.Helper()
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cri.DefaultMaxRecvMsgSize)))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	ctx := context.Background()
	start := time.Now()
	for range n {
		if _, err := img.ListImages(ctx, &runtimeapi.ListImagesRequest{}); err != nil {
			b.Fatal(err)
		}
		if _, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); err != nil {
			b.Fatal(err)
		}
		if _, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

// BenchmarkPlanScale is a whole `nodegc plan` (connect, snapshot, image
// records in a state dir, plan, the table) against simnode.Scale: 10,000
// images and 100,000 dead containers. It reports the cost relative to the
// bare listing over the same socket (x-bare-list), which issue 2 bounds at
// 1.5.
func BenchmarkPlanScale(b *testing.B) {
	for _, output := range []string{"table", "json"} {
		b.Run(output, func(b *testing.B) {
			node := simnode.New(simnode.Scale(1))
			_, ep := serveNode(b, node)
			state := b.TempDir()
			c := newCLI("")
			c.f.Out = io.Discard
			args := []string{"plan", "-o", output, "--simulated", "--runtime-endpoint", ep, "--state-dir", state}
			// One plan first, so the records file exists as on a node
			// where nodegc has run before.
			if code := c.run(args...); code != 0 {
				b.Fatalf("exit %d: %s", code, c.err.String())
			}
			bare := bareListAll(b, ep, 3)
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				if code := c.run(args...); code != 0 {
					b.Fatalf("exit %d: %s", code, c.err.String())
				}
			}
			per := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(float64(per)/float64(bare), "x-bare-list")
			b.ReportMetric(float64(bare.Milliseconds()), "bare-ms")
		})
	}
}

// serveNode serves node on a socket in a temp dir for a benchmark.
func serveNode(b *testing.B, node *simnode.Node) (*simnode.Node, string) {
	b.Helper()
	dir := b.TempDir()
	if len(dir) > 80 { // unix socket paths are short
		dir = "/tmp"
	}
	ep := "unix://" + strings.TrimSuffix(dir, "/") + "/bench.sock"
	l, err := simnode.Listen(ep)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- node.Serve(l) }()
	b.Cleanup(func() {
		node.Stop()
		<-done
	})
	return node, ep
}
