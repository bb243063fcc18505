# cualake: `make demo` runs the main job, `make test` the tests. Both set
# themselves up first (apt-get, go, npm), so a fresh machine needs nothing else.
GO ?= go
BIN := ./bin
STAGES := synthesize rollout segment sample train audit
LAKE ?= ./data/lake

.PHONY: setup build test bench demo fmt vet clean

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

demo: build
	$(BIN)/cualake run --lake $(LAKE)

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN) $(LAKE)
