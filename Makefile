# nodegc — see README.md. Every target works on a fresh Debian machine as root.
GO      ?= go
BIN     := bin/nodegc
PKGS    := ./...
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build plugin image test deps kube bench bench-cost bench-gc demo lint sandbox sandbox-down screenshots clean

# build: a static binary (no libc), to copy onto any node whatever its
# distribution; the image holds the same build, stripped (-s -w).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nodegc

# plugin links bin/kubectl-nodegc to the binary: on PATH, `kubectl nodegc`
# is `nodegc fleet` (the binary looks at the name it runs under).
plugin: build
	ln -sf nodegc bin/kubectl-nodegc

# image writes nodegc's container image as an OCI archive ($(IMAGE_ARCHIVE))
# with no Docker daemon: the static binary (CGO_ENABLED=0) as the one layer,
# entrypoint ["/nodegc", "agent"], tagged $(IMAGE). Import it on a node with
# `ctr -n k8s.io images import`, push it with `skopeo copy
# oci-archive:$(IMAGE_ARCHIVE) docker://$(IMAGE)`. The same commit gives the
# same digests (SOURCE_DATE_EPOCH is the commit's time).
IMAGE_REPO    ?= ghcr.io/nodegc/nodegc
IMAGE_TAG     ?= $(subst +,-,$(VERSION))
IMAGE         ?= $(IMAGE_REPO):$(IMAGE_TAG)
IMAGE_ARCHIVE ?= bin/nodegc-image.tar
GOARCH        ?= $(shell $(GO) env GOARCH)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)

image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' -o bin/image/nodegc ./cmd/nodegc
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./tools/mkimage --binary bin/image/nodegc --arch $(GOARCH) \
		--ref $(IMAGE) --version $(VERSION) -o $(IMAGE_ARCHIVE)

# deps installs what the real-runtime suite needs (containerd 1.6 and runc
# from Debian) when it is missing, and builds containerd 2 from source once
# (cached by version under $${NODEGC_CACHE:-/var/cache/nodegc}; the suite runs
# on both). Without root it says so and the suite skips (fails in CI).
deps:
	@./scripts/install-deps.sh
	@if [ "$$(id -u)" = 0 ]; then GO=$(GO) ./scripts/build-containerd2.sh >/dev/null; \
	else echo "deps: not root, containerd 2 not built; the real-runtime tests will skip" >&2; fi

# kube builds the real kubelet, kube-apiserver, kube-controller-manager,
# kube-scheduler and kubectl that test/kubelet and test/cluster run beside
# nodegc (version from tools/kube/go.mod) into a versioned cache dir; the
# tests find them through NODEGC_KUBE_DIR. The first build takes 10-35
# minutes on 2 cores, by load; later runs find the binaries and skip it.
KUBE_VERSION := $(shell awk '$$1 == "require" && $$2 == "k8s.io/kubernetes" {print $$3}' tools/kube/go.mod)
NODEGC_CACHE ?= /var/cache/nodegc
NODEGC_KUBE_DIR ?= $(NODEGC_CACHE)/kube-$(KUBE_VERSION)
export NODEGC_KUBE_DIR

kube:
	@GO='$(GO)' ./scripts/build-kube.sh

# test/kubelet and test/cluster run real kubelets, test/fleet a hundred
# agents behind a kube-apiserver; they run after the other
# packages and one after the other, not beside them, since nodegc reads the
# running kubelet's command line as on a real node. The engine, the
# dashboard, the CLI and the simulated node run once more under the race
# detector.
test: deps kube
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 45m $$($(GO) list $(PKGS) | grep -v -e '/test/kubelet$$' -e '/test/cluster$$' -e '/test/fleet$$')
	$(GO) test -race -count=1 -timeout 15m ./engine/... ./tui/... ./cmd/... ./internal/simnode
	$(GO) test -count=1 -timeout 30m ./test/kubelet
	$(GO) test -count=1 -timeout 50m ./test/cluster
	$(GO) test -count=1 -timeout 20m ./test/fleet

# bench prints the figures quoted in docs/performance.md. The
# real-runtime benchmarks need root (they start containerd) and skip without.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./engine ./cgroupfs
	$(GO) test -run '^$$' -bench 'BenchmarkListAll$$|BenchmarkPlan$$' -benchtime 3x -benchmem ./engine/cri
	$(GO) test -run '^$$' -bench PlanScale -benchtime 3x -benchmem ./cmd/nodegc
	$(GO) test -run '^$$' -bench PlanCost -benchtime 5x -timeout 60m ./cmd/nodegc
	$(GO) test -run '^$$' -bench . -benchtime 20x -benchmem ./tui
	$(GO) test -run '^$$' -bench 'RealGC50Images|CtrRm50Images' -benchtime 5x ./test/integration
	$(GO) test -run '^$$' -bench ContainerDeathToScreen -benchtime 10x ./test/e2e

# bench-cost measures issue 22's two plan figures side by side in one run,
# each whole process against its bare baseline (internal/bare): `nodegc plan
# -o json` against `nodegc simnode --images 10000 --pods 20000
# --dead-per-container 5` vs the generated CRI clients listing the same
# socket, and `nodegc plan --from` a snapshot of that node vs decoding the
# file into typed structs. NODEGC_BENCH_SNAPSHOT=<file> reuses a snapshot.
bench-cost:
	$(GO) test -run '^$$' -bench PlanCost -benchtime 5x -timeout 60m ./cmd/nodegc

# bench-gc measures a GC pass against the runtime's own speed, side by side
# in one run (issues 14 and 22): on the simulated node (2,000 images; 1,000,
# 6,000 and 20,000 containers) the image and container passes against raw
# concurrent CRI removals of the same IDs, and the CPU time each pass costs;
# on each real containerd (root)
# the whole `nodegc gc --reclaim-all --yes` process over 400 images, at the
# default pool and at --parallel 1, against raw RemoveImage loops of 4, 8,
# 16 and 32 in flight, with a probe making the kubelet PLEG's calls every
# 50 ms (3 rounds, each variant once a round). OLD_NODEGC=<binary> times
# an older build beside it.
bench-gc:
	$(GO) test -run '^$$' -bench GCPassVsRaw -benchtime 7x -timeout 30m ./engine/cri
	$(GO) test -run '^$$' -bench GCPassCPU -benchtime 7x -timeout 30m ./engine/cri
	$(GO) test -run '^$$' -bench GCPassFloor -benchtime 5x -timeout 30m ./engine/cri
	NODEGC_REQUIRE_CONTAINERD=1 NODEGC_BENCH_OLD_BIN=$(OLD_NODEGC) $(GO) test -run '^$$' -bench GCPoolVsRaw -benchtime 1x -timeout 90m -v ./test/integration

demo: build
	./$(BIN) --demo

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	$(GO) vet $(PKGS)

# sandbox starts a real private containerd on a 256 MiB tmpfs with a seeded
# workload and prints the --runtime-endpoint to use: Debian's containerd 1.6,
# or containerd 2 built from source with RUNTIME=containerd2.
RUNTIME ?= containerd1
sandbox:
	./scripts/sandbox.sh up --runtime $(RUNTIME)

sandbox-down:
	./scripts/sandbox.sh down

# screenshots regenerates screenshots/*.png from the real binary on the
# simulated node (tmux capture-pane, rendered with freeze).
screenshots: build
	./scripts/screenshots.sh

clean:
	rm -rf bin
