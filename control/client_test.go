package control

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nodegc/nodegc/engine"
)

func TestAStalePlanReplyIsErrStalePlan(t *testing.T) {
	stale := fmt.Errorf("apply: %w", &RemoteError{Status: 409, Reply: Error{Code: CodeStalePlan, Error: "stale plan: made 5m9s ago"}})
	if !errors.Is(stale, engine.ErrStalePlan) {
		t.Errorf("%v is not engine.ErrStalePlan", stale)
	}
	other := &RemoteError{Status: 500, Reply: Error{Code: "internal", Error: "list images: boom"}}
	if errors.Is(other, engine.ErrStalePlan) {
		t.Errorf("%v is engine.ErrStalePlan", other)
	}
}
