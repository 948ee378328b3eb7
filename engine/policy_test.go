package engine

import (
	"errors"
	"testing"
)

func TestPolicyValidatePodLogsDir(t *testing.T) {
	tests := []struct {
		name    string
		dir     string
		wantErr string // "" for a valid policy
	}{
		{name: "empty means the default and is valid", dir: ""},
		{name: "an absolute directory is valid", dir: "/var/log/pods"},
		{name: "a relative directory is refused, naming the flag", dir: "logs/pods", wantErr: `--pod-logs-dir: must be an absolute path, got "logs/pods"`},
		{name: "the root directory is refused", dir: "/", wantErr: `--pod-logs-dir: must not be the root directory, got "/"`},
		{name: "the root directory written long is refused", dir: "/var/..//", wantErr: `--pod-logs-dir: must not be the root directory, got "/var/..//"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultPolicy()
			p.PodLogsDir = tt.dir
			err := p.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.Field != "pod-logs-dir" || err.Error() != tt.wantErr {
				t.Fatalf("Validate() = %v, want the PolicyError %q", err, tt.wantErr)
			}
			if _, err := New(Options{Reader: newFakeRuntime(), Policy: p}); err == nil {
				t.Error("New accepted the policy")
			}
		})
	}
}
