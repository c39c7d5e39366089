#!/usr/bin/env bash
# scripts/slurm/test.sh: checks that bin/train runs data-parallel under Slurm.
#
# It starts a private one-node Slurm cluster on this machine (munged,
# slurmctld and slurmd, as root, all state in a temp folder, no systemd and
# no cgroups needed), then
#   (a) srun -N1 -n2 --mpi=$MPI bin/train ...  (a short Fashion-MNIST run)
#   (b) sbatch deploy/slurm/train.sbatch       (the documented job script)
# and checks that each trained as 2 ranks, exited 0 and wrote its run
# folder. Everything it started is stopped, and its temp folder removed, on
# success and on failure.
#
# Usage (as root, from anywhere):  scripts/slurm/test.sh
# Environment:
#   MPI=pmix           srun's MPI plugin (`srun --mpi=list`; see below)
#   SLURM_TEST_PORT=16817  slurmctld's port; slurmd takes the next one
#   KEEP=1             keep the temp folder (logs) after the test
#   HORA_TRAIN=FILE    test this trainer instead of bin/train
#
# It installs Debian's slurm-wlm and munge (apt-get) when they are missing,
# and builds bin/train with `make build` when it is missing.
#
# Why pmix: Debian's OpenMPI 4.1 is built against PMIx (ompi_info lists
# the pmix ext3x component and no s1/s2 PMI-1/PMI-2 components), so ranks
# started by srun find each other through Slurm's mpi/pmix plugin (Debian's
# slurm-wlm-basic-plugins ships mpi_pmix_v4.so, built on the same libpmix2).
# --mpi=pmi2 starts the processes but OpenMPI cannot use it (see the
# report in deploy/README.md).
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MPI=${MPI:-pmix}
PORT=${SLURM_TEST_PORT:-16817}
KEEP=${KEEP:-0}
CONFIG=configs/fashion-mnist-mlp.yaml
# A short run: one epoch over the first 8192 training samples (a few
# seconds on 2 ranks), no live progress bar.
TRAIN_ARGS="-set train.epochs=1 -set train.limit=8192 -set output.progress=false"
# What bin/train prints when it trains on several ranks.
# (the transport in brackets: shared memory on one node, MPI or hierarchical across nodes)
RANKS_LINE='data-parallel over 2 ranks ('

STATE=""         # the temp folder: config, keys, sockets, spool, logs
TRAIN=""         # the copy of bin/train that the test runs
DAEMONS=()       # PIDs of munged, slurmctld, slurmd (all run in the foreground)
FAILED=0

log()  { echo "slurm-test: $*"; }
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILED=1; }
die()  { fail "$*"; exit 1; }

# --- set-up ----------------------------------------------------------------

need_root() {
	if [ "$(id -u)" != 0 ]; then
		echo "slurm-test: needs root: it installs packages and runs munged, slurmctld and slurmd as root (run it with sudo)" >&2
		exit 2
	fi
}

# install_packages installs Debian's Slurm (controller, node daemon,
# client and its plugins, mpi/pmix included) and MUNGE when missing.
install_packages() {
	local missing=() p
	for p in slurm-wlm slurm-wlm-basic-plugins munge openmpi-bin; do
		# (dpkg -s also succeeds for a removed package whose config files remain.)
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} = 0 ] && return 0
	log "installing: ${missing[*]}"
	apt-get update -q
	# --no-install-recommends: the other plugins (MySQL, HDF5, ...) are not needed.
	# The packages' postinst cannot start the daemons here (no systemd); we start them.
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

build_train() {
	[ -n "${HORA_TRAIN:-}" ] && return 0
	if [ ! -x "$ROOT/bin/train" ]; then
		log "bin/train is missing: make build"
		make -C "$ROOT" build
	fi
}

