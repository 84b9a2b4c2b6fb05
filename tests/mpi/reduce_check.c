/*
 * reduce_check.c - topocoll's MPI_Allreduce against the MPI's own
 * (PMPI_Allreduce) for every predefined operation on every predefined
 * type it applies to, and for user-defined operations, one of which does
 * not commute (docs/collectives.md, "What equal means"):
 *
 *   - integer, logical, byte and integer-pair types: byte for byte equal
 *     (their results do not depend on the order of application);
 *   - floating-point, complex and floating-pair types on values whose
 *     every partial result is exact (small integers, units): byte for byte
 *     equal too, whatever order either side reduces in, but for complex
 *     products, equal as numbers (the sign of an exactly-zero part follows
 *     the order of the products: IEEE's signed zeros);
 *   - floating-point sums of arbitrary values: the same bytes on every
 *     rank, within the rounding any order of additions allows
 *     ((P - 1) x eps x sum of |x| per element) of the MPI's own; with
 *     TOPOCOLL_ALLREDUCE_FLOAT=0 (left to the MPI) byte for byte equal;
 *   - a user-defined operation that does not commute (2 x 2 matrix products
 *     mod 2^16 packed in a uint64_t): byte for byte equal (rank order is
 *     kept); a commutative one (max of absolute values of ints) too;
 *   - MPI_IN_PLACE.
 * Communicators: MPI_COMM_WORLD and its ranks reversed (rank order unlike
 * the fabric's). Counts 1, 7, 1000, 20003.
 *
 * Output: one "ok - " or "not ok - " line per communicator and family,
 * from rank 0 of the communicator (tests/integration/t_reduce.sh).
 */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int counts[] = { 1, 7, 1000, 20003 };
#define NCOUNTS (int)(sizeof(counts) / sizeof(counts[0]))
#define NMAX 20003

static uint32_t mix(uint32_t a, uint32_t b)
{
	uint32_t h = a * 2654435761u ^ b * 40503u;
	return h ^ (h >> 15);
}

enum kind { K_INT, K_FLOAT, K_BOOL, K_BYTE, K_COMPLEX, K_PAIR };

struct type {
	MPI_Datatype dt;
	const char *name;
	enum kind kind;
	int size;              /* bytes of one element as filled */
};

