/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * count.c - the per-rank counters of topoprof and the two lookups the
 * wrappers need: a communicator rank's MPI_COMM_WORLD rank, and what a
 * persistent send request will send when started.
 *
 * Memory is O(peers) and fixed after MPI_Init (seed 7.2: "an array of size
 * O(N_processes)"):
 *   counters          4 x 8 bytes x n            (128 KiB for 4,096 peers)
 *   persistent table  PERSIST_SLOTS x 24 bytes   (48 KiB), allocated at
 *                     the first persistent send only
 *   rank translation  at most XLATE_BUDGET ints  (512 KiB), cached per
 *                     communicator; beyond it each call translates afresh
 * so a rank of a 4,096-rank job spends at most ~690 KiB (bench/prof_mem).
 *
 * Counting uses plain adds, or relaxed atomic adds when the program asked
 * for MPI_THREAD_MULTIPLE (two threads may then send at once); a locked add
 * costs ~10 ns on x86, a plain one nothing measurable (bench/prof_mem).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "prof.h"

struct prof_state prof;

/* Persistent send requests alive at once that are tracked; a program with
 * more gets the rest counted as "untracked" in the report (never wrong
 * bytes, only missing ones, and the report says how many). */
#define PERSIST_SLOTS 2048
struct pslot {
	void *req;      /* NULL: free; TOMB: deleted */
	int w;
	uint64_t bytes;
};
static struct pslot *ptab;
static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;
#define TOMB ((void *)1)

/* Translation tables cached on communicators (an attribute), in ints. */
#define XLATE_BUDGET (128 * 1024)
static size_t xlate_used;
static int xlate_key = MPI_KEYVAL_INVALID;
static pthread_mutex_t xlate_lock = PTHREAD_MUTEX_INITIALIZER;

static int xlate_delete(MPI_Comm comm, int key, void *val, void *extra)
{
	(void)comm, (void)key, (void)extra;
	int *t = val;
	__atomic_fetch_sub(&xlate_used, (size_t)t[0] + 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&prof.heap, ((size_t)t[0] + 1) * sizeof(int), __ATOMIC_RELAXED);
	free(t);
	return MPI_SUCCESS;
}

void prof_init(void)
{
	const char *off = getenv("TOPOPROF_DISABLE");
	if (off && *off && strcmp(off, "0"))
		return;
	PMPI_Comm_rank(MPI_COMM_WORLD, &prof.me);
	PMPI_Comm_size(MPI_COMM_WORLD, &prof.n);
	size_t rowb = (size_t)ROW_NARRAYS * (size_t)prof.n * sizeof(uint64_t);
	prof.row = calloc(1, rowb);
	if (!prof.row)
		return;   /* no profile, the job runs on */
	prof.heap = rowb;
	PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, xlate_delete, &xlate_key, NULL);
	prof.active = 1;
}

void prof_fini(void)
{
	prof.active = 0;
	free(prof.row);
	free(ptab);
	prof.row = NULL;
	ptab = NULL;
	if (xlate_key != MPI_KEYVAL_INVALID)
		PMPI_Comm_free_keyval(&xlate_key);
}

/* Builds comm's table t[1..size] of world ranks (t[0] = size); NULL if
 * over budget or out of memory. */
static int *xlate_build(MPI_Comm comm, int inter)
{
	int size = 0;
	if (inter)
		PMPI_Comm_remote_size(comm, &size);
	else
		PMPI_Comm_size(comm, &size);
	if (size <= 0)
		return NULL;
	size_t need = (size_t)size + 1;
	if (__atomic_add_fetch(&xlate_used, need, __ATOMIC_RELAXED) > XLATE_BUDGET) {
		__atomic_fetch_sub(&xlate_used, need, __ATOMIC_RELAXED);
		return NULL;
	}
	int *t = malloc(need * sizeof(int));
	int *idx = malloc((size_t)size * sizeof(int));
	MPI_Group g, wg;
	if (!t || !idx) {
		free(t);
		free(idx);
		__atomic_fetch_sub(&xlate_used, need, __ATOMIC_RELAXED);
		return NULL;
	}
	for (int i = 0; i < size; i++)
		idx[i] = i;
	if (inter)
		PMPI_Comm_remote_group(comm, &g);
	else
		PMPI_Comm_group(comm, &g);
	PMPI_Comm_group(MPI_COMM_WORLD, &wg);
	PMPI_Group_translate_ranks(g, size, idx, wg, t + 1);
	PMPI_Group_free(&g);
	PMPI_Group_free(&wg);
	free(idx);
	t[0] = size;
	__atomic_fetch_add(&prof.heap, need * sizeof(int), __ATOMIC_RELAXED);
	return t;
}

