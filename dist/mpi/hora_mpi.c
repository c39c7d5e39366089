//go:build mpi && cgo

#include <math.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "hora_mpi.h"

// The float16 type (2 bytes, opaque to MPI) and its sum, min and max.
static MPI_Datatype half_type = MPI_DATATYPE_NULL;
static MPI_Op half_ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

// hora_half_to_float returns the value of the IEEE binary16 bits h (exact).
float hora_half_to_float(uint16_t h) {
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t em = h & 0x7fff;
	uint32_t bits;
	float f;
	if (em >= 0x7c00) { // Inf or NaN, keeping the payload
		bits = sign | 0x7f800000 | (em & 0x3ff) << 13;
	} else if (em >= 0x0400) { // normal: rebias the exponent
		bits = sign | ((em << 13) + ((127 - 15) << 23));
	} else { // zero or subnormal: em * 2^-24, exact
		f = (float)em * 0x1p-24f;
		memcpy(&bits, &f, 4);
		bits |= sign;
	}
	memcpy(&f, &bits, 4);
	return f;
}

// hora_float_to_half rounds f to the nearest half, ties to even; the same
// rules as device/cpu's Float32ToFloat16.
uint16_t hora_float_to_half(float f) {
	uint32_t b;
	memcpy(&b, &f, 4);
	uint16_t sign = (uint16_t)(b >> 16) & 0x8000;
	b &= 0x7fffffff;
	if (b >= 0x38800000 && b < 0x477ff000) { // [2^-14, 65520): normal
		b -= (uint32_t)(127 - 15) << 23;
		b += 0x0fff + ((b >> 13) & 1);
		return sign | (uint16_t)(b >> 13);
	}
	if (b < 0x33000000) { // below 2^-25: zero
		return sign;
	}
	if (b < 0x38800000) { // [2^-25, 2^-14): subnormal (or 2^-14)
		uint32_t e = b >> 23;
		uint64_t m = (b & 0x7fffff) | 0x800000;
		uint32_t s = 126 - e;
		uint64_t q = m >> s, rem = m & ((1ull << s) - 1), half = 1ull << (s - 1);
		if (rem > half || (rem == half && (q & 1))) {
			q++;
		}
		return sign | (uint16_t)q;
	}
	if (b <= 0x7f800000) { // [65520, Inf]
		return sign | 0x7c00;
	}
	return sign | 0x7e00 | ((uint16_t)(b >> 13) & 0x3ff); // NaN
}

static void half_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
	const uint16_t *a = in;
	uint16_t *b = inout;
	for (int i = 0; i < *len; i++) {
		b[i] = hora_float_to_half(hora_half_to_float(a[i]) + hora_half_to_float(b[i]));
	}
}

static int half_isnan(uint16_t h) { return (h & 0x7fff) > 0x7c00; }

// half_min and half_max keep a NaN once one is seen, like dist/local.
static void half_min(void *in, void *inout, int *len, MPI_Datatype *dt) {
	const uint16_t *a = in;
	uint16_t *b = inout;
	for (int i = 0; i < *len; i++) {
		if (half_isnan(b[i])) {
			continue;
		}
		if (half_isnan(a[i]) || hora_half_to_float(a[i]) < hora_half_to_float(b[i])) {
			b[i] = a[i];
		}
	}
}

static void half_max(void *in, void *inout, int *len, MPI_Datatype *dt) {
	const uint16_t *a = in;
	uint16_t *b = inout;
	for (int i = 0; i < *len; i++) {
		if (half_isnan(b[i])) {
			continue;
		}
		if (half_isnan(a[i]) || hora_half_to_float(a[i]) > hora_half_to_float(b[i])) {
			b[i] = a[i];
		}
	}
}

void hora_half_div(uint16_t *p, int64_t n, int d) {
	float fd = (float)d;
	for (int64_t i = 0; i < n; i++) {
		p[i] = hora_float_to_half(hora_half_to_float(p[i]) / fd);
	}
}

// The communicators, numbered for Go: 0 is MPI_COMM_WORLD, hora_split
// adds the others (MPI_COMM_NULL marks a free number).
static MPI_Comm comms[HORA_MAX_COMMS];

