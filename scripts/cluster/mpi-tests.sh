#!/usr/bin/env bash
# mpi-tests.sh: the MPI transport's tests across hosts, on a cluster of
# this machine (scripts/cluster/cluster, as root): the test binary of
# dist/mpi (the conformance suite on MPI_COMM_WORLD and on the
# communicator Init arranges, training equivalence, sub-communicators,
# AllreduceMany) under mpirun as
#   2 hosts × 2 ranks  (hierarchical: shared memory + MPI between hosts)
#   2 hosts × 1 rank   (MPI alone: nothing to share on a host)
#   3 hosts × 1 rank   (MPI alone)
#   2 hosts, 3 + 1     (hierarchical with one share: a leader per host)
# and dist/shm's tests (the hierarchical allreduce over dist/local ranks).
# Links are unshaped (RATE=1gbit shapes them). About a minute.
#
# Environment: BIN (default bin) holds the test binaries; HORA_CLUSTER
# names the cluster (default hora). When that cluster exists already (someone
# else's run), it waits for it to go, up to 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
C=$PWD/scripts/cluster/cluster
BIN=${BIN:-bin}
RATE=${RATE:-none}
export HORA_CLUSTER=${HORA_CLUSTER:-hora}

go test -c -tags mpi -o "$BIN/mpi.test" ./dist/mpi
go test -count=1 ./dist/shm

for i in $(seq 1 20); do
	ip netns list | grep -q "^$HORA_CLUSTER-" || break
	[ "$i" = 20 ] && { echo "mpi-tests.sh: cluster $HORA_CLUSTER still up after 10 minutes" >&2; exit 1; }
	echo "mpi-tests.sh: cluster $HORA_CLUSTER is in use; waiting" >&2
	sleep 30
done
trap '"$C" down >/dev/null 2>&1 || true' EXIT
"$C" up 3 "$RATE"
# Each host gets its own copy: the repository may lie under /tmp, which
# the hosts do not share.
"$C" install "$BIN/mpi.test" /tmp/hora/mpi.test

run() { # run LAYOUT HOSTS NP: the test binary on HOSTS (mpirun's --host)
	echo "== $1: mpirun --host $2 -np $3"
	local start=$SECONDS
	"$C" mpirun --host "$2" -np "$3" /tmp/hora/mpi.test -test.timeout 5m
	echo "== $1: passed in $((SECONDS - start)) s"
}
run "2 hosts × 2 ranks" node1:2,node2:2 4
run "2 hosts × 1 rank" node1:1,node2:1 2
run "3 hosts × 1 rank" node1:1,node2:1,node3:1 3
run "2 hosts, 3 + 1 ranks" node1:3,node2:1 4
echo "mpi-tests.sh: all passed"
