// hora_mpi.h declares the C side of package mpi: thin wrappers over the
// MPI calls that the package makes (so that Go never handles MPI's
// predefined handles or macros such as MPI_IN_PLACE), the float16 type and
// its reduction ops, and a polling helper for nonblocking collectives.

#ifndef HORA_MPI_H
#define HORA_MPI_H

#include <stdint.h>
#include <mpi.h>

// Element types, numbered like device.DType.
enum { HORA_F32 = 1, HORA_F64 = 2, HORA_I64 = 3, HORA_F16 = 4 };

// Reductions, numbered like dist.ReduceOp (average is a sum here).
enum { HORA_SUM = 1, HORA_AVG = 2, HORA_MIN = 3, HORA_MAX = 4 };

// Communicators are numbered: 0 is MPI_COMM_WORLD; hora_split numbers
// the ones it makes, up to HORA_MAX_COMMS in all.
#define HORA_MAX_COMMS 64

// hora_split's color for the ranks of parent on this host.
#define HORA_SPLIT_HOST (-2)

// hora_init initializes MPI and returns this rank's place in MPI_COMM_WORLD
// and among the ranks on its host.
int hora_init(int *provided, int *rank, int *size, int *local_rank, int *local_size);
// hora_split makes the communicator of the ranks of parent with the same
// color (MPI_Comm_split: ordered by key, then rank; a negative color joins
// none and returns *id = -1), or, with HORA_SPLIT_HOST, of those on this
// host (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED). It is collective over
// parent and blocks. It sets *id and this rank's place in the new
// communicator.
int hora_split(int parent, int color, int key, int *id, int *rank, int *size, int *local_rank, int *local_size);
// hora_comm_free frees a communicator of hora_split.
int hora_comm_free(int id);
// hora_finalize frees the communicators and calls MPI_Finalize.
int hora_finalize(void);
void hora_abort(int code);
void hora_error_string(int code, char *buf, int len);

// The outcomes of a collective (*state): completed, abandoned because
// hora_cancel(HORA_CANCELED) was called, or abandoned by MPI_Abort (which
// does not return).
enum { HORA_DONE = 0, HORA_CANCELED = 1, HORA_ABORT = 2 };

// hora_cancel makes the collective running on the MPI thread stop polling
// and return with *state = why (HORA_CANCELED), or call MPI_Abort
// (HORA_ABORT, which stays set). Any thread may call it.
void hora_cancel(int why);

// hora_reset_cancel clears a HORA_CANCELED left by the last collective.
void hora_reset_cancel(void);

// The collectives. Each runs to completion on the calling (MPI) thread
// in one call, so that the Go runtime is not involved until it ends:
// reductions and broadcasts in pieces of at most piece_bytes, each a
// nonblocking collective polled with MPI_Test (spinning at first, then
// sleeping between tests) until it completes or hora_cancel is called.
// They run on communicator id, return an MPI error code and set *state.
//
// hora_allreduce_many reduces the concatenation of nbufs buffers (counts[i]
// elements at bufs[i]) in pieces of piece_bytes (the last one shorter): a
// piece that lies in one buffer in place, the others in a staging area,
// gathered while the piece before them is reduced and scattered back
// while the piece after them is.
int hora_allreduce_many(int id, void *const *bufs, const int64_t *counts, int nbufs, int dtype, int op,
		int64_t piece_bytes, int *state);
int hora_broadcast(int id, void *buf, int64_t bytes, int root, int64_t piece_bytes, int *state);
int hora_allgather(int id, const void *src, void *dst, int bytes, int *state);
int hora_barrier(int id, int *state);

// hora_raw_allreduce sums count floats in place with blocking
// MPI_Allreduce calls of at most piece_bytes: the benchmark reference.
int hora_raw_allreduce(int id, float *buf, int64_t count, int64_t piece_bytes);

// hora_half_div divides n halves by d in float, rounding back to nearest even.
void hora_half_div(uint16_t *p, int64_t n, int d);
float hora_half_to_float(uint16_t h);
uint16_t hora_float_to_half(float f);

#endif