// comm returns communicator id (MPI_COMM_NULL for a bad id).
static MPI_Comm comm(int id) {
	if (id < 0 || id >= HORA_MAX_COMMS) return MPI_COMM_NULL;
	return comms[id];
}

// describe returns this process's rank in c, c's size, and the same two
// among c's ranks on this host (MPI_Comm_split_type with
// MPI_COMM_TYPE_SHARED).
static int describe(MPI_Comm c, int *rank, int *size, int *local_rank, int *local_size) {
	int rc;
	if ((rc = MPI_Comm_rank(c, rank)) != MPI_SUCCESS) return rc;
	if ((rc = MPI_Comm_size(c, size)) != MPI_SUCCESS) return rc;
	MPI_Comm node;
	rc = MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Comm_rank(node, local_rank);
	MPI_Comm_size(node, local_size);
	return MPI_Comm_free(&node);
}

int hora_init(int *provided, int *rank, int *size, int *local_rank, int *local_size) {
	int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided);
	if (rc != MPI_SUCCESS) {
		return rc;
	}
	for (int i = 0; i < HORA_MAX_COMMS; i++) comms[i] = MPI_COMM_NULL;
	comms[0] = MPI_COMM_WORLD;
	// Errors come back as codes (the package turns them into Go errors)
	// instead of aborting the job from inside a call.
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if ((rc = describe(MPI_COMM_WORLD, rank, size, local_rank, local_size)) != MPI_SUCCESS) return rc;
	if ((rc = MPI_Type_contiguous(2, MPI_BYTE, &half_type)) != MPI_SUCCESS) return rc;
	if ((rc = MPI_Type_commit(&half_type)) != MPI_SUCCESS) return rc;
	if ((rc = MPI_Op_create(half_sum, 1, &half_ops[0])) != MPI_SUCCESS) return rc;
	if ((rc = MPI_Op_create(half_min, 1, &half_ops[1])) != MPI_SUCCESS) return rc;
	if ((rc = MPI_Op_create(half_max, 1, &half_ops[2])) != MPI_SUCCESS) return rc;
	return MPI_SUCCESS;
}

int hora_split(int parent, int color, int key, int *id, int *rank, int *size, int *local_rank, int *local_size) {
	MPI_Comm p = comm(parent), c;
	*id = -1;
	if (p == MPI_COMM_NULL) return MPI_ERR_COMM;
	int slot = 1;
	while (slot < HORA_MAX_COMMS && comms[slot] != MPI_COMM_NULL) slot++;
	// Every rank makes the call, even one out of slots, so that none waits.
	int rc;
	if (color == HORA_SPLIT_HOST) {
		rc = MPI_Comm_split_type(p, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c);
	} else {
		rc = MPI_Comm_split(p, color < 0 ? MPI_UNDEFINED : color, key, &c);
	}
	if (rc != MPI_SUCCESS || c == MPI_COMM_NULL) return rc;
	if (slot == HORA_MAX_COMMS) {
		MPI_Comm_free(&c);
		return MPI_ERR_INTERN;
	}
	MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
	if ((rc = describe(c, rank, size, local_rank, local_size)) != MPI_SUCCESS) {
		MPI_Comm_free(&c);
		return rc;
	}
	comms[slot] = c;
	*id = slot;
	return MPI_SUCCESS;
}

int hora_comm_free(int id) {
	if (id <= 0 || comm(id) == MPI_COMM_NULL) return MPI_ERR_COMM;
	return MPI_Comm_free(&comms[id]); // sets comms[id] to MPI_COMM_NULL
}

// The staging memory of hora_allreduce_many: two pieces.
static char *stage_mem;
static int64_t stage_bytes;

int hora_finalize(void) {
	free(stage_mem);
	stage_mem = NULL;
	stage_bytes = 0;
	for (int i = 1; i < HORA_MAX_COMMS; i++) {
		if (comms[i] != MPI_COMM_NULL) MPI_Comm_free(&comms[i]);
	}
	for (int i = 0; i < 3; i++) {
		if (half_ops[i] != MPI_OP_NULL) MPI_Op_free(&half_ops[i]);
	}
	if (half_type != MPI_DATATYPE_NULL) MPI_Type_free(&half_type);
	return MPI_Finalize();
}

void hora_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

