package critest

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RawCall is one generated CRI call of a raw loop: a removal by ID.
type RawCall func(ctx context.Context, rt runtimeapi.RuntimeServiceClient, im runtimeapi.ImageServiceClient, id string) error

// RawRemove makes call for each of ids on the runtime at endpoint, with
// inFlight calls in flight, as fast as the runtime allows, and returns how
// long it took: the bound a GC pass's removals are measured against. It
// connects before the clock starts, and fails tb on any error.
func RawRemove(tb testing.TB, endpoint string, ids []string, inFlight int, call RawCall) time.Duration {
	tb.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	rt, im := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	ctx := context.Background()
	if _, err := rt.Version(ctx, &runtimeapi.VersionRequest{}); err != nil { // connect outside the timer
		tb.Fatal(err)
	}
	work := make(chan string)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for id := range work {
				if err := call(ctx, rt, im, id); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	d := time.Since(start)
	if first != nil {
		tb.Fatal(first)
	}
	return d
}

// RemoveImage is the RawCall of the kubelet's image GC: RemoveImage by ID.
func RemoveImage(ctx context.Context, _ runtimeapi.RuntimeServiceClient, im runtimeapi.ImageServiceClient, id string) error {
	_, err := im.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}})
	return err
}

// Eventually retries f every 10 ms until it succeeds, failing tb with its
// last error after ten seconds: a gRPC client takes a few attempts to
// reconnect to a runtime that came back.
func Eventually(tb testing.TB, f func() error) {
	tb.Helper()
	var last error
	poll := func(context.Context) (bool, error) { last = f(); return last == nil, nil }
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, poll); err != nil {
		tb.Fatalf("still failing: %v", last)
	}
}
