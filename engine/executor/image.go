package executor

import (
	"context"
	"fmt"

	"github.com/nodegc/nodegc/engine/model"
)

// recheck re-checks one image: it must still exist, be unpinned, not be a
// sandbox image and be used by no container in any state, by the view of
// the node, nor, when the engine does not follow the runtime's events,
// by a created or running container of a listing begun at most
// ViewWindow before the check (see ViewWindow).
func (rm imageCheck) recheck(x *executor, en *model.JournalEntry) checked {
	it := model.ItemResult{Kind: model.ItemImage, ID: rm.ID, Reason: string(rm.Reason), Detail: rm.Detail, SizeBytes: rm.SizeBytes}
	if x.infoErr != nil {
		return checked{it: recheckFailed(it, x.infoErr)}
	}
	v, err := x.views.all.fresh(true)
	if err != nil {
		return checked{it: viewFailed(it, err)}
	}
	img, ok := v.image(rm.ID)
	if !ok {
		it.Outcome = model.OutcomeGone
		return checked{it: it}
	}
	en.RepoTags, en.RepoDigests, en.SizeBytes = img.RepoTags, img.RepoDigests, img.SizeBytes
	switch {
	case img.Pinned:
		return checked{it: skipped(it, "pinned since planning")}
	case img.SizeBytes < 0:
		return checked{it: skipped(it, fmt.Sprintf("the runtime reports an impossible size (%d bytes)", img.SizeBytes))}
	case model.IsSandboxImage(img, x.sandboxRefs):
		return checked{it: skipped(it, "sandbox image")}
	}
	views := []*viewData{v}
	if !x.d.Following() {
		a, err := x.views.active.fresh(false)
		if err != nil {
			return checked{it: viewFailed(it, err)}
		}
		views = append(views, a)
	}
	for _, v := range views {
		if c, used := v.imageUser(img); used {
			return checked{it: skipped(it, fmt.Sprintf("in use since planning by container %s (%s)", c.Name, c.ID))}
		}
	}
	return checked{it: it, remove: &removal{what: "remove image",
		call: func(ctx context.Context) error { return x.d.Remover.RemoveImage(ctx, rm.ID) },
		log:  []any{"image", rm.ID, "tags", img.RepoTags, "size", img.SizeBytes}}}
}
