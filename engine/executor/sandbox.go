package executor

import (
	"context"
	"fmt"

	"github.com/nodegc/nodegc/engine/model"
)

// recheck re-checks one sandbox: it must not be READY and no container
// may reference it. Its removal stops it first, as the kubelet's
// removeSandbox does in case it was never stopped
// (pkg/kubelet/kuberuntime/kuberuntime_gc.go, v1.36.3); a stop that fails
// leaves it. Both calls come after the removal's started line.
func (rm sandboxCheck) recheck(x *executor, en *model.JournalEntry) checked {
	it := model.ItemResult{Kind: model.ItemSandbox, ID: rm.ID, Reason: rm.Reason}
	cur, err := rt(x, func(ctx context.Context) (model.Sandbox, error) { return x.d.Reader.SandboxStatus(ctx, rm.ID) })
	if err != nil {
		return checked{it: recheckFailed(it, err)}
	}
	en.PodUID, en.Name = cur.PodUID, cur.PodNamespace+"/"+cur.PodName
	if cur.State == model.SandboxReady {
		return checked{it: skipped(it, "ready since planning")}
	}
	if cur.State != model.SandboxNotReady {
		return checked{it: skipped(it, fmt.Sprintf("in state %s, which the CRI API does not define: kept as active", cur.State))}
	}
	v, err := x.views.all.fresh(false)
	if err != nil {
		return checked{it: viewFailed(it, err)}
	}
	if c, ok := v.sandboxUser(rm.ID); ok {
		return checked{it: skipped(it, fmt.Sprintf("still holds container %s (%s)", c.Name, c.ID))}
	}
	return checked{it: it, remove: &removal{what: "remove sandbox",
		stop: func(ctx context.Context) error { return x.d.Remover.StopSandbox(ctx, rm.ID) },
		call: func(ctx context.Context) error { return x.d.Remover.RemoveSandbox(ctx, rm.ID) },
		log:  []any{"sandbox", rm.ID, "pod", cur.PodUID}}}
}
