//go:build tools

// Package deps pins the module's dependencies while the code that uses them is written.
package deps

import (
	_ "charm.land/bubbles/v2/key"
	_ "charm.land/bubbletea/v2"
	_ "charm.land/lipgloss/v2"
	_ "github.com/charmbracelet/x/exp/teatest/v2"
	_ "github.com/google/cadvisor/lib/fs"
	_ "github.com/opencontainers/cgroups"
	_ "github.com/spf13/cobra"
	_ "google.golang.org/grpc"
	_ "k8s.io/cri-api/pkg/apis/runtime/v1"
	_ "sigs.k8s.io/yaml"
)
