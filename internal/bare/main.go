// Command bare is the baseline that nodegc's cost is measured against
// (issue 22), side by side in one run (cmd/nodegc's BenchmarkPlanCost):
//
//	bare list unix:///tmp/sim.sock   # the generated CRI clients list images, containers and sandboxes once, no conversion
//	bare decode snap.json            # read a NodeSnapshot and decode it into typed structs, nothing more
//
// Each prints what it read and exits.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
)

// maxRecv fits the largest listing the benchmarks make (engine/cri's
// DefaultMaxRecvMsgSize).
const maxRecv = 512 << 20

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "list" && os.Args[1] != "decode") {
		fmt.Fprintln(os.Stderr, "usage: bare list unix:///PATH | bare decode FILE")
		os.Exit(2)
	}
	run := list
	if os.Args[1] == "decode" {
		run = decode
	}
	if err := run(os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}

func list(ep string) error {
	conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecv)))
	if err != nil {
		return err
	}
	defer conn.Close()
	rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	ctx := context.Background()
	ims, err := img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	ks, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	ss, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	fmt.Printf("%d images, %d containers, %d sandboxes\n", len(ims.GetImages()), len(ks.GetContainers()), len(ss.GetItems()))
	return nil
}

func decode(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s engine.Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	fmt.Printf("%d images, %d containers, %d sandboxes\n", len(s.Images), len(s.Containers), len(s.Sandboxes))
	return nil
}
