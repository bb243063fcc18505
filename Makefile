# cualake: `make demo` runs the main job, `make test` the tests. Both set
# themselves up first (apt-get, go, npm), so a fresh machine needs nothing else.
GO ?= go
BIN := ./bin
STAGES := synthesize rollout segment sample train audit
LAKE ?= ./data/lake

.PHONY: setup build test bench bench-startup bench-scaling bench-segments bench-check demo fmt vet clean

setup:
	@scripts/setup.sh

# bin/cualake is built without libtorch (-tags notorch) and hands the commands
# that load a model (cmd/internal/cli/torch.go: torchCommands) to
# bin/cualake-torch, the same commands with libtorch, so the others start fast.
build: setup
	@mkdir -p $(BIN)
	$(GO) build -tags notorch -o $(BIN)/cualake ./cmd/cualake
	$(GO) build -o $(BIN)/cualake-torch ./cmd/cualake
	@for s in $(STAGES); do ln -f $(BIN)/cualake $(BIN)/$$s || exit 1; done  # one binary; it runs the stage it is named after

test: build
	$(GO) vet ./...
	$(GO) vet -tags notorch ./cmd/...
	$(GO) test -timeout 60m ./...

bench: build
	@scripts/bench.sh

# start-up of whole processes alone (a few minutes): bench/startup.md
bench-startup: build
	@mkdir -p bench/out/startup
	@scripts/bench-machine.sh > bench/out/startup/machine.txt
	@scripts/bench-startup.sh bench/out/startup 5
	@go run bench/report.go bench/out/startup bench/startup.md

# the scaling tables alone (inputs cached under bench/out/scaling/input; the
# first run generates them): their section of bench/results.md is replaced,
# the rest kept. BENCH_QUICK=1 runs the two smallest sizes of each.
bench-scaling: build
	@scripts/bench-scaling.sh bench/out
	@go run bench/report.go -only scaling bench/out bench/results.md > /dev/null
	@echo "bench-scaling: bench/results.md (section Scaling)"

# ScaleCUA Fig. 6(b) and Fig. 5 alone (12.5 min on 2 cores): rebuilds
# the committed rollouts with this build, then trains each segmentation;
# the section of bench/results.md is replaced (naming this run's machine,
# date and code version), the rest kept.
bench-segments: build
	@mkdir -p bench/out
	@rm -rf bench/out/seg-lake bench/out/seg-lake.ready bench/out/seg-*.json
	@{ scripts/bench-machine.sh; echo "code=$$($(BIN)/cualake --version | awk '{print $$NF}')"; } > bench/out/segments-machine.txt
	@scripts/bench-segments.sh > bench/out/segments.log 2>&1 || { tail -20 bench/out/segments.log; exit 1; }
	@go run bench/report.go -only segments bench/out bench/results.md > /dev/null
	@echo "bench-segments: bench/results.md (section Visual Context Segmentation)"

# a quick run (each measurement once) against the committed table: prints the
# rows that moved by more than 2x. For people, not a CI gate.
bench-check: build
	@BENCH_QUICK=1 BENCH_OUT=bench/out-quick BENCH_RESULTS=bench/out-quick/results.md scripts/bench.sh > bench/out-quick.log 2>&1 || { tail -20 bench/out-quick.log; exit 1; }
	@go run bench/check.go bench/results.md bench/out-quick/results.md

demo: build
	$(BIN)/cualake run --config examples/demo.yaml --lake $(LAKE)

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN) $(LAKE)
