# nodegc — see README.md. Every target works on a fresh Debian machine as root.
GO      ?= go
BIN     := bin/nodegc
PKGS    := ./...
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build test deps kube bench demo lint sandbox sandbox-down screenshots clean

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/nodegc

# deps installs what the real-runtime suite needs (containerd, runc) when it is
# missing; without root it says so and the suite skips (fails in CI).
deps:
	@./scripts/install-deps.sh

# kube builds the real kubelet and kube-apiserver that test/kubelet runs
# beside nodegc (version from tools/kube/go.mod) into a versioned cache dir;
# the tests find them through NODEGC_KUBE_DIR. Not yet a step of make test:
# the first build was not verified on this machine before landing.
KUBE_VERSION := $(shell awk '$$1 == "require" && $$2 == "k8s.io/kubernetes" {print $$3}' tools/kube/go.mod)
NODEGC_CACHE ?= /var/cache/nodegc
NODEGC_KUBE_DIR ?= $(NODEGC_CACHE)/kube-$(KUBE_VERSION)
export NODEGC_KUBE_DIR

kube:
	@GO='$(GO)' ./scripts/build-kube.sh

test: deps
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 45m $(PKGS)

# bench prints the figures quoted in README.md's Performance section. The
# real-runtime benchmarks need root (they start containerd) and skip without.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./engine ./cgroupfs
	$(GO) test -run '^$$' -bench 'BenchmarkListAll$$|BenchmarkPlan$$' -benchtime 3x -benchmem ./engine/cri
	$(GO) test -run '^$$' -bench PlanScale -benchtime 3x -benchmem ./cmd/nodegc
	$(GO) test -run '^$$' -bench . -benchtime 20x -benchmem ./tui
	$(GO) test -run '^$$' -bench . -benchtime 5x ./test/integration

demo: build
	./$(BIN) --demo

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi
	$(GO) vet $(PKGS)

# sandbox starts a real private containerd (Debian's package) on a 256 MiB
# tmpfs with a seeded workload and prints the --runtime-endpoint to use.
sandbox:
	./scripts/sandbox.sh up

sandbox-down:
	./scripts/sandbox.sh down

# screenshots regenerates screenshots/*.png from the real binary on the
# simulated node (tmux capture-pane, rendered with freeze).
screenshots: build
	./scripts/screenshots.sh

clean:
	rm -rf bin