void hora_error_string(int code, char *buf, int len) {
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;
	if (MPI_Error_string(code, s, &n) != MPI_SUCCESS) {
		n = 0;
	}
	if (n >= len) n = len - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
}

// type_op returns the MPI type and op for a Hora type and op (op < 0:
// only the type).
static int type_op(int dtype, int op, MPI_Datatype *t, MPI_Op *o) {
	int k = op == HORA_AVG ? HORA_SUM : op;
	switch (dtype) {
	case HORA_F32: *t = MPI_FLOAT; break;
	case HORA_F64: *t = MPI_DOUBLE; break;
	case HORA_I64: *t = MPI_INT64_T; break;
	case HORA_F16:
		*t = half_type;
		switch (k) {
		case HORA_SUM: *o = half_ops[0]; return MPI_SUCCESS;
		case HORA_MIN: *o = half_ops[1]; return MPI_SUCCESS;
		case HORA_MAX: *o = half_ops[2]; return MPI_SUCCESS;
		}
		return MPI_ERR_OP;
	default:
		return MPI_ERR_TYPE;
	}
	switch (k) {
	case HORA_SUM: *o = MPI_SUM; return MPI_SUCCESS;
	case HORA_MIN: *o = MPI_MIN; return MPI_SUCCESS;
	case HORA_MAX: *o = MPI_MAX; return MPI_SUCCESS;
	}
	return MPI_ERR_OP;
}

// Polling (see the package doc). A request is tested in a tight loop for
// SPIN_BASE_NS plus the time its bytes take at SPIN_BYTES_PER_S (a tenth
// of the unloaded bandwidth, so that a piece still finishes without
// sleeping when a compute thread shares the core), then between sleeps
// that double from MIN_SLEEP_NS to MAX_SLEEP_NS, so that a rank waiting
// for a late peer leaves the core to the compute threads (a wake-up costs
// a few microseconds: a few percent of a core) yet notices progress
// within MAX_SLEEP_NS.
#define SPIN_BASE_NS 2000000LL
#define SPIN_BYTES_PER_S 500000000LL
#define MIN_SLEEP_NS 10000LL
#define MAX_SLEEP_NS 200000LL

static _Atomic int cancel_flag;

void hora_cancel(int why) {
	if (why == HORA_ABORT) {
		atomic_store(&cancel_flag, HORA_ABORT);
		return;
	}
	int zero = 0;
	atomic_compare_exchange_strong(&cancel_flag, &zero, why);
}

static int64_t now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// check_cancel calls MPI_Abort when an abort is pending, and returns 1
// with *state set when hora_cancel asked to abandon the collective.
static int check_cancel(int *state) {
	int why = atomic_load(&cancel_flag);
	if (why == HORA_ABORT) {
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (why != 0) {
		*state = why;
		return 1;
	}
	return 0;
}

// poll tests *req until it completes or hora_cancel is called.
static int poll(MPI_Request *req, int64_t bytes, int *state) {
	int64_t start = now_ns();
	int64_t spin = SPIN_BASE_NS + bytes * 1000000000LL / SPIN_BYTES_PER_S;
	int64_t sleep = MIN_SLEEP_NS;
	for (;;) {
		int done = 0;
		int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS) {
			return rc;
		}
		if (done) {
			return MPI_SUCCESS;
		}
		if (check_cancel(state)) {
			return MPI_SUCCESS;
		}
		if (now_ns() - start >= spin) {
			struct timespec ts = {0, sleep};
			nanosleep(&ts, NULL);
			sleep = sleep * 2 < MAX_SLEEP_NS ? sleep * 2 : MAX_SLEEP_NS;
		}
	}
}

void hora_reset_cancel(void) {
	int why = HORA_CANCELED;
	atomic_compare_exchange_strong(&cancel_flag, &why, 0);
}

