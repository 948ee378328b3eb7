package cri

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/nodegc/nodegc/internal/containerdapi"
)

// bulkMaxBytes bounds the answer of the containers service's List. Each
// record carries the sandbox's OCI spec and CRI metadata (a few KiB), and
// containerd sends at most 16 MiB in one message (its
// defaults.DefaultMaxSendMsgSize), so a node of more sandboxes than that
// holds answers ResourceExhausted and its sandboxes are asked one by one.
const bulkMaxBytes = 64 << 20

// bulkSandboxImages asks containerd's containers service, served on the
// CRI socket, for every pod sandbox's container record in one call, and
// returns the image of each sandbox of want that a record names: the
// field containerd's verbose PodSandboxStatus reports as its info's
// "image" (see package containerdapi). The answer is believed no more than
// the CRI's, on the same socket: a record counts only when it is a
// sandbox's (its KindLabel), names a sandbox of want and a non-empty image,
// and is the only record of that ID; a sandbox without one is asked one by
// one. A runtime that does not serve the call (CRI-O, anything but
// containerd: Unimplemented) gives an error, and so does any failure.
func (c *Client) bulkSandboxImages(ctx context.Context, want map[string]bool) (map[string]string, error) {
	ctx, cancel := c.readContext(ctx)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, containerdapi.NamespaceHeader, containerdapi.CRINamespace)
	req := containerdapi.Raw(containerdapi.AppendListRequest(nil, containerdapi.SandboxFilter))
	out := &sandboxRecords{want: want}
	err := c.conn.Invoke(ctx, containerdapi.ListMethod, req, out, rawCall, grpc.MaxCallRecvMsgSize(bulkMaxBytes))
	if err != nil {
		return nil, c.mapError("list sandbox containers (containerd "+containerdapi.Service+")", err)
	}
	return out.images, nil
}

// sandboxRecords is a containers List answer decoded into the images of
// the sandboxes of want (a rawDecoder): an ID listed more than once is
// left out, to be asked instead.
type sandboxRecords struct {
	want   map[string]bool
	images map[string]string
}

func (r *sandboxRecords) decode(b []byte) error {
	r.images = make(map[string]string, len(r.want))
	twice := map[string]bool{}
	strs := strTable{} // the images, which repeat
	err := containerdapi.ParseListResponse(b, func(id, image []byte, sandbox bool) {
		if !sandbox || len(image) == 0 || !r.want[string(id)] {
			return
		}
		key := string(id)
		if _, ok := r.images[key]; ok {
			twice[key] = true
		}
		r.images[key] = strs.share(image)
	})
	if err != nil {
		return fmt.Errorf("decode sandbox containers: %w", err)
	}
	for id := range twice {
		delete(r.images, id)
	}
	return nil
}