/* Fill element i of rank r: exact values for every type. */
static void fill(const struct type *t, void *buf, int n, int r, int salt)
{
	for (int i = 0; i < n; i++) {
		uint32_t h = mix((uint32_t)(r * 7 + salt), (uint32_t)i);
		int v = (int)(h % 7) - 3; /* small: every product and sum stays exact */
		int one = h % 3 == 0 ? 2 : h % 3 == 1 ? 1 : -1;
		char *p = (char *)buf + (size_t)i * t->size;
		if (t->dt == MPI_SIGNED_CHAR || t->dt == MPI_INT8_T)
			*(int8_t *)p = (int8_t)(salt % 2 ? one : v);
		else if (t->dt == MPI_UNSIGNED_CHAR || t->dt == MPI_UINT8_T || t->dt == MPI_BYTE)
			*(uint8_t *)p = (uint8_t)(salt % 2 ? (one > 0 ? one : 1) : h);
		else if (t->dt == MPI_SHORT || t->dt == MPI_INT16_T)
			*(int16_t *)p = (int16_t)(salt % 2 ? one : (int)h);
		else if (t->dt == MPI_UNSIGNED_SHORT || t->dt == MPI_UINT16_T)
			*(uint16_t *)p = (uint16_t)h;
		else if (t->dt == MPI_INT || t->dt == MPI_INT32_T)
			*(int32_t *)p = (int32_t)(salt % 2 ? one : (int)h);
		else if (t->dt == MPI_UNSIGNED || t->dt == MPI_UINT32_T)
			*(uint32_t *)p = h;
		else if (t->dt == MPI_LONG)
			*(long *)p = salt % 2 ? one : (long)h * 977;
		else if (t->dt == MPI_UNSIGNED_LONG)
			*(unsigned long *)p = (unsigned long)h * 977;
		else if (t->dt == MPI_LONG_LONG || t->dt == MPI_INT64_T)
			*(int64_t *)p = salt % 2 ? one : (int64_t)h * 977;
		else if (t->dt == MPI_UNSIGNED_LONG_LONG || t->dt == MPI_UINT64_T)
			*(uint64_t *)p = (uint64_t)h * 977;
		else if (t->dt == MPI_C_BOOL)
			*(_Bool *)p = h % 2;
		else if (t->dt == MPI_FLOAT)
			*(float *)p = (float)(salt % 2 ? one : v);
		else if (t->dt == MPI_DOUBLE)
			*(double *)p = salt % 2 ? one : v;
		else if (t->dt == MPI_LONG_DOUBLE)
			*(long double *)p = salt % 2 ? one : v;
		else if (t->dt == MPI_C_FLOAT_COMPLEX)
			*(float complex *)p = salt % 2 ? (h % 4 == 0 ? 1 : h % 4 == 1 ? I : h % 4 == 2 ? -1 : -I) : v + 2 * v * I;
		else if (t->dt == MPI_C_DOUBLE_COMPLEX)
			*(double complex *)p = salt % 2 ? (h % 4 == 0 ? 1 : h % 4 == 1 ? I : h % 4 == 2 ? -1 : -I) : v - v * I;
		else if (t->dt == MPI_2INT) {
			((int *)p)[0] = v;
			((int *)p)[1] = r;
		} else if (t->dt == MPI_LONG_INT) {
			struct { long v; int i; } *q = (void *)p;
			q->v = v;
			q->i = r;
		} else if (t->dt == MPI_SHORT_INT) {
			struct { short v; int i; } *q = (void *)p;
			q->v = (short)v;
			q->i = r;
		} else if (t->dt == MPI_FLOAT_INT) {
			struct { float v; int i; } *q = (void *)p;
			q->v = (float)v;
			q->i = r;
		} else if (t->dt == MPI_DOUBLE_INT) {
			struct { double v; int i; } *q = (void *)p;
			q->v = v;
			q->i = r;
		} else if (t->dt == MPI_LONG_DOUBLE_INT) {
			struct { long double v; int i; } *q = (void *)p;
			q->v = v;
			q->i = r;
		}
	}
}

/* The MPI standard's table (MPI 4.0, 6.9.2): which operation takes which kind. */
static int applies(MPI_Op op, enum kind k)
{
	if (op == MPI_MAXLOC || op == MPI_MINLOC)
		return k == K_PAIR;
	if (op == MPI_MAX || op == MPI_MIN)
		return k == K_INT || k == K_FLOAT;
	if (op == MPI_SUM || op == MPI_PROD)
		return k == K_INT || k == K_FLOAT || k == K_COMPLEX;
	if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR)
		return k == K_INT || k == K_BOOL;
	return k == K_INT || k == K_BYTE; /* BAND, BOR, BXOR */
}

static int agree(int bad, MPI_Comm comm)
{
	int all = 0;
	PMPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, comm);
	return all;
}

/* a 2 x 2 matrix of uint16 in a uint64: [a b; c d], products mod 2^16 */
static uint64_t mat_mul(uint64_t x, uint64_t y)
{
	uint16_t a = (uint16_t)x, b = (uint16_t)(x >> 16), c = (uint16_t)(x >> 32), d = (uint16_t)(x >> 48);
	uint16_t e = (uint16_t)y, f = (uint16_t)(y >> 16), g = (uint16_t)(y >> 32), h = (uint16_t)(y >> 48);
	uint64_t p = (uint16_t)((uint32_t)a * e + (uint32_t)b * g), q = (uint16_t)((uint32_t)a * f + (uint32_t)b * h),
		 r = (uint16_t)((uint32_t)c * e + (uint32_t)d * g), s = (uint16_t)((uint32_t)c * f + (uint32_t)d * h);
	return p | q << 16 | r << 32 | s << 48;
}

