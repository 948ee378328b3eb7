// Command nodegc-testbin is the only program inside the images the realnode
// harness builds, the sandbox (pause) image included. It is built static
// (CGO_ENABLED=0) so a one-layer image can run it with nothing else.
//
//	nodegc-testbin             print one line, then sleep until SIGTERM or SIGINT
//	nodegc-testbin sleep       the same
//	nodegc-testbin exit N      print one line, then exit with status N
//
// It handles SIGTERM itself because it runs as PID 1 of its PID namespace,
// where the kernel ignores signals that have no handler: without one, every
// stop would wait for the runtime's SIGKILL timeout.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "exit" {
		code := 0
		if len(args) > 1 {
			n, err := strconv.Atoi(args[1])
			if err != nil {
				fmt.Fprintf(os.Stderr, "nodegc-testbin: exit status %q: %v\n", args[1], err)
				return 2
			}
			code = n
		}
		fmt.Printf("nodegc-testbin: exiting with status %d\n", code)
		return code
	}
	if len(args) > 0 && args[0] != "sleep" {
		fmt.Fprintf(os.Stderr, "nodegc-testbin: unknown command %q (want sleep or exit N)\n", args[0])
		return 2
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("nodegc-testbin: sleeping until SIGTERM")
	<-sig
	return 0
}
