package model

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SnapshotError is a NodeSnapshot that breaks the contract. Field is the
// path of the offending field, such as "images[3].id" or
// "imageFs.capacityBytes" ("" for the document as a whole), so that the
// error line tells the operator exactly what to fix.
type SnapshotError struct {
	Field string
	Msg   string
}

func (e *SnapshotError) Error() string {
	if e.Field == "" {
		return "snapshot: " + e.Msg
	}
	return "snapshot: " + e.Field + ": " + e.Msg
}

// Validate checks a snapshot against the NodeSnapshot contract, as
// DecodeSnapshot does (except the presence of the image filesystem's
// numbers, which a decoded struct cannot tell from zero). The error is a
// *SnapshotError naming the field.
func (s Snapshot) Validate() error {
	if err := s.ValidateHeader(); err != nil {
		return err
	}
	return s.ValidateItems()
}

// ValidateHeader checks the document's apiVersion, kind and takenAt.
func (s Snapshot) ValidateHeader() error {
	switch {
	case s.APIVersion == "":
		return &SnapshotError{"apiVersion", "required"}
	case s.APIVersion != APIVersion:
		return &SnapshotError{"apiVersion", fmt.Sprintf("want %q, got %q", APIVersion, s.APIVersion)}
	case s.Kind == "":
		return &SnapshotError{"kind", "required"}
	case s.Kind != KindSnapshot:
		return &SnapshotError{"kind", fmt.Sprintf("want %q, got %q", KindSnapshot, s.Kind)}
	case s.TakenAt.IsZero():
		return &SnapshotError{"takenAt", "required"}
	}
	return nil
}

// ValidateItems checks every image, image record, sandbox and container;
// the error names the first field that breaks the contract.
func (s Snapshot) ValidateItems() error {
	return firstError(s.itemErrors())
}

// itemErrors lists every item field that breaks the contract, in
// document order. An item's path is made only when it has an error: a
// node lists 150,000 items.
func (s Snapshot) itemErrors() field.ErrorList {
	var errs field.ErrorList
	ids := make(map[string]int, max(len(s.Images), len(s.ImageRecords), len(s.Sandboxes), len(s.Containers)))
	images := field.NewPath("images")
	for i, img := range s.Images {
		errs = append(errs, uniqueID(ids, images, img.ID, i)...)
		if img.SizeBytes < 0 {
			errs = append(errs, field.Invalid(images.Index(i).Child("sizeBytes"), img.SizeBytes, fmt.Sprintf("must not be negative, got %d", img.SizeBytes)))
		}
	}
	clear(ids)
	records := field.NewPath("imageRecords")
	for i, r := range s.ImageRecords {
		errs = append(errs, uniqueID(ids, records, r.ID, i)...)
		if r.FirstDetected.IsZero() {
			errs = append(errs, field.Required(records.Index(i).Child("firstDetected"), "required"))
		}
	}
	clear(ids)
	sandboxes := field.NewPath("sandboxes")
	for i, sb := range s.Sandboxes {
		errs = append(errs, uniqueID(ids, sandboxes, sb.ID, i)...)
		switch sb.State {
		case SandboxReady, SandboxNotReady:
		case "":
			errs = append(errs, field.Required(sandboxes.Index(i).Child("state"), "required"))
		default:
			if !otherState(string(sb.State), "SANDBOX_STATE_") {
				errs = append(errs, field.Invalid(sandboxes.Index(i).Child("state"), sb.State, fmt.Sprintf("unknown value %q (want %s, %s or SANDBOX_STATE_<n>)", sb.State, SandboxReady, SandboxNotReady)))
			}
		}
	}
	clear(ids)
	containers := field.NewPath("containers")
	for i, c := range s.Containers {
		errs = append(errs, uniqueID(ids, containers, c.ID, i)...)
		switch c.State {
		case ContainerCreated, ContainerRunning, ContainerExited, ContainerUnknown:
		case "":
			errs = append(errs, field.Required(containers.Index(i).Child("state"), "required"))
		default:
			if !otherState(string(c.State), "CONTAINER_STATE_") {
				errs = append(errs, field.Invalid(containers.Index(i).Child("state"), c.State, fmt.Sprintf("unknown value %q (want a CONTAINER_ state or CONTAINER_STATE_<n>)", c.State)))
			}
		}
		if c.CreatedAt.IsZero() {
			errs = append(errs, field.Required(containers.Index(i).Child("createdAt"), "required"))
		}
	}
	return errs
}

// firstError is the first of errs as a *SnapshotError (its field's path
// and detail), or nil.
func firstError(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return &SnapshotError{errs[0].Field, errs[0].Detail}
}

// uniqueID checks that item i of the list has an ID not seen before in
// it.
func uniqueID(seen map[string]int, list *field.Path, id string, i int) field.ErrorList {
	if id == "" {
		return field.ErrorList{field.Required(list.Index(i).Child("id"), "required")}
	}
	if j, dup := seen[id]; dup {
		return field.ErrorList{field.Invalid(list.Index(i).Child("id"), id, "duplicate of "+list.Index(j).String())}
	}
	seen[id] = i
	return nil
}