/* inout = in x inout: in is the earlier rank's */
static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++)
		((uint64_t *)inout)[i] = mat_mul(((uint64_t *)in)[i], ((uint64_t *)inout)[i]);
}

static void absmax_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++) {
		int a = abs(((int *)in)[i]), b = abs(((int *)inout)[i]);
		((int *)inout)[i] = a > b ? a : b;
	}
}

static const struct type types[] = {
	{ MPI_SIGNED_CHAR, "signed char", K_INT, 1 },
	{ MPI_UNSIGNED_CHAR, "unsigned char", K_INT, 1 }, { MPI_SHORT, "short", K_INT, 2 },
	{ MPI_UNSIGNED_SHORT, "unsigned short", K_INT, 2 }, { MPI_INT, "int", K_INT, 4 },
	{ MPI_UNSIGNED, "unsigned", K_INT, 4 }, { MPI_LONG, "long", K_INT, sizeof(long) },
	{ MPI_UNSIGNED_LONG, "unsigned long", K_INT, sizeof(long) }, { MPI_LONG_LONG, "long long", K_INT, 8 },
	{ MPI_UNSIGNED_LONG_LONG, "unsigned long long", K_INT, 8 }, { MPI_INT8_T, "int8_t", K_INT, 1 },
	{ MPI_INT16_T, "int16_t", K_INT, 2 }, { MPI_INT32_T, "int32_t", K_INT, 4 }, { MPI_INT64_T, "int64_t", K_INT, 8 },
	{ MPI_UINT8_T, "uint8_t", K_INT, 1 }, { MPI_UINT16_T, "uint16_t", K_INT, 2 },
	{ MPI_UINT32_T, "uint32_t", K_INT, 4 }, { MPI_UINT64_T, "uint64_t", K_INT, 8 },
	{ MPI_C_BOOL, "C bool", K_BOOL, sizeof(_Bool) }, { MPI_BYTE, "byte", K_BYTE, 1 },
	{ MPI_FLOAT, "float", K_FLOAT, sizeof(float) }, { MPI_DOUBLE, "double", K_FLOAT, sizeof(double) },
	{ MPI_LONG_DOUBLE, "long double", K_FLOAT, sizeof(long double) },
	{ MPI_C_FLOAT_COMPLEX, "float complex", K_COMPLEX, sizeof(float complex) },
	{ MPI_C_DOUBLE_COMPLEX, "double complex", K_COMPLEX, sizeof(double complex) },
	{ MPI_2INT, "2int", K_PAIR, 2 * sizeof(int) },
	{ MPI_LONG_INT, "long int", K_PAIR, sizeof(struct { long v; int i; }) },
	{ MPI_SHORT_INT, "short int", K_PAIR, sizeof(struct { short v; int i; }) },
	{ MPI_FLOAT_INT, "float int", K_PAIR, sizeof(struct { float v; int i; }) },
	{ MPI_DOUBLE_INT, "double int", K_PAIR, sizeof(struct { double v; int i; }) },
	{ MPI_LONG_DOUBLE_INT, "long double int", K_PAIR, sizeof(struct { long double v; int i; }) },
};

static const struct {
	MPI_Op op;
	const char *name;
} ops[] = { { MPI_SUM, "sum" },   { MPI_PROD, "prod" }, { MPI_MAX, "max" },   { MPI_MIN, "min" },
	    { MPI_LAND, "land" }, { MPI_LOR, "lor" },   { MPI_LXOR, "lxor" }, { MPI_BAND, "band" },
	    { MPI_BOR, "bor" },   { MPI_BXOR, "bxor" }, { MPI_MAXLOC, "maxloc" }, { MPI_MINLOC, "minloc" } };

/* Whether two results differ: byte for byte, but an x87 long double's
 * value is its first 10 bytes (how its 6 bytes of padding are left
 * depends on which copies it went through, on either side). */
