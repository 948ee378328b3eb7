package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/nodegc/nodegc/agent"
	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
)

// Exit codes. They are the whole contract with scripts, so they are mapped
// from error kinds in exactly one place, exitCode.
const (
	exitOK = 0
	// exitFailure: the runtime cannot be reached, a pass had errors, or the
	// operator declined the confirmation.
	exitFailure = 1
	// exitUsage: bad input (a flag, the kubelet config, a snapshot file,
	// gc without a terminal and without --yes).
	exitUsage = 2
)

// usageError is bad input that the operator must fix: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf returns a usageError; the message names the flag or file.
func usageErrorf(format string, a ...any) error {
	return &usageError{fmt.Errorf(format, a...)}
}

// fileError is a file nodegc was told to read that cannot be used: a
// kubelet config or a snapshot. Field is "" for a syntax or I/O error.
type fileError struct {
	Path  string
	Field string
	Err   error
}

func (e *fileError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.Path, e.Field, e.Err)
}

func (e *fileError) Unwrap() error { return e.Err }

// passError is a pass whose report is not OK: exit 1.
type passError struct{ report engine.PassReport }

func (e *passError) Error() string {
	if e.report.Stopped != "" && e.report.Error == "" {
		return fmt.Sprintf("gc pass stopped (%s): %d planned items left undone", e.report.Stopped, e.report.Undone)
	}
	if e.report.Error != "" {
		return "gc pass failed: " + e.report.Error
	}
	if ev, failed := e.report.ImageGCError(); failed && e.report.OK() {
		return fmt.Sprintf("gc pass failed: %s: %s", ev.Reason, ev.Message)
	}
	return fmt.Sprintf("gc pass had %d failed removals (see the report above)", e.report.Count(engine.OutcomeFailed))
}

// errDeclined is the operator answering no to the confirmation: exit 1, so
// that `nodegc gc && next` does not go on as if the pass had run.
var errDeclined = errors.New("gc: not confirmed; nothing was removed")

// errInterrupted is a signal (SIGINT, SIGTERM, SIGHUP) at the confirmation
// prompt: exit 1, nothing was removed.
var errInterrupted = errors.New("gc: interrupted at the confirmation; nothing was removed")

// exitCode maps an error to the process exit code. It is the only place
// that does, so every command agrees.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var (
		ue *usageError
		fe *fileError
		pe *engine.PolicyError
		se *engine.StateDirError
		ce *control.SocketError
		ae *control.UnreachableError
		le *agent.AddressError
	)
	switch {
	case errors.As(err, &ue), errors.As(err, &fe), errors.As(err, &pe), errors.As(err, &se), errors.As(err, &ce), errors.As(err, &ae), errors.As(err, &le):
		return exitUsage
	default:
		return exitFailure
	}
}

// errorLine renders an error as the one line nodegc prints on stderr.
func errorLine(err error) string {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
	return "nodegc: " + msg
}

// flagError turns pflag's parse errors into a usageError that leads with
// the flag's name, like every other nodegc error.
func flagError(err error) error {
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		name := "--" + iv.GetFlag().Name
		var ne *strconv.NumError
		switch {
		case errors.As(err, &ne):
			return usageErrorf("%s: %q is not an integer", name, iv.GetValue())
		case iv.Unwrap() != nil:
			return usageErrorf("%s: %s", name, strings.TrimPrefix(iv.Unwrap().Error(), "time: "))
		}
		return usageErrorf("%s: invalid value %q", name, iv.GetValue())
	}
	return &usageError{err}
}
