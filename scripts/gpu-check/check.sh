#!/usr/bin/env bash
# check.sh REPORT_DIR: the one-shot GPU check. `make gpu-check` copies this
# script into the bundle (build/gpu) beside the binaries it runs; on a GPU
# machine, with no Go, run it from anywhere as
#
#   bash build/gpu/check.sh REPORT_DIR
#
# It writes REPORT_DIR/summary.txt (printed at the end) and one log per
# step, in this order:
#
#   env    nvidia-smi, driver and CUDA versions, the libraries Hora finds
#   cuda   the device/cuda tests on the GPU (HORA_CUDA_TEST=gpu)
#   nccl   the dist/nccl tests on the GPU
#   train  one epoch of configs/fashion-mnist-cnn.yaml on the GPU in fp32,
#          bf16 and fp16, and on this machine's CPU, with test accuracy and
#          samples/s
#   bench  bench/gpu/run.sh against PyTorch on the same GPU (one repetition)
#   profile  where Nsight Compute (ncu) works: the GPU time of each kernel
#          of Hora's CNN step at batch 1024 and ResNet-18 step at batch 128
#          (one metric, one replay pass), the top kernels in the summary
#
# Each step runs under its own time limit (a hang costs that step only) and
# a failing step does not stop the next. The whole check stays within 8
# minutes wall time on an H100/H200.
#
# Environment:
#   STEPS="env cuda nccl train bench profile"  the steps to run, in order
#   DEVICE=cuda   the device of the train and bench steps; DEVICE=cpu with
#                 SMALL=1 dry-runs the script on a machine without a GPU
#                 (the cuda and nccl steps then run on the CUDA emulator
#                 when HORA_CUDA_LIBS points at it)
#   SMALL=1       tiny runs: train on 2048 samples, bench at smoke sizes
#   PYTHON        a Python with PyTorch [python3]
#   LIMIT_<STEP>  a step's time limit in seconds (LIMIT_CUDA=240 ...)
#
# Exit status: 0 when every step passed, 1 otherwise.
set -uo pipefail

[ $# -eq 1 ] || { echo "usage: bash check.sh REPORT_DIR" >&2; exit 2; }
bundle=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1" || exit 2
report=$(cd "$1" && pwd)
steps=${STEPS:-env cuda nccl train bench profile}
dev=${DEVICE:-cuda}
small=${SMALL:-0}
python=${PYTHON:-python3}
summary=$report/summary.txt
: >"$summary"
start=$SECONDS

# The binaries travel gzipped (the bundle stays under 60 MB); they are
# unpacked next to the report.
bin=$report/bin
mkdir -p "$bin"
for gz in "$bundle"/bin/*.gz; do
	b=$bin/$(basename "$gz" .gz)
	[ -x "$b" ] || { gunzip -c "$gz" >"$b" && chmod +x "$b"; }
done
export HORA_CACHE_DIR=$report/kernel-cache # a cold NVRTC cache: compile times count

say() { echo "$*" | tee -a "$summary"; }

# limit STEP DEFAULT: the step's time limit in seconds.
limit() {
	local v="LIMIT_${1^^}"
	echo "${!v:-$2}"
}

# run STEP LIMIT LOG CMD...: runs CMD under LIMIT seconds, output in LOG;
# returns its status (124 when the limit killed it).
run() {
	local name=$1 secs=$2 log=$3
	shift 3
	echo "gpu-check: $name (limit ${secs} s, $((SECONDS - start)) s so far)" >&2
	timeout -k 5 "$secs" "$@" >"$log" 2>&1
	local rc=$?
	[ $rc -ne 124 ] && [ $rc -ne 137 ] || echo "gpu-check: $name: stopped after its limit of $secs s" >>"$log"
	return $rc
}

# verdict NAME RC SECONDS [DETAIL]: one summary line per step.
failed=0
verdict() {
	local word=PASS
	case $2 in
	0) ;;
	124 | 137) word=TIMEOUT failed=1 ;;
	*) word=FAIL failed=1 ;;
	esac
	say "$(printf '%-8s %-20s %4ss  %s' "$word" "$1" "$3" "${4:-}")"
}

step_env() {
	local log=$report/env.txt t0=$SECONDS
	{
		echo "== date"; date -u
		echo "== host"; uname -a; nproc; grep -m1 "model name" /proc/cpuinfo
		echo "== nvidia-smi"; nvidia-smi 2>&1
		echo "== GPU, driver"
		nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
		echo "== PyTorch"
		"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "gpu", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' 2>&1
		echo "== where PyTorch's CUDA libraries are"
		"$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>&1
		echo "== the libraries Hora finds"
		"$bin/hora-gpu-bench" -libs 2>&1
	} >"$log" 2>&1
	local gpu driver cuda
	gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
	driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
	cuda=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
	verdict env 0 $((SECONDS - t0)) "GPU ${gpu:-none}, driver ${driver:-none}, CUDA ${cuda:-none}"
	grep -E '^(driver|NVRTC|cuBLAS|NCCL|cuDNN) ' "$log" | sed 's/^/         /' | tee -a "$summary"
}

# gotest NAME BINARY: a Go test binary on the GPU, failures listed by name.
# On a GPU a skipped test is listed too: there it hides a missing library.
gotest() {
	local name=$1 test=$2 log=$report/$1.txt t0=$SECONDS rc
	local env=(HORA_CUDA_TEST=gpu)
	[ "$dev" = cuda ] || env=() # a dry run: the emulator
	run "$name" "$(limit "$name" 240)" "$log" env "${env[@]}" "$bin/$test" -test.v -test.count=1 -test.timeout=10m
	rc=$?
	local pass fail skip
	pass=$(grep -c -- '^ *--- PASS' "$log")
	fail=$(grep -c -- '^ *--- FAIL' "$log")
	skip=$(grep -c -- '^ *--- SKIP' "$log")
	verdict "$name tests" $rc $((SECONDS - t0)) "$pass passed, $fail failed, $skip skipped"
	# The failed tests, then the first messages of failed checks (the lines
	# that t.Errorf prints, "file_test.go:LINE: ...").
	grep -- '^ *--- FAIL' "$log" | sed 's/^ */         /' | tee -a "$summary"
	[ "$fail" = 0 ] || grep -E '^ +[A-Za-z0-9_]+_test\.go:[0-9]+: ' "$log" | head -12 | cut -c1-200 | sed 's/^ */           /' | tee -a "$summary"
	# A skipped test and its reason (printed just before "--- SKIP").
	grep -B1 -- '^ *--- SKIP' "$log" | grep -v -e '^--$' -e '=== ' | head -8 | cut -c1-200 | sed 's/^ */         /' | tee -a "$summary"
}