static int differ(const struct type *t, MPI_Op op, const char *a, const char *b, int n, MPI_Aint ext)
{
	/* a complex product's exactly-zero part takes its sign from the order
	 * of the products ((+0)(-d) + (-b)(+0) is -0): equal as numbers */
	if (op == MPI_PROD && t->dt == MPI_C_FLOAT_COMPLEX) {
		for (int i = 0; i < n; i++)
			if (((const float complex *)a)[i] != ((const float complex *)b)[i])
				return 1;
		return 0;
	}
	if (op == MPI_PROD && t->dt == MPI_C_DOUBLE_COMPLEX) {
		for (int i = 0; i < n; i++)
			if (((const double complex *)a)[i] != ((const double complex *)b)[i])
				return 1;
		return 0;
	}
	if (t->dt != MPI_LONG_DOUBLE && t->dt != MPI_LONG_DOUBLE_INT)
		return memcmp(a, b, (size_t)n * ext) != 0;
	for (int i = 0; i < n; i++) {
		const char *x = a + (size_t)i * ext, *y = b + (size_t)i * ext;
		if (memcmp(x, y, 10) || (t->dt == MPI_LONG_DOUBLE_INT && memcmp(x + sizeof(long double),
										 y + sizeof(long double), sizeof(int))))
			return 1;
	}
	return 0;
}

/* Every predefined op on every type it takes, exact values: byte equal. */
static int predefined(MPI_Comm comm, char *first, size_t fn, int *cases)
{
	int rank, bad = 0;
	MPI_Comm_rank(comm, &rank);
	size_t cap = (size_t)NMAX * 32;
	char *s = malloc(cap), *a = malloc(cap), *b = malloc(cap);
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
			if (!applies(ops[o].op, types[t].kind))
				continue;
			for (int k = 0; k < NCOUNTS; k++) {
				int n = counts[k], inplace = k == 1;
				MPI_Aint lb, ext;
				MPI_Type_get_extent(types[t].dt, &lb, &ext);
				/* the same garbage in both result buffers: padding must stay */
				memset(a, 0x5a, (size_t)n * ext);
				memset(b, 0x5a, (size_t)n * ext);
				memset(s, 0x5a, (size_t)n * ext);
				fill(&types[t], s, n, rank, (int)o);
				if (inplace) {
					memcpy(a, s, (size_t)n * ext);
					memcpy(b, s, (size_t)n * ext);
				}
				MPI_Allreduce(inplace ? MPI_IN_PLACE : s, a, n, types[t].dt, ops[o].op, comm);
				PMPI_Allreduce(inplace ? MPI_IN_PLACE : s, b, n, types[t].dt, ops[o].op, comm);
				int diff = differ(&types[t], ops[o].op, a, b, n, ext);
				if (diff && !bad)
					snprintf(first, fn, "%s %s x %d", ops[o].name, types[t].name, n);
				bad += diff;
				(*cases)++;
			}
		}
	free(s);
	free(a);
	free(b);
	return bad;
}

/* Double sums of arbitrary values: the same bytes on every rank, within
 * any order's rounding of the MPI's own (or equal with FLOAT=0). */
static int float_sums(MPI_Comm comm, char *first, size_t fn)
{
	int rank, size, bad = 0;
	MPI_Comm_rank(comm, &rank);
	MPI_Comm_size(comm, &size);
	const char *fl = getenv("TOPOCOLL_ALLREDUCE_FLOAT");
	int exact = fl && !strcmp(fl, "0");
	double *s = malloc(NMAX * sizeof(double)), *a = malloc(NMAX * sizeof(double)), *b = malloc(NMAX * sizeof(double));
	double *mx = malloc(NMAX * sizeof(double)), *mn = malloc(NMAX * sizeof(double)), *as = malloc(NMAX * sizeof(double));
	for (int k = 0; k < NCOUNTS; k++) {
		int n = counts[k];
		for (int i = 0; i < n; i++)
			s[i] = (mix((uint32_t)rank, (uint32_t)i) % 100000) / 3.0 - 10000.0;
		MPI_Allreduce(s, a, n, MPI_DOUBLE, MPI_SUM, comm);
		PMPI_Allreduce(s, b, n, MPI_DOUBLE, MPI_SUM, comm);
		for (int i = 0; i < n; i++)
			as[i] = fabs(s[i]);
		PMPI_Allreduce(a, mx, n, MPI_DOUBLE, MPI_MAX, comm);
		PMPI_Allreduce(a, mn, n, MPI_DOUBLE, MPI_MIN, comm);
		PMPI_Allreduce(MPI_IN_PLACE, as, n, MPI_DOUBLE, MPI_SUM, comm);
		int diff = 0;
		for (int i = 0; i < n; i++) {
			double tol = (size - 1) * 2.3e-16 * as[i];
			diff |= memcmp(&mx[i], &mn[i], sizeof(double)) != 0; /* every rank alike */
			diff |= exact ? memcmp(&a[i], &b[i], sizeof(double)) != 0 : fabs(a[i] - b[i]) > tol;
		}
		if (diff && !bad)
			snprintf(first, fn, "double sums x %d", n);
		bad += diff;
	}
	free(s);
	free(a);
	free(b);
	free(mx);
	free(mn);
	free(as);
	return bad;
}

