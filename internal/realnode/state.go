package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// State is what the runtime holds, as CRI lists it: enough to prove that a
// dry-run changed nothing (compare two States with reflect.DeepEqual).
type State struct {
	// Images are the image IDs, sorted.
	Images []string
	// Containers maps each container ID to its state (CONTAINER_RUNNING, ...).
	Containers map[string]string
	// Sandboxes maps each sandbox ID to its state (SANDBOX_READY, ...).
	Sandboxes map[string]string
}

// State lists the runtime's images, containers and sandboxes through CRI.
func (n *Node) State() (State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s := State{Containers: map[string]string{}, Sandboxes: map[string]string{}}
	imgs, err := n.images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return State{}, fmt.Errorf("list images: %w", err)
	}
	for _, img := range imgs.GetImages() {
		s.Images = append(s.Images, img.GetId())
	}
	slices.Sort(s.Images)
	cs, err := n.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return State{}, fmt.Errorf("list containers: %w", err)
	}
	for _, c := range cs.GetContainers() {
		s.Containers[c.GetId()] = c.GetState().String()
	}
	sbs, err := n.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return State{}, fmt.Errorf("list sandboxes: %w", err)
	}
	for _, sb := range sbs.GetItems() {
		s.Sandboxes[sb.GetId()] = sb.GetState().String()
	}
	return s, nil
}

// Ctr runs ctr against the node in the k8s.io namespace (the CRI plugin's)
// and returns its combined output. Ctr("images", "rm", "--sync", ref, id)
// deletes an image behind CRI's back, as an operator would: the CRI plugin
// names every image it learns of by its ID (sha256:<config digest>) too, so
// removing only the ref leaves the image listed without tags.
func (n *Node) Ctr(args ...string) ([]byte, error) {
	ctr, err := n.o.Runtime.look("ctr")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctr, append([]string{"--address", n.sock, "--namespace", "k8s.io"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+n.o.Runtime.path())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ctr %v: %w: %s", args, err, lastLines(string(out), 5))
	}
	return out, nil
}
