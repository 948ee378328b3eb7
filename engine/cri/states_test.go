package cri

import (
	"testing"

	"github.com/nodegc/nodegc/engine"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestUndefinedStatesKeepTheirNumber pins issue 8 item 3: a state the CRI
// API does not define is not folded into NOTREADY or UNKNOWN (which the
// planners stop and remove) but kept as its own, active, state.
func TestUndefinedStatesKeepTheirNumber(t *testing.T) {
	t.Run("container state 7", func(t *testing.T) {
		if got, want := containerState(7), engine.ContainerStateOther(7); got != want {
			t.Errorf("containerState(7) = %s, want %s", got, want)
		}
	})
	t.Run("sandbox state 2", func(t *testing.T) {
		if got, want := sandboxState(2), engine.SandboxStateOther(2); got != want {
			t.Errorf("sandboxState(2) = %s, want %s", got, want)
		}
	})
	t.Run("the defined states map to themselves", func(t *testing.T) {
		for s, want := range map[runtimeapi.ContainerState]engine.ContainerState{
			runtimeapi.ContainerState_CONTAINER_CREATED: engine.ContainerCreated,
			runtimeapi.ContainerState_CONTAINER_RUNNING: engine.ContainerRunning,
			runtimeapi.ContainerState_CONTAINER_EXITED:  engine.ContainerExited,
			runtimeapi.ContainerState_CONTAINER_UNKNOWN: engine.ContainerUnknown,
		} {
			if got := containerState(s); got != want {
				t.Errorf("containerState(%v) = %s, want %s", s, got, want)
			}
		}
		if sandboxState(runtimeapi.PodSandboxState_SANDBOX_NOTREADY) != engine.SandboxNotReady || sandboxState(runtimeapi.PodSandboxState_SANDBOX_READY) != engine.SandboxReady {
			t.Error("defined sandbox states changed")
		}
	})
	t.Run("the list decoder keeps state 7", func(t *testing.T) {
		b, err := proto.Marshal(&runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{{Id: "c1", State: 7, Metadata: &runtimeapi.ContainerMetadata{Name: "app"}}}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := viaDecoder(b)
		if err != nil || len(got) != 1 || got[0].State != engine.ContainerStateOther(7) {
			t.Errorf("decoded %+v, %v; want one container in %s", got, err, engine.ContainerStateOther(7))
		}
	})
}