/* User-defined operations: non-commutative matrix products, commutative
 * |max|. */
static int user_ops(MPI_Comm comm, char *first, size_t fn)
{
	int rank, bad = 0;
	MPI_Comm_rank(comm, &rank);
	MPI_Op mat, absmax;
	MPI_Op_create(mat_op, 0, &mat);
	MPI_Op_create(absmax_op, 1, &absmax);
	uint64_t *s = malloc(NMAX * 8), *a = malloc(NMAX * 8), *b = malloc(NMAX * 8);
	for (int k = 0; k < NCOUNTS; k++) {
		int n = counts[k];
		for (int i = 0; i < n; i++) {
			uint32_t h = mix((uint32_t)rank, (uint32_t)i), g = mix(h, 7);
			s[i] = (uint64_t)(h & 0xffff) | (uint64_t)(h >> 16) << 16 | (uint64_t)(g & 0xffff) << 32 |
			       (uint64_t)(g >> 16) << 48;
		}
		MPI_Allreduce(s, a, n, MPI_UINT64_T, mat, comm);
		PMPI_Allreduce(s, b, n, MPI_UINT64_T, mat, comm);
		int diff = memcmp(a, b, (size_t)n * 8) != 0;
		MPI_Allreduce(s, a, 2 * n, MPI_INT, absmax, comm);
		PMPI_Allreduce(s, b, 2 * n, MPI_INT, absmax, comm);
		diff |= 2 * (memcmp(a, b, (size_t)n * 8) != 0);
		if (diff && !bad)
			snprintf(first, fn, "%s x %d", diff & 1 ? "matrix products (not commutative)" : "|max|", n);
		bad += diff != 0;
	}
	MPI_Op_free(&mat);
	MPI_Op_free(&absmax);
	free(s);
	free(a);
	free(b);
	return bad;
}

static void check_all(MPI_Comm comm, const char *what)
{
	int size, rank, cases = 0;
	char f1[96] = "", f2[96] = "", f3[96] = "";
	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	int p = agree(predefined(comm, f1, sizeof(f1), &cases), comm);
	int f = agree(float_sums(comm, f2, sizeof(f2)), comm);
	int u = agree(user_ops(comm, f3, sizeof(f3)), comm);
	if (rank)
		return;
	printf("%s - %s (%d ranks): every predefined op on every predefined type, %d cases, equal to the MPI's%s%s\n",
	       p ? "not ok" : "ok", what, size, cases, p ? ": first " : "", f1);
	printf("%s - %s (%d ranks): double sums alike on every rank and within any order's rounding%s%s\n",
	       f ? "not ok" : "ok", what, size, f ? ": " : "", f2);
	printf("%s - %s (%d ranks): user-defined operations (one not commutative) equal to the MPI's%s%s\n",
	       u ? "not ok" : "ok", what, size, u ? ": " : "", f3);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	check_all(MPI_COMM_WORLD, "world");
	MPI_Comm c;
	MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c);
	check_all(c, "reversed");
	MPI_Comm_free(&c);
	MPI_Finalize();
	return 0;
}
