package engine

import (
	"errors"
	"fmt"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// The kubelet's event messages, worded as kubelet v1.36.3 words them, so
// that an operator who greps the kubelet's events finds nodegc's too.

// imageGCFailedMessage is the message of ImageGCFailed: the kubelet emits
// the error its image GarbageCollect returned (kubelet.go
// StartGarbageCollection), which is, in the order GarbageCollect meets
// them: a deletion error in the MaxAge pass (freeOldImages), invalid
// capacity, a deletion error in the space pass (freeSpace), or the
// FreeDiskSpaceFailed message. err is a pass-level error (the runtime
// could not be listed), which the kubelet returns as is.
func imageGCFailedMessage(r PassReport, err error) string {
	if err != nil {
		return err.Error()
	}
	failed := func(reason ImageRemoveReason) []error {
		var errs []error
		for _, it := range r.Items {
			if it.Kind == ItemImage && it.Outcome == OutcomeFailed && it.Reason == string(reason) {
				errs = append(errs, errors.New(it.Error))
			}
		}
		return errs
	}
	if errs := failed(RemoveForAge); len(errs) > 0 {
		return fmt.Sprintf("wanted to free images older than %v, encountered errors in image deletion: %s", r.Plan.Policy.Image.MaxAge, utilerrors.NewAggregate(errs))
	}
	for _, ev := range r.Events {
		if ev.Reason == EventInvalidDiskCapacity {
			return ev.Message
		}
	}
	if errs := failed(RemoveForSpace); len(errs) > 0 {
		return fmt.Sprintf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %s", r.Plan.ImageGC.BytesToFree, spaceFreed(r), utilerrors.NewAggregate(errs))
	}
	for _, ev := range r.Events {
		if ev.Reason == EventFreeDiskSpaceFailed {
			return ev.Message
		}
	}
	if errs := failed(RemoveForReclaim); len(errs) > 0 {
		return "errors in image deletion: " + utilerrors.NewAggregate(errs).Error()
	}
	return "image garbage collection failed"
}