step_cuda() { gotest cuda cuda.test; }
step_nccl() { gotest nccl nccl.test; }

# train1 LABEL DEVICE PRECISION: one epoch of the CNN; prints its result.
train1() {
	local label=$1 device=$2 precision=$3 out=$report/runs/$1 t0=$SECONDS rc
	local args=(-config "$bundle/configs/fashion-mnist-cnn.yaml" -out "$out" -overwrite -q
		-set "device=$device" -set "precision=$precision" -set train.epochs=1
		-set "data.dir=$bundle/data")
	[ "$small" = 1 ] && args+=(-set train.limit=2048)
	run "train $label" "$(limit train 150)" "$report/train-$label.txt" "$bin/train" "${args[@]}"
	rc=$?
	local detail
	detail=$("$python" - "$out/metrics.jsonl" <<-'EOF' 2>/dev/null
		import json, sys
		last = None
		for line in open(sys.argv[1]):
		    r = json.loads(line)
		    if r.get("kind") == "epoch":
		        last = r
		print("test accuracy %.4f, %.0f samples/s, epoch %.1f s" % (last["test_accuracy"], last["samples_per_sec"], last["seconds"]))
	EOF
	)
	[ -n "$detail" ] || detail="no epoch record (see train-$label.txt: $(tail -1 "$report/train-$label.txt" | cut -c1-120))"
	verdict "train $label" $rc $((SECONDS - t0)) "$detail"
}

step_train() {
	if [ "$dev" = cuda ]; then
		for p in fp32 bf16 fp16; do train1 "cuda-$p" cuda "$p"; done
	fi
	train1 cpu cpu fp32
	# The GPU runs must reach the CPU's accuracy (±0.01) in fp32 and bf16.
	"$python" - "$report/runs" <<-'EOF' | tee -a "$summary"
		import json, os, sys
		acc = {}
		for run in sorted(os.listdir(sys.argv[1])):
		    try:
		        recs = [json.loads(l) for l in open(os.path.join(sys.argv[1], run, "metrics.jsonl"))]
		        acc[run] = [r for r in recs if r.get("kind") == "epoch"][-1]["test_accuracy"]
		    except (OSError, IndexError, KeyError, ValueError):
		        pass
		cpu = acc.get("cpu")
		for run in ("cuda-fp32", "cuda-bf16"):
		    if cpu is not None and run in acc:
		        ok = abs(acc[run] - cpu) <= 0.01
		        print("%-8s %-20s        %s %.4f against the CPU's %.4f (within 0.01 required)" % ("PASS" if ok else "FAIL", run + " accuracy", run, acc[run], cpu))
	EOF
	grep -q '^FAIL .* accuracy' "$summary" && failed=1
	return 0
}