/* One rank, no cache (over budget). */
static int xlate_one(MPI_Comm comm, int inter, int r)
{
	MPI_Group g, wg;
	int w = MPI_UNDEFINED;
	if (inter)
		PMPI_Comm_remote_group(comm, &g);
	else
		PMPI_Comm_group(comm, &g);
	PMPI_Comm_group(MPI_COMM_WORLD, &wg);
	PMPI_Group_translate_ranks(g, 1, &r, wg, &w);
	PMPI_Group_free(&g);
	PMPI_Group_free(&wg);
	return w == MPI_UNDEFINED ? -1 : w;
}

int prof_world_rank(void *comm_p, int r)
{
	MPI_Comm comm = *(MPI_Comm *)comm_p;
	if (r == MPI_PROC_NULL || r < 0)
		return -1;
	if (comm == MPI_COMM_WORLD)
		return r < prof.n ? r : -1;
	if (comm == MPI_COMM_SELF)
		return r == 0 ? prof.me : -1;
	int inter = 0;
	PMPI_Comm_test_inter(comm, &inter);
	int *t = NULL, flag = 0;
	PMPI_Comm_get_attr(comm, xlate_key, &t, &flag);
	if (!flag) {
		/* Under MPI_THREAD_MULTIPLE two threads may miss at once: one
		 * builds and sets the table; setting it twice would free the
		 * first (the delete callback) while the other thread reads it. */
		pthread_mutex_lock(&xlate_lock);
		PMPI_Comm_get_attr(comm, xlate_key, &t, &flag);
		if (!flag) {
			t = xlate_build(comm, inter);
			if (t)
				PMPI_Comm_set_attr(comm, xlate_key, t);
		}
		pthread_mutex_unlock(&xlate_lock);
		if (!t) {
			int w = xlate_one(comm, inter, r);
			if (w < 0)
				__atomic_fetch_add(&prof.untranslated, 1, __ATOMIC_RELAXED);
			return w;
		}
	}
	if (r >= t[0] || t[1 + r] == MPI_UNDEFINED || t[1 + r] < 0 || t[1 + r] >= prof.n) {
		__atomic_fetch_add(&prof.untranslated, 1, __ATOMIC_RELAXED);
		return -1;
	}
	return t[1 + r];
}

static size_t phash(void *req)
{
	uintptr_t x = (uintptr_t)req;
	x ^= x >> 17;
	x *= 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 20) % PERSIST_SLOTS;
}

void prof_persist_add(void *req, int w, uint64_t bytes)
{
	pthread_mutex_lock(&plock);
	if (!ptab) {
		ptab = calloc(PERSIST_SLOTS, sizeof(*ptab));
		if (!ptab) {
			prof.untracked++;
			pthread_mutex_unlock(&plock);
			return;
		}
		prof.heap += PERSIST_SLOTS * sizeof(*ptab);
	}
	size_t h = phash(req), tomb = PERSIST_SLOTS;
	for (size_t i = 0; i < PERSIST_SLOTS; i++, h = (h + 1) % PERSIST_SLOTS) {
		if (ptab[h].req == req || ptab[h].req == NULL) {
			size_t at = (ptab[h].req == NULL && tomb < PERSIST_SLOTS) ? tomb : h;
			ptab[at] = (struct pslot){ req, w, bytes };
			pthread_mutex_unlock(&plock);
			return;
		}
		if (ptab[h].req == TOMB && tomb == PERSIST_SLOTS)
			tomb = h;
	}
	if (tomb < PERSIST_SLOTS)
		ptab[tomb] = (struct pslot){ req, w, bytes };
	else
		prof.untracked++;
	pthread_mutex_unlock(&plock);
}

static struct pslot *pfind(void *req)
{
	if (!ptab)
		return NULL;
	size_t h = phash(req);
	for (size_t i = 0; i < PERSIST_SLOTS; i++, h = (h + 1) % PERSIST_SLOTS) {
		if (ptab[h].req == req)
			return &ptab[h];
		if (ptab[h].req == NULL)
			return NULL;
	}
	return NULL;
}

void prof_persist_start(void *req)
{
	pthread_mutex_lock(&plock);
	struct pslot *s = pfind(req);
	int w = s ? s->w : -1;
	uint64_t b = s ? s->bytes : 0;
	pthread_mutex_unlock(&plock);
	if (s)
		prof_p2p(w, b);
}

void prof_persist_del(void *req)
{
	pthread_mutex_lock(&plock);
	struct pslot *s = pfind(req);
	if (s)
		s->req = TOMB;
	pthread_mutex_unlock(&plock);
}
