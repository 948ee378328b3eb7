package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// ReviewsResource is the API server's "who am I" (SelfSubjectReview,
// GA in Kubernetes 1.28; every authenticated user may create one through
// the system:basic-user role): a command names who sends it, and
// deploy/policy.yaml denies one whose name is not its writer's.
var ReviewsResource = schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"}

// Commands writes commands into the nodes' NodeGC objects' spec (a
// pass, a preview, a pause, a resume), in the user's name, with the
// user's kubeconfig: RBAC on nodegcs decides who may, the API server's
// audit log records who did, and the agent, which watches its own
// object, acknowledges each by its ID in the status. Nothing goes to the
// node itself.
type Commands struct {
	dyn dynamic.Interface
	now func() time.Time

	mu sync.Mutex
	// user is the API server's name for the user, asked once.
	user string
}

// NewCommands returns the commands of the user cfg authenticates.
func NewCommands(cfg *rest.Config) (*Commands, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return CommandsFor(dyn, time.Now), nil
}

// CommandsFor returns the commands sent through dyn, their IDs from now.
func CommandsFor(dyn dynamic.Interface, now func() time.Time) *Commands {
	return &Commands{dyn: dyn, now: now}
}

// Pass asks node's agent for one pass of kind (images, containers, full
// or reclaim-all), or for its preview (a dry-run), and returns the
// command's ID.
func (c *Commands) Pass(ctx context.Context, node, kind string, preview bool) (string, error) {
	by, err := c.User(ctx)
	if err != nil {
		return "", err
	}
	id := c.newID("pass")
	// Every field is written, preview too: a merge patch keeps the
	// fields it does not name, so a preview would outlive its command.
	pass := map[string]any{"id": id, "kind": kind, "preview": preview, "by": by}
	return id, c.patch(ctx, node, map[string]any{"pass": pass})
}

// Pause asks node's agent to pause its periodic passes until until, and
// returns the command's ID.
func (c *Commands) Pause(ctx context.Context, node string, until time.Time) (string, error) {
	by, err := c.User(ctx)
	if err != nil {
		return "", err
	}
	id := c.newID("pause")
	pause := map[string]any{"id": id, "until": metav1.NewTime(until).Rfc3339Copy(), "by": by}
	return id, c.patch(ctx, node, map[string]any{"pause": pause})
}

// Resume removes the pause of node's object: the agent resumes its
// periodic passes if the pause in force is still the object's.
func (c *Commands) Resume(ctx context.Context, node string) error {
	return c.patch(ctx, node, map[string]any{"pause": nil})
}

// User is the API server's name for the user (SelfSubjectReview), asked
// once and kept.
func (c *Commands) User(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.user != "" {
		return c.user, nil
	}
	review := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}}
	out, err := c.dyn.Resource(ReviewsResource).Create(ctx, review, metav1.CreateOptions{})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return "", &ForbiddenError{Verb: "create " + resourceName(ReviewsResource), Err: err}
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("ask the API server who you are: it has no %s (Kubernetes 1.28 or later has): %w", resourceName(ReviewsResource), err)
	case err != nil:
		return "", fmt.Errorf("ask the API server who you are (create %s): %w", resourceName(ReviewsResource), err)
	}
	name, _, _ := unstructured.NestedString(out.Object, "status", "userInfo", "username")
	if name == "" {
		return "", errors.New("ask the API server who you are: its SelfSubjectReview names no user")
	}
	c.user = name
	return name, nil
}

// newID is a command's ID: its kind, the time and 4 random bytes, under
// the schema's 64.
func (c *Commands) newID(what string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return what + "-" + c.now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// patch merges spec into node's object's spec (a JSON merge patch: no
// version to read first, and the status is not touched).
func (c *Commands) patch(ctx context.Context, node string, spec map[string]any) error {
	body, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return fmt.Errorf("command to %s: %w", node, err)
	}
	_, err = c.dyn.Resource(ObjectsResource).Patch(ctx, node, types.MergePatchType, body, metav1.PatchOptions{})
	return commandError(node, err)
}

// commandError names what a refused command lacked: a right (the verb
// and resource), the node's object (no agent), or the admission policy's
// word.
func commandError(node string, err error) error {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err) && errors.As(err, &status) && strings.Contains(status.Status().Message, "ValidatingAdmissionPolicy"):
		return fmt.Errorf("patch %s %s: denied by the admission policy: %s", resourceName(ObjectsResource), node, oneLine(status.Status().Message))
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return &ForbiddenError{Verb: "patch " + resourceName(ObjectsResource), Err: err}
	case apierrors.IsNotFound(err):
		return fmt.Errorf("node %s has no NodeGC object (no agent to ask): %w", node, err)
	}
	return fmt.Errorf("patch %s %s: %w", resourceName(ObjectsResource), node, err)
}