# write_config writes slurm.conf for one node (this host, 127.0.0.1, with
# the CPUs `slurmd -C` finds) and one partition. Nothing needs cgroups or
# systemd: processes are tracked through /proc (proctrack/linuxproc), tasks
# are not bound (task/none) and there is no accounting; so no cgroup.conf.
write_config() {
	local host cpus
	host=$(hostname -s)
	# "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1"
	cpus=$(slurmd -C | head -n1 | grep -o 'CPUs=.*ThreadsPerCore=[0-9]*')
	# -n2 needs 2 CPUs: on a 1-CPU machine, claim 2 (config_overrides
	# makes slurmd trust slurm.conf over the hardware).
	[ "$(nproc)" -lt 2 ] && cpus="CPUs=2"
	mkdir -p "$STATE/ctld" "$STATE/spool" "$STATE/tmp"
	: >"$STATE/plugstack.conf" # no SPANK plugins (/etc/slurm/plugstack.conf is not ours)
	cat >"$STATE/slurm.conf" <<-EOF
		ClusterName=horatest
		SlurmctldHost=$host(127.0.0.1)
		SlurmctldPort=$PORT
		SlurmdPort=$((PORT + 1))
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		CredType=cred/munge
		AuthInfo=socket=$STATE/munge.socket
		StateSaveLocation=$STATE/ctld
		SlurmdSpoolDir=$STATE/spool
		TmpFS=$STATE/tmp
		SlurmctldPidFile=$STATE/slurmctld.pid
		SlurmdPidFile=$STATE/slurmd.pid
		SlurmctldLogFile=$STATE/slurmctld.log
		SlurmdLogFile=$STATE/slurmd.log
		SlurmctldDebug=info
		SlurmdDebug=info
		PlugStackConfig=$STATE/plugstack.conf
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		JobAcctGatherType=jobacct_gather/none
		AccountingStorageType=accounting_storage/none
		JobCompType=jobcomp/none
		SwitchType=switch/none
		MpiDefault=none
		SchedulerType=sched/backfill
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		SlurmdParameters=config_overrides
		ReturnToService=2
		MailProg=/bin/true
		NodeName=$host NodeAddr=127.0.0.1 $cpus State=UNKNOWN
		PartitionName=test Nodes=$host Default=YES MaxTime=00:30:00 State=UP
	EOF
}

# start NAME COMMAND... runs a daemon in the foreground, in the background
# of this script, and remembers its PID for cleanup (which also finds it
# by the marker HORA_SLURM_TEST in its environment).
start() {
	local name=$1
	shift
	HORA_SLURM_TEST=$STATE "$@" >"$STATE/$name.out" 2>&1 &
	DAEMONS+=($!)
	log "started $name (pid $!)"
}

start_munge() {
	# A fresh key for this cluster only.
	dd if=/dev/urandom of="$STATE/munge.key" bs=1024 count=1 status=none
	chmod 0400 "$STATE/munge.key"
	# --force: munged refuses to run as root, and a socket under /tmp,
	# without it.
	start munged munged --foreground --force \
		--key-file="$STATE/munge.key" --socket="$STATE/munge.socket" \
		--pid-file="$STATE/munged.pid" --log-file="$STATE/munged.log" \
		--seed-file="$STATE/munged.seed"
	wait_for 10 "munged's socket" test -S "$STATE/munge.socket"
	munge --socket="$STATE/munge.socket" -n | unmunge --socket="$STATE/munge.socket" >/dev/null ||
		die "munge cannot encode and decode a credential (see $STATE/munged.log)"
}

start_slurm() {
	# -D: foreground; -i: ignore saved state (there is none); -c: clear
	# jobs left from an earlier run.
	start slurmctld slurmctld -D -i -c -f "$STATE/slurm.conf"
	wait_for 20 "slurmctld to answer" timeout 5 scontrol ping
	start slurmd slurmd -D -f "$STATE/slurm.conf"
	wait_for 30 "the node to be idle" node_idle
}

node_idle() { timeout 5 sinfo -h -N -o %t 2>/dev/null | grep -qx idle; }

# wait_for SECONDS WHAT COMMAND... polls COMMAND every half second until it
# succeeds, or fails the test after SECONDS.
wait_for() {
	local secs=$1 what=$2 i
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	die "timed out after ${secs}s waiting for $what"
}

# --- clean-up --------------------------------------------------------------

# cleanup cancels the jobs, stops the daemons this script started, then the
# slurmstepd and job processes left (found by this cluster's SLURM_CONF in
# their environment), prints the logs on failure and removes the temp folder.
cleanup() {
	local rc=$?
	trap - EXIT INT TERM ERR
	[ "$rc" != 0 ] && FAILED=1
	if [ -n "$STATE" ] && [ -d "$STATE" ]; then
		# Cancel the jobs left, and give slurmd time to end their processes.
		timeout 10 scancel --quiet --partition=test >/dev/null 2>&1 || true
		wait_no_jobs 15 || true
		stop_pids "${DAEMONS[@]}"
		local pids
		mapfile -t pids < <(marked_pids)
		stop_pids "${pids[@]}"
		if [ "$FAILED" = 1 ]; then
			local f
			for f in "$STATE"/*.log "$STATE"/*.out; do
				[ -s "$f" ] || continue
				echo "----- last lines of ${f##*/}"
				tail -n 25 "$f"
			done
		fi
		if [ "$KEEP" = 1 ]; then
			log "kept $STATE"
		else
			rm -rf "$STATE"
		fi
	fi
	if [ "$FAILED" = 1 ]; then
		echo "FAIL: scripts/slurm/test.sh"
		exit 1
	fi
	echo "PASS: scripts/slurm/test.sh"
}