// begin starts a collective: it aborts if an abort is pending.
static void begin(int *state) {
	*state = HORA_DONE;
	if (atomic_load(&cancel_flag) == HORA_ABORT) {
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

// The buffers of hora_allreduce_many, one after the other.
typedef struct {
	void *const *bufs;
	const int64_t *counts;
	int nbufs;
	int size; // bytes per element
} concat;

// locate returns the buffer that holds element off of the concatenation
// and sets *at to the element's index in it.
static int locate(const concat *c, int64_t off, int64_t *at) {
	int i = 0;
	while (i < c->nbufs && off >= c->counts[i]) {
		off -= c->counts[i++];
	}
	*at = off;
	return i;
}

// A copy between the elements [off, off+n) of a concatenation and a
// staging area, made a chunk at a time; done elements are copied.
typedef struct {
	const concat *c;
	int64_t off, n, done;
	char *stage;
	int out; // 0: from the buffers into the stage; 1: back
} copy_job;

// COPY_CHUNK is how many bytes a copy job moves between two tests of the
// collective it overlaps, so that MPI's progress is never held up for
// more than a few tens of microseconds.
#define COPY_CHUNK (256 << 10)

// copy_step copies up to max elements more of j.
static void copy_step(copy_job *j, int64_t max) {
	const concat *c = j->c;
	int64_t at;
	int i = locate(c, j->off + j->done, &at);
	int64_t left = j->n - j->done < max ? j->n - j->done : max;
	while (left > 0 && i < c->nbufs) {
		int64_t k = c->counts[i] - at < left ? c->counts[i] - at : left;
		char *b = (char *)c->bufs[i] + at * c->size;
		char *s = j->stage + j->done * c->size;
		if (j->out) {
			memcpy(b, s, k * c->size);
		} else {
			memcpy(s, b, k * c->size);
		}
		j->done += k;
		left -= k;
		i++;
		at = 0;
	}
}

// copy_testing runs copy job j in chunks, testing *req (which may be
// MPI_REQUEST_NULL) between them so that the collective progresses
// meanwhile.
static int copy_testing(copy_job *j, MPI_Request *req, int *state) {
	int done = *req == MPI_REQUEST_NULL;
	while (j->done < j->n) {
		copy_step(j, COPY_CHUNK / j->c->size);
		if (!done) {
			int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
			if (rc != MPI_SUCCESS) return rc;
			if (check_cancel(state)) return MPI_SUCCESS;
		}
	}
	return MPI_SUCCESS;
}

// The pieces of hora_allreduce_many: piece k holds the elements
// [k*max, k*max + piece_len(p, k)) of the concatenation, so that every
// piece but the last is full (between hosts, OpenMPI 4.1 reduced 16 MiB as
// 16 pieces of 1 MiB at 0.4–0.8 times the speed of one piece).
typedef struct {
	concat c;
	int64_t total, max;
} plan;

static int64_t piece_len(const plan *p, int64_t k) {
	int64_t left = p->total - k * p->max;
	return left < p->max ? left : p->max;
}

// place returns where piece k lies when it lies in one buffer, else NULL:
// it is then staged.
static char *place(const plan *p, int64_t k) {
	int64_t at;
	int i = locate(&p->c, k * p->max, &at);
	if (i < p->c.nbufs && at + piece_len(p, k) <= p->c.counts[i]) {
		return (char *)p->c.bufs[i] + at * p->c.size;
	}
	return NULL;
}

// staging returns the copy job of piece k between the buffers and stage
// (out: back into the buffers).
static copy_job staging(const plan *p, int64_t k, char *stage, int out) {
	return (copy_job){&p->c, k * p->max, piece_len(p, k), 0, stage, out};
}

int hora_allreduce_many(int id, void *const *bufs, const int64_t *counts, int nbufs, int dtype, int op,
		int64_t piece_bytes, int *state) {
	MPI_Datatype t;
	MPI_Op o;
	int size;
	begin(state);
	MPI_Comm mc = comm(id);
	if (mc == MPI_COMM_NULL) return MPI_ERR_COMM;
	int rc = type_op(dtype, op, &t, &o);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Type_size(t, &size);
	plan p = {{bufs, counts, nbufs, size}, 0, piece_bytes / size};
	for (int i = 0; i < nbufs; i++) p.total += counts[i];
	int64_t pieces = (p.total + p.max - 1) / p.max;
	// Staged piece k goes in stage k%2.
	int64_t need = 0;
	for (int64_t k = 0; k < pieces && need == 0; k++) {
		if (place(&p, k) == NULL) need = 2 * p.max * size;
	}
	if (stage_bytes < need) {
		free(stage_mem);
		stage_bytes = 0;
		if ((stage_mem = malloc(need)) == NULL) return MPI_ERR_NO_MEM;
		stage_bytes = need;
	}
	char *stages[2] = {stage_mem, stage_mem + p.max * size};
	// One piece is in flight at a time: with two, OpenMPI 4.1 took up to
	// ten times as long for 16 MiB pieces, on one host and between hosts.
	// While piece k is reduced, piece k-1 is copied out of its stage,
	// then piece k+1 into its stage (the same one).
	if (pieces > 0 && place(&p, 0) == NULL) {
		copy_job in = staging(&p, 0, stages[0], 0);
		copy_step(&in, in.n);
	}
	for (int64_t k = 0; k < pieces; k++) {
		char *at = place(&p, k);
		MPI_Request req;
		rc = MPI_Iallreduce(MPI_IN_PLACE, at ? at : stages[k % 2], (int)piece_len(&p, k), t, o, mc, &req);
		if (rc != MPI_SUCCESS) return rc;
		copy_job jobs[2];
		int njobs = 0;
		if (k > 0 && place(&p, k - 1) == NULL) {
			jobs[njobs++] = staging(&p, k - 1, stages[(k - 1) % 2], 1);
		}
		if (k + 1 < pieces && place(&p, k + 1) == NULL) {
			jobs[njobs++] = staging(&p, k + 1, stages[(k + 1) % 2], 0);
		}
		for (int j = 0; j < njobs; j++) {
			rc = copy_testing(&jobs[j], &req, state);
			if (rc != MPI_SUCCESS || *state != HORA_DONE) return rc;
		}
		rc = poll(&req, piece_len(&p, k) * size, state);
		if (rc != MPI_SUCCESS || *state != HORA_DONE) return rc;
	}
	if (pieces > 0 && place(&p, pieces - 1) == NULL) {
		copy_job out = staging(&p, pieces - 1, stages[(pieces - 1) % 2], 1);
		copy_step(&out, out.n);
	}
	return MPI_SUCCESS;
}

int hora_broadcast(int id, void *buf, int64_t bytes, int root, int64_t piece_bytes, int *state) {
	begin(state);
	MPI_Comm c = comm(id);
	if (c == MPI_COMM_NULL) return MPI_ERR_COMM;
	for (int64_t off = 0; off < bytes; off += piece_bytes) {
		int64_t n = bytes - off < piece_bytes ? bytes - off : piece_bytes;
		MPI_Request req;
		int rc = MPI_Ibcast((char *)buf + off, (int)n, MPI_BYTE, root, c, &req);
		if (rc != MPI_SUCCESS) return rc;
		rc = poll(&req, n, state);
		if (rc != MPI_SUCCESS || *state != HORA_DONE) return rc;
	}
	return MPI_SUCCESS;
}

int hora_allgather(int id, const void *src, void *dst, int bytes, int *state) {
	begin(state);
	MPI_Comm c = comm(id);
	if (c == MPI_COMM_NULL) return MPI_ERR_COMM;
	MPI_Request req;
	int rc = MPI_Iallgather(src, bytes, MPI_BYTE, dst, bytes, MPI_BYTE, c, &req);
	if (rc != MPI_SUCCESS) return rc;
	int size;
	MPI_Comm_size(c, &size);
	return poll(&req, (int64_t)bytes * size, state);
}

int hora_barrier(int id, int *state) {
	begin(state);
	MPI_Comm c = comm(id);
	if (c == MPI_COMM_NULL) return MPI_ERR_COMM;
	MPI_Request req;
	int rc = MPI_Ibarrier(c, &req);
	if (rc != MPI_SUCCESS) return rc;
	return poll(&req, 0, state);
}

int hora_raw_allreduce(int id, float *buf, int64_t count, int64_t piece_bytes) {
	MPI_Comm c = comm(id);
	if (c == MPI_COMM_NULL) return MPI_ERR_COMM;
	int64_t piece = piece_bytes / 4;
	for (int64_t off = 0; off < count; off += piece) {
		int64_t n = count - off < piece ? count - off : piece;
		int rc = MPI_Allreduce(MPI_IN_PLACE, buf + off, (int)n, MPI_FLOAT, MPI_SUM, c);
		if (rc != MPI_SUCCESS) return rc;
	}
	return MPI_SUCCESS;
}