step_bench() {
	local log=$report/bench.txt t0=$SECONDS rc
	local env=(HORA_GPU_BENCH="$bin/hora-gpu-bench" REPEAT=1 MIN_TIME="${MIN_TIME:-1}"
		ONNX="$report/resnet18-64.onnx" BENCH_JSON="$report/bench.jsonl" PYTHON="$python")
	if [ "$dev" = cuda ]; then env+=(DEVICE=cuda:0); else env+=(DEVICE=cpu); fi
	[ "$small" = 1 ] && env+=(SMALL=1)
	run bench "$(limit bench 240)" "$log" env "${env[@]}" bash "$bundle/bench/gpu/run.sh"
	rc=$?
	verdict "bench vs PyTorch" $rc $((SECONDS - t0)) "table in bench.txt"
	[ $rc -ne 0 ] || sed -n '/^|/p' "$log" | sed 's/^/         /' | tee -a "$summary"
}

# profile1 NAME SKIP COUNT ARGS...: ncu's per-kernel GPU time of COUNT
# kernels after SKIP (past the warm-up) of hora-gpu-bench ARGS.
profile1() {
	local name=$1 skip=$2 count=$3 log=$report/profile-$1.txt t0=$SECONDS rc
	shift 3
	run "profile $name" "$(limit profile 75)" "$log" ncu --clock-control none --metrics gpu__time_duration.sum \
		--launch-skip "$skip" --launch-count "$count" --print-summary per-kernel \
		"$bin/hora-gpu-bench" -resident=false "$@"
	rc=$?
	verdict "profile $name" $rc $((SECONDS - t0)) "$count kernels after $skip, in profile-$name.txt"
	[ $rc -ne 0 ] || "$python" - "$log" <<-'EOF' | tee -a "$summary"
		# ncu's per-kernel summary: "NAME (grid)x(block), ..., Invocations N",
		# then a table whose gpu__time_duration.sum row ends with the average.
		import re, sys
		total, name, calls = {}, None, 1
		scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
		for line in open(sys.argv[1], errors="replace"):
		    m = re.match(r"\s+(\S.*?) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\).*Invocations (\d+)", line)
		    if m:
		        name, calls = m.group(1).split("<")[0][:60], int(m.group(2))
		        continue
		    m = re.search(r"gpu__time_duration\.sum\s+(\S+)\s+\S+\s+\S+\s+(\S+)", line)
		    if m and name:
		        t = total.setdefault(name, [0.0, 0])
		        t[0] += float(m.group(2).replace(",", "")) * scale.get(m.group(1), 1.0) * calls
		        t[1] += calls
		        name = None
		all_us = sum(t for t, _ in total.values()) or 1
		print("           %d kernel launches, %.0f us of GPU time" % (sum(n for _, n in total.values()), all_us))
		for k, (t, n) in sorted(total.items(), key=lambda kv: -kv[1][0])[:6]:
		    print("           %5.1f%%  %9.1f us  %4d x  %s" % (100 * t / all_us, t, n, k))
	EOF
}

step_profile() {
	if [ "$dev" != cuda ] || ! command -v ncu >/dev/null; then
		say "SKIP     profile                     no GPU or no ncu"
		return
	fi
	# -min-time keeps the timed loop going while ncu replays each kernel
	# (tens of milliseconds apiece), so that whole steps are profiled.
	profile1 cnn-1024 200 150 -min-time 5s -batch 1024 cnn
	[ -s "$report/resnet18-64.onnx" ] && profile1 resnet18-128 1200 400 -min-time 12s -onnx "$report/resnet18-64.onnx" resnet18
}

for s in $steps; do
	case $s in
	env | cuda | nccl | train | bench | profile) "step_$s" ;;
	*) say "FAIL     unknown step $s (known: env cuda nccl train bench profile)"; failed=1 ;;
	esac
done
say "gpu-check: done in $((SECONDS - start)) s; report in $report"
exit $failed