# marked_pids lists the processes, other than this script and the subshell
# running this function, whose environment holds this cluster's
# SLURM_CONF or the daemons' marker: the daemons and everything they and
# the jobs started (slurmstepd, batch scripts, ranks).
marked_pids() {
	local d p
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" = $$ ] || [ "$p" = "$BASHPID" ] && continue
		grep -qzxE "(SLURM_CONF=$STATE/slurm.conf|HORA_SLURM_TEST=$STATE)" "$d/environ" 2>/dev/null && echo "$p"
	done
	return 0
}

# stop_pids PID... sends SIGTERM, waits up to 10 s, then SIGKILL (slurmstepd
# ignores SIGTERM).
stop_pids() {
	[ $# = 0 ] && return 0
	kill -TERM "$@" 2>/dev/null || true
	local i p alive
	for ((i = 0; i < 20; i++)); do
		alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && return 0
		sleep 0.5
	done
	kill -KILL "$@" 2>/dev/null || true
}

# --- the checks --------------------------------------------------------------

# count PATTERN FILE prints how many lines of FILE match (0 included,
# without failing the command substitution it runs in).
count() { grep -c -- "$1" "$2" || true; }

# check_run NAME LOG RUNDIR: bin/train trained as 2 ranks and wrote its run.
check_run() {
	local name=$1 out=$2 dir=$3 ok=1
	if grep -qF "$RANKS_LINE" "$out"; then
		pass "$name: $(grep -F "$RANKS_LINE" "$out" | head -n1 | cut -c1-100)"
	else
		fail "$name: no '$RANKS_LINE' in its output"
		ok=0
	fi
	if [ "$(count '^epoch 1/1' "$out")" = 1 ]; then
		pass "$name: $(grep '^epoch 1/1' "$out")"
	else
		fail "$name: expected one 'epoch 1/1' line (one rank 0), got $(count '^epoch 1/1' "$out")"
		ok=0
	fi
	if [ -s "$dir/model.safetensors" ] && [ -s "$dir/metrics.jsonl" ]; then
		pass "$name: run folder written ($(cd "$dir" && echo *))"
	else
		fail "$name: no model.safetensors and metrics.jsonl in $dir"
		ok=0
	fi
	[ "$ok" = 1 ]
}

# run_srun NAME [VAR=VALUE...]: srun -N1 -n2 bin/train, with those extra
# variables in its environment; the output goes to $STATE/NAME.out and the
# run folder to $STATE/run-NAME.
run_srun() {
	local name=$1 out="$STATE/$1.out" dir="$STATE/run-$1" rc=0 t0=$SECONDS
	shift
	log "$name: srun -N1 -n2 --mpi=$MPI bin/train -config $CONFIG $TRAIN_ARGS"
	# shellcheck disable=SC2086
	env "$@" timeout 120 srun -N1 -n2 --mpi="$MPI" --time=5 \
		"$TRAIN" -config "$CONFIG" $TRAIN_ARGS -out "$dir" >"$out" 2>&1 || rc=$?
	sed "s/^/  $name| /" "$out" | grep -v 'samples on cpu' || true
	if [ "$rc" != 0 ]; then
		fail "$name: exit status $rc$([ "$rc" = 124 ] && echo ' (timed out after 120 s)')"
		return 1
	fi
	pass "$name: exit status 0 in $((SECONDS - t0)) s"
	check_run "$name" "$out" "$dir"
}

test_srun() {
	run_srun srun && return 0
	# bin/train finds out that it is one of several ranks from its
	# environment (dist.LauncherSize: under srun --mpi=pmix,
	# SLURM_STEP_NUM_TASKS; srun sets no PMIX_SIZE). Tell whether a
	# launch it did not recognise is the failure: the same run with
	# PMIX_SIZE set by hand.
	if [ "$(count '^epoch 1/1' "$STATE/srun.out")" = 2 ]; then
		fail "srun: each of the 2 ranks trained alone: bin/train did not see that srun started it as 2 ranks (srun --mpi=$MPI sets PMIX_RANK and SLURM_STEP_NUM_TASKS=2, no PMIX_SIZE)"
		if run_srun srun-pmix-size PMIX_SIZE=2; then
			echo "INFO: with PMIX_SIZE=2 set by hand the same srun trains as 2 ranks: dist.LauncherSize needs to recognize srun's launch"
		fi
	fi
	return 0
}

test_sbatch() {
	local dir="$STATE/run-sbatch" out="$STATE/sbatch-%j.out" id state rc info t0=$SECONDS
	log "sbatch deploy/slurm/train.sbatch ..."
	id=$(TRAIN=$TRAIN CONFIG=$CONFIG OUT=$dir ARGS=$TRAIN_ARGS HORA_SRUN_MPI=$MPI \
		timeout 30 sbatch --parsable --output="$out" --time=5 deploy/slurm/train.sbatch) ||
		{ fail "sbatch did not submit the job"; return 0; }
	out=${out//%j/$id}
	log "job $id submitted"
	# The job is done when squeue no longer lists it.
	if ! wait_job "$id" 120; then
		fail "sbatch job $id: not done after 120 s"
		timeout 10 scancel "$id" || true
		return 0
	fi
	# Its end state and exit code, as slurmctld keeps them for a while
	# (MinJobAge, 300 s) after the job ends; there is no accounting database.
	info=$(timeout 10 scontrol -o show job "$id" 2>&1) || true
	state=$(grep -o 'JobState=[A-Z_]*' <<<"$info" | cut -d= -f2) || state="?"
	rc=$(grep -o ' ExitCode=[0-9:]*' <<<"$info" | cut -d= -f2) || rc="?"
	sed 's/^/  sbatch| /' "$out" | grep -v 'samples on cpu' || true
	if [ "$state" = COMPLETED ] && [ "$rc" = 0:0 ]; then
		pass "sbatch job $id: $state, exit code $rc, in $((SECONDS - t0)) s"
	else
		fail "sbatch job $id: state $state, exit code $rc"
		return 0
	fi
	check_run "sbatch" "$out" "$dir" || true
}

# wait_no_jobs SECONDS: until squeue lists no job (or cannot ask slurmctld).
wait_no_jobs() {
	local secs=$1 i jobs
	for ((i = 0; i < secs * 2; i++)); do
		jobs=$(timeout 5 squeue -h -o %i 2>/dev/null) || return 1
		[ -z "$jobs" ] && return 0
		sleep 0.5
	done
	return 1
}

# wait_job ID SECONDS: until squeue no longer lists job ID as pending or
# running; fails after SECONDS.
wait_job() {
	local id=$1 secs=$2 i jobs
	for ((i = 0; i < secs * 2; i++)); do
		jobs=$(timeout 10 squeue -h -j "$id" -o %i 2>/dev/null) || jobs="?"
		[ -z "$jobs" ] && return 0
		sleep 0.5
	done
	return 1
}

main() {
	need_root
	install_packages
	build_train
	cd "$ROOT"

	STATE=$(mktemp -d /tmp/hora-slurm-test.XXXXXX)
	chmod 0700 "$STATE"
	trap cleanup EXIT
	# A command that fails and stops the script (set -e) says so.
	trap 'fail "line $LINENO: \"$BASH_COMMAND\" failed with status $?"' ERR
	trap 'fail "interrupted"; exit 130' INT TERM
	# The clients (srun, sbatch, scontrol, ...) and the daemons read this config.
	export SLURM_CONF="$STATE/slurm.conf"
	# Settings of the user's shell that would change what srun asks for.
	unset SLURM_JOB_ID SLURM_JOBID SLURM_NTASKS SLURM_NNODES SLURM_MPI_TYPE

	# A copy of bin/train, so that a rebuild during the test cannot
	# pull it away from the ranks.
	TRAIN=$STATE/train
	cp "${HORA_TRAIN:-$ROOT/bin/train}" "$TRAIN"

	write_config
	start_munge
	start_slurm
	pass "one-node Slurm up: $(sinfo -h -N -o '%N %t %c CPUs') ($(srun --version))"
	log "srun --mpi=list: $(srun --mpi=list 2>&1 | tr -s '\n ' ' ')"

	test_srun
	test_sbatch
}

main "$@"
