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

int hora_init(int *provided, int *rank, int *size, int *local_rank, int *local_size);
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
// They return an MPI error code and set *state.
int hora_allreduce(void *buf, int64_t count, int dtype, int op, int64_t piece_bytes, int *state);
int hora_broadcast(void *buf, int64_t bytes, int root, int64_t piece_bytes, int *state);
int hora_allgather(const void *src, void *dst, int bytes, int *state);
int hora_barrier(int *state);

// hora_raw_allreduce sums count floats in place with blocking
// MPI_Allreduce calls of at most piece_bytes: the benchmark reference.
int hora_raw_allreduce(float *buf, int64_t count, int64_t piece_bytes);

// hora_half_div divides n halves by d in float, rounding back to nearest even.
void hora_half_div(uint16_t *p, int64_t n, int d);
float hora_half_to_float(uint16_t h);
uint16_t hora_float_to_half(float f);

#endif
