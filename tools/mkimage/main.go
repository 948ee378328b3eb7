// Command mkimage writes nodegc's container image as an OCI archive, with
// no Docker daemon and no registry: the static binary as the one layer on
// a distroless-like root, entrypoint ["/nodegc", "agent"]. `make image`
// runs it; the archive imports with `ctr -n k8s.io images import` and
// pushes with `skopeo copy oci-archive:FILE docker://REF`.
//
//	go run ./tools/mkimage --binary bin/image/nodegc --ref ghcr.io/nodegc/nodegc:v1 -o bin/nodegc-image.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"time"

	"github.com/nodegc/nodegc/internal/ociarchive"
)

// refPattern is the subset of the reference grammar mkimage accepts: a
// lower-case repository path and a tag.
var refPattern = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

func main() {
	bin := flag.String("binary", "", "the static nodegc binary to put in the image")
	ref := flag.String("ref", "", "the image's full reference, REGISTRY/REPO:TAG")
	out := flag.String("o", "", "the OCI archive to write")
	arch := flag.String("arch", runtime.GOARCH, "the binary's GOARCH")
	version := flag.String("version", "", "org.opencontainers.image.version label")
	flag.Parse()
	if *bin == "" || *ref == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: mkimage --binary FILE --ref REGISTRY/REPO:TAG -o ARCHIVE [--arch GOARCH] [--version V]")
		os.Exit(2)
	}
	if !refPattern.MatchString(*ref) {
		fmt.Fprintf(os.Stderr, "mkimage: --ref %q is not REGISTRY/REPO:TAG (lower-case repository, tag of [A-Za-z0-9_.-])\n", *ref)
		os.Exit(2)
	}
	created, err := sourceDate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(2)
	}
	img, err := ociarchive.WriteImage(*out, ociarchive.ImageOptions{
		Binary:     *bin,
		Path:       "/nodegc",
		Ref:        *ref,
		Entrypoint: []string{"/nodegc", "agent"},
		Arch:       *arch,
		Created:    created,
		Ports:      []string{"1017/tcp"},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "nodegc",
			"org.opencontainers.image.version": *version,
			ociarchive.AnnotationSource:        "https://github.com/nodegc/nodegc",
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s (id %s, %.1f MiB)\n", *out, img.Ref, img.ID, float64(img.Size)/(1<<20))
}

// sourceDate is $SOURCE_DATE_EPOCH (reproducible builds), else the Unix
// epoch: the image's digests depend only on the binary and the options.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: not a number of seconds", s)
	}
	return time.Unix(n, 0), nil
}
