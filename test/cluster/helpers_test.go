package cluster

import "github.com/nodegc/nodegc/internal/kubetest"

var (
	skipOrFail   = kubetest.SkipOrFail
	kubeBinary   = kubetest.Binary
	freePort     = kubetest.FreePort
	startProcess = kubetest.StartProcess
	waitFor      = kubetest.WaitFor
	tail         = kubetest.Tail
)
