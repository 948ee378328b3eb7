package engine

import (
	"context"
	"errors"
	"time"
)

// ErrNoEventStream is wrapped by EventSource errors when the runtime does
// not serve a container event stream at all (containerd 1.6 answers the
// CRI GetContainerEvents call with Unimplemented). A caller then keeps
// polling; there is no point reconnecting soon.
var ErrNoEventStream = errors.New("runtime has no event stream")

// ContainerEventType is what happened to a container, as the CRI event
// stream reports it.
type ContainerEventType string

// Container event types: the four of the CRI's ContainerEventType.
const (
	ContainerCreatedEvent ContainerEventType = "created"
	ContainerStartedEvent ContainerEventType = "started"
	ContainerStoppedEvent ContainerEventType = "stopped"
	ContainerDeletedEvent ContainerEventType = "deleted"
)

// ContainerEvent is one change of a container on the node, from the
// runtime's event stream. It tells a reader that its list of containers
// is out of date; it does not carry the container itself, so the reader
// lists again.
type ContainerEvent struct {
	Type        ContainerEventType
	ContainerID string
	// PodSandboxID is the container's sandbox, when the runtime says.
	PodSandboxID string
	// Time is when the runtime says the change happened.
	Time time.Time
	// Err is set only on the last value sent before the channel closes,
	// when the stream broke rather than ended with its context.
	Err error
}

// EventSource is an optional interface of a Reader whose runtime serves a
// container event stream. It keeps the engine free of CRI types: the CRI
// adapter implements it over GetContainerEvents, and readers that cannot
// (a snapshot file) simply do not.
type EventSource interface {
	// ContainerEvents opens the stream. It returns an error wrapping
	// ErrNoEventStream when the runtime has none. The channel is closed
	// when ctx ends or the stream breaks (its last value then has Err
	// set).
	ContainerEvents(ctx context.Context) (<-chan ContainerEvent, error)
}
