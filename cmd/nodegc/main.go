package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(pluginArgs(os.Args[0], os.Args[1:]), os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program minus os.Exit, so tests can call it: it wires
// the real environment into a factory, executes the command tree and maps
// the error to an exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	f := &factory{
		In:                   stdin,
		Out:                  stdout,
		Err:                  stderr,
		IsTerminal:           func() bool { return isTerminal(stdin) },
		OutIsTerminal:        func() bool { return isTerminal(stdout) },
		OutWidth:             func() int { return terminalWidth(stdout) },
		Getenv:               os.Getenv,
		Now:                  time.Now,
		DefaultKubeletConfig: defaultKubeletConfigPath,
		ProcRoot:             defaultProcRoot,
		DefaultKubeconfig:    defaultKubeletKubeconfig,
	}
	return execute(ctx, f, args)
}

// terminalWidth is the width of the terminal the stream is, 0 when it is
// none.
func terminalWidth(stream any) int {
	file, ok := stream.(*os.File)
	if !ok || !term.IsTerminal(file.Fd()) {
		return 0
	}
	w, _, err := term.GetSize(file.Fd())
	if err != nil {
		return 0
	}
	return w
}

// isTerminal reports whether the stream is a terminal.
func isTerminal(stream any) bool {
	file, ok := stream.(*os.File)
	return ok && term.IsTerminal(file.Fd())
}
