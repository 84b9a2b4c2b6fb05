/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lft.c - the forwarding tables' memory: chunks of SNAP_LFT_CHUNK entries,
 * counted, shared between snapshots and copied one at a time when written.
 *
 * Why chunks: a reroute delta at k=56 changes 0.5 % of the 64-entry blocks
 * but touches 55 % of the switches; copying whole tables cost 103 MB per
 * generation, and the received snapshot stayed alive under the tables no
 * delta touched, so topod held twice its tables and more.
 *
 * Why a pool: a k=56 fabric's 188 MB of tables are 368,000 chunks. They
 * live in 2 MiB slabs asked for in huge pages (the first writes of a
 * decode fault 512 times less often), each slab's first 16.5 KiB holding the
 * counts of its chunks and its list of free ones, so a chunk finds both
 * from its address with no header between chunks. Freed chunks go back to
 * their slab: the next generation's copies reuse them, and a fabric's
 * tables keep a steady size; a slab left wholly free goes back to the
 * system (one is kept, and those snap_lft_want_ready asks for). The pool
 * is the process's, like malloc's arenas; its lock is taken once per
 * table made, not per chunk (a copy on write takes it once per chunk it
 * copies).
 *
 * Under AddressSanitizer the free chunks are poisoned, so a read through a
 * table freed too early is reported as with malloc'd memory.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lft_impl.h"
#include "snapshot.h"
#include "util.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) /* clang's way of saying it */
#define LFT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(LFT_ASAN)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define SLAB_BYTES ((size_t)2 << 20)
#define SLAB_CHUNKS (SLAB_BYTES >> SNAP_LFT_CHUNK_SHIFT)
#define SLAB_REFS (SLAB_CHUNKS * sizeof(atomic_uint))

/* A slab's head, after its chunks' counts; both fill the slab's first
 * SLAB_META chunks. */
struct slab {
	struct slab *prev, *next; /* the slabs with free chunks */
	uint8_t *free;            /* its free chunks, linked through their first bytes */
	uint32_t nfree;
};
#define SLAB_META ((SLAB_REFS + sizeof(struct slab) + SNAP_LFT_CHUNK - 1) >> SNAP_LFT_CHUNK_SHIFT)
#define SLAB_USABLE (SLAB_CHUNKS - SLAB_META)
/* Wholly free slabs kept for the next copies; the others go back to the
 * system, so that the old tables of a fabric replaced whole (decoded while
 * they were still served) do not stay resident. */
#define SLAB_KEEP 1
/* Asking for this many chunks at once is making a whole table (a decode,
 * a builder): those fill slabs of their own, never the free chunks that
 * deltas left in the served tables' slabs, so that when the tables they
 * replace are freed those slabs empty and go back. */
#define SLAB_WHOLE 64

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct slab *pool_partial; /* slabs with free chunks, the one that last got its first first */
static struct slab *pool_fill;    /* the slab whole tables are being made in */
static struct slab *pool_empty;   /* wholly free slabs kept, linked through next */
static uint64_t pool_slabs, pool_spare, pool_idle;
/* Free chunks to keep ready for the next copies (snap_lft_want_ready):
 * wholly free slabs are not given back below it. */
static uint64_t pool_ready;
/* Chunks this thread took (snap_lft_taken). */
static _Thread_local uint64_t taken_here;

static uint8_t *slab_base(const uint8_t *c)
{
	return (uint8_t *)((uintptr_t)c & ~(uintptr_t)(SLAB_BYTES - 1));
}

static atomic_uint *chunk_refs(const uint8_t *c)
{
	uint8_t *base = slab_base(c);
	return (atomic_uint *)base + ((uintptr_t)(c - base) >> SNAP_LFT_CHUNK_SHIFT);
}

static struct slab *slab_of(const uint8_t *c)
{
	return (struct slab *)(slab_base(c) + SLAB_REFS);
}

/* The functions below are called with pool_mu held. */

static void partial_add(struct slab *s)
{
	s->prev = NULL;
	s->next = pool_partial;
	if (pool_partial)
		pool_partial->prev = s;
	pool_partial = s;
}

static void partial_drop(struct slab *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		pool_partial = s->next;
	if (s->next)
		s->next->prev = s->prev;
}

/* A slab's memory, aligned to its size so that chunk_refs() and
 * slab_of() find its head from any chunk's address; NULL on ENOMEM. */
static uint8_t *slab_map(void)
{
	uint8_t *p = mmap(NULL, 2 * SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + SLAB_BYTES - 1) & ~(uintptr_t)(SLAB_BYTES - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	if ((uintptr_t)p + 2 * SLAB_BYTES > a + SLAB_BYTES)
		munmap((uint8_t *)(a + SLAB_BYTES), (uintptr_t)p + SLAB_BYTES - a);
#ifdef MADV_HUGEPAGE
	(void)madvise((void *)a, SLAB_BYTES, MADV_HUGEPAGE);
#endif
	return (uint8_t *)a;
}

/* Every chunk of the slab at base free, linked in address order: its
 * first touch, so the page faults happen here. Needs no lock. */
static struct slab *slab_init(uint8_t *base)
{
	struct slab *s = slab_of(base);
	s->free = NULL;
	for (size_t i = SLAB_CHUNKS; i-- > SLAB_META;) {
		uint8_t *c = base + (i << SNAP_LFT_CHUNK_SHIFT);
		memcpy(c, &s->free, sizeof(s->free));
		POISON(c, SNAP_LFT_CHUNK);
		s->free = c;
	}
	s->nfree = SLAB_USABLE;
	return s;
}

/* A slab, every chunk free, on no list; NULL on ENOMEM. A kept empty one
 * first. */
static struct slab *slab_get(void)
{
	struct slab *s = pool_empty;
	if (s) {
		pool_empty = s->next;
		pool_idle--;
		return s;
	}
	uint8_t *base = slab_map();
	if (!base)
		return NULL;
	s = slab_init(base);
	pool_spare += SLAB_USABLE;
	pool_slabs++;
	return s;
}

static void slab_unmap(struct slab *s)
{
	uint8_t *base = slab_base((uint8_t *)s);
	pool_spare -= SLAB_USABLE;
	pool_slabs--;
	/* The address may come back as anyone's memory. */
	UNPOISON(base, SLAB_BYTES);
	munmap(base, SLAB_BYTES);
}

/* Whether one more wholly free slab is to be kept rather than given back:
 * up to SLAB_KEEP of them, and all the ready reserve needs. */
static int slab_keep(void)
{
	return pool_idle < SLAB_KEEP || pool_spare < pool_ready + SLAB_USABLE;
}

/* A slab wholly free: kept (slab_keep) or unmapped. */
static void slab_empty(struct slab *s)
{
	partial_drop(s);
	if (s == pool_fill)
		pool_fill = NULL;
	if (slab_keep()) {
		s->next = pool_empty;
		pool_empty = s;
		pool_idle++;
		return;
	}
	slab_unmap(s);
}

static void push_free(uint8_t *c)
{
	struct slab *s = slab_of(c);
	UNPOISON(c, sizeof(uint8_t *));
	memcpy(c, &s->free, sizeof(s->free));
	POISON(c, SNAP_LFT_CHUNK);
	s->free = c;
	if (!s->nfree++)
		partial_add(s);
	pool_spare++;
	if (s->nfree == SLAB_USABLE)
		slab_empty(s);
}

/* The slab the next chunk comes from: whole tables' fill slab, or any
 * with free chunks; NULL on ENOMEM. */
static struct slab *slab_for(int whole)
{
	if (whole ? pool_fill && pool_fill->nfree : pool_partial != NULL)
		return whole ? pool_fill : pool_partial;
	struct slab *s = slab_get();
	if (!s)
		return NULL;
	partial_add(s);
	if (whole)
		pool_fill = s;
	return s;
}

static uint8_t *pop_free(struct slab *s)
{
	uint8_t *c = s->free;
	UNPOISON(c, SNAP_LFT_CHUNK);
	memcpy(&s->free, c, sizeof(s->free));
	if (!--s->nfree)
		partial_drop(s);
	pool_spare--;
	return c;
}

/* n chunks into out[], each held once; -1 on ENOMEM, none taken. */
static int chunks_get(uint8_t **out, uint32_t n)
{
	pthread_mutex_lock(&pool_mu);
	for (uint32_t i = 0; i < n; i++) {
		struct slab *s = slab_for(n >= SLAB_WHOLE);
		if (!s) {
			while (i)
				push_free(out[--i]);
			pthread_mutex_unlock(&pool_mu);
			return -1;
		}
		out[i] = pop_free(s);
	}
	pthread_mutex_unlock(&pool_mu);
	taken_here += n;
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(chunk_refs(out[i]), 1, memory_order_relaxed);
	return 0;
}

static void chunks_put(uint8_t *const *c, uint32_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&pool_mu);
	for (uint32_t i = 0; i < n; i++)
		push_free(c[i]);
	pthread_mutex_unlock(&pool_mu);
}

static struct snap_lft *lft_alloc(uint32_t nchunks)
{
	struct snap_lft *t = malloc(sizeof(*t) + (size_t)nchunks * sizeof(t->chunk[0]));
	if (!t)
		return NULL;
	atomic_init(&t->refs, 1);
	t->nchunks = nchunks;
	return t;
}

/* Slabs first touched by several threads: a decode's tables need fresh
 * memory, and its page faults, which zero the pages, are most of its
 * time. At k=56, 188 MiB faulted in 2 MiB pages took 318 ms on one core
 * of the lab's VM (its host backs memory the guest freed anew) and 187 ms
 * on two; 11 ms either way when the memory was warm. */
#define RESERVE_THREADS 4

struct reserve_part {
	uint8_t **base;
	size_t n, step;
};

static void *reserve_run(void *arg)
{
	const struct reserve_part *r = arg;
	for (size_t i = 0; i < r->n; i += r->step)
		slab_init(r->base[i]);
	return NULL;
}

/* Initializes the n slabs at base[] with up to RESERVE_THREADS threads
 * (as many as the cores online); any that cannot start leave their share
 * to the caller. */
static void reserve_init(uint8_t **base, size_t n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t t = cpus < 1 ? 1 : cpus > RESERVE_THREADS ? RESERVE_THREADS : (size_t)cpus;
	if (t > n)
		t = n ? n : 1;
	pthread_t th[RESERVE_THREADS];
	struct reserve_part part[RESERVE_THREADS];
	int started[RESERVE_THREADS] = { 0 };
	for (size_t k = 1; k < t; k++) {
		part[k] = (struct reserve_part){ base + k, n - k, t };
		started[k] = !pthread_create(&th[k], NULL, reserve_run, &part[k]);
	}
	for (size_t k = 0; k < t; k++)
		if (!started[k]) {
			part[k] = (struct reserve_part){ base + k, n - k, t };
			reserve_run(&part[k]);
		}
	for (size_t k = 1; k < t; k++)
		if (started[k])
			pthread_join(th[k], NULL);
}

/* A slab just mapped and initialized, among the kept empty ones. */
static void empty_add(struct slab *s)
{
	s->next = pool_empty;
	pool_empty = s;
	pool_idle++;
	pool_spare += SLAB_USABLE;
	pool_slabs++;
}

int lft_reserve(uint64_t nchunks)
{
	pthread_mutex_lock(&pool_mu);
	uint64_t have = pool_idle * SLAB_USABLE + (pool_fill ? pool_fill->nfree : 0);
	pthread_mutex_unlock(&pool_mu);
	if (nchunks <= have)
		return 0;
	size_t n = (size_t)((nchunks - have + SLAB_USABLE - 1) / SLAB_USABLE), m = 0;
	uint8_t **base = malloc(n * sizeof(*base));
	if (!base)
		return -1;
	while (m < n && (base[m] = slab_map()))
		m++;
	reserve_init(base, m);
	pthread_mutex_lock(&pool_mu);
	for (size_t i = 0; i < m; i++)
		empty_add(slab_of(base[i]));
	pthread_mutex_unlock(&pool_mu);
	free(base);
	return m == n ? 0 : -1;
}

void lft_trim(void)
{
	pthread_mutex_lock(&pool_mu);
	/* Giving one back leaves the spare a slab smaller: never below
	 * the ready reserve. */
	while (pool_idle > SLAB_KEEP && pool_spare >= pool_ready + SLAB_USABLE) {
		struct slab *s = pool_empty;
		pool_empty = s->next;
		pool_idle--;
		slab_unmap(s);
	}
	pthread_mutex_unlock(&pool_mu);
}

void snap_lft_want_ready(int64_t chunks)
{
	pthread_mutex_lock(&pool_mu);
	pool_ready = chunks < 0 && (uint64_t)-chunks > pool_ready ? 0 : pool_ready + (uint64_t)chunks;
	pthread_mutex_unlock(&pool_mu);
	if (chunks < 0)
		lft_trim();
}

uint64_t snap_lft_make_ready(const atomic_int *stop)
{
	uint64_t made = 0;
	lft_trim(); /* what a larger reserve, or the chunks given back since, left over */
	while (!(stop && atomic_load_explicit(stop, memory_order_relaxed))) {
		pthread_mutex_lock(&pool_mu);
		int short_of = pool_spare < pool_ready;
		pthread_mutex_unlock(&pool_mu);
		uint8_t *base = short_of ? slab_map() : NULL;
		if (!base)
			break;
		/* The page faults here, off the copies' way: fresh memory is
		 * what a delta's copies cost most where the host backs it anew
		 * (snapshot.h). */
		struct slab *s = slab_init(base);
		pthread_mutex_lock(&pool_mu);
		empty_add(s);
		pthread_mutex_unlock(&pool_mu);
		made += SLAB_BYTES;
	}
	return made;
}

uint64_t snap_lft_taken(void)
{
	return taken_here;
}

struct snap_lft *lft_new_from(const uint8_t *src, uint32_t len)
{
	uint32_t nc = (len + SNAP_LFT_CHUNK - 1) >> SNAP_LFT_CHUNK_SHIFT;
	struct snap_lft *t = nc ? lft_alloc(nc) : NULL;
	if (!t || chunks_get((uint8_t **)t->chunk, nc)) {
		free(t);
		return NULL;
	}
	for (uint32_t i = 0; i < nc; i++) {
		uint8_t *c = (uint8_t *)t->chunk[i];
		uint32_t at = i << SNAP_LFT_CHUNK_SHIFT, n = len - at < SNAP_LFT_CHUNK ? len - at : SNAP_LFT_CHUNK;
		memcpy(c, src + at, n);
		memset(c + n, SNAP_LFT_NONE, SNAP_LFT_CHUNK - n);
	}
	return t;
}

void lft_prefetch_chunk(const struct snap_node *n, uint32_t l)
{
	if (l >= n->lft_len)
		return;
	const uint8_t *c = n->lft->chunk[l >> SNAP_LFT_CHUNK_SHIFT];
	for (unsigned o = 0; o < SNAP_LFT_CHUNK; o += 64)
		__builtin_prefetch(c + o);
	__builtin_prefetch(chunk_refs(c));
}

void lft_ref(const struct snap_lft *t)
{
	atomic_fetch_add_explicit(&((struct snap_lft *)t)->refs, 1, memory_order_relaxed);
}

void lft_unref(const struct snap_lft *ct)
{
	struct snap_lft *t = (struct snap_lft *)ct;
	if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* The dead chunks gathered at the front of the table's own list. */
	uint32_t k = 0;
	for (uint32_t i = 0; i < t->nchunks; i++)
		if (atomic_fetch_sub_explicit(chunk_refs(t->chunk[i]), 1, memory_order_acq_rel) == 1)
			t->chunk[k++] = t->chunk[i];
	chunks_put((uint8_t *const *)t->chunk, k);
	free(t);
}

/* A second table over t's chunks, held once. */
static struct snap_lft *lft_clone(const struct snap_lft *t)
{
	struct snap_lft *c = lft_alloc(t->nchunks);
	if (!c)
		return NULL;
	for (uint32_t i = 0; i < t->nchunks; i++) {
		c->chunk[i] = t->chunk[i];
		atomic_fetch_add_explicit(chunk_refs(c->chunk[i]), 1, memory_order_relaxed);
	}
	return c;
}

uint8_t *snap_lft_own(struct snap *s, uint32_t node, uint32_t l0, uint32_t cnt)
{
	if (node >= s->nnodes || !cnt)
		return NULL;
	struct snap_node *n = &s->nodes[node];
	if (l0 >= n->lft_len || cnt > n->lft_len - l0 ||
	    (l0 >> SNAP_LFT_CHUNK_SHIFT) != ((l0 + cnt - 1) >> SNAP_LFT_CHUNK_SHIFT))
		return NULL;
	/* Held once, by s, which is not shared while it is written: nobody
	 * else can start holding it meanwhile. The same for the chunk. */
	struct snap_lft *t = (struct snap_lft *)n->lft;
	if (atomic_load_explicit(&t->refs, memory_order_acquire) != 1) {
		if (!(t = lft_clone(n->lft)))
			return NULL;
		lft_unref(n->lft);
		n->lft = t;
	}
	uint32_t ci = l0 >> SNAP_LFT_CHUNK_SHIFT;
	uint8_t *c = (uint8_t *)t->chunk[ci];
	if (atomic_load_explicit(chunk_refs(c), memory_order_acquire) != 1) {
		uint8_t *nc;
		if (chunks_get(&nc, 1))
			return NULL;
		memcpy(nc, c, SNAP_LFT_CHUNK);
		t->chunk[ci] = nc;
		if (atomic_fetch_sub_explicit(chunk_refs(c), 1, memory_order_acq_rel) == 1)
			chunks_put(&c, 1); /* the other holder let go meanwhile */
		c = nc;
	}
	return c + (l0 & (SNAP_LFT_CHUNK - 1));
}

void snap_lft_read(const struct snap_node *n, uint32_t l0, uint32_t cnt, uint8_t *dst)
{
	while (cnt) {
		uint32_t run;
		const uint8_t *p = snap_lft_span(n, l0, &run);
		if (!p) {
			memset(dst, SNAP_LFT_NONE, cnt);
			return;
		}
		if (run > cnt)
			run = cnt;
		memcpy(dst, p, run);
		dst += run;
		l0 += run;
		cnt -= run;
	}
}

uint64_t snap_lft_held(const struct snap *s)
{
	uint64_t held = 0;
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].lft)
			held += (uint64_t)s->nodes[i].lft->nchunks * SNAP_LFT_CHUNK;
	return held;
}

uint64_t snap_touch(const struct snap *s, const atomic_int *stop)
{
	uint64_t n = util_touch(s->nodes, (size_t)s->nnodes * sizeof(*s->nodes)) +
		     util_touch(s->ports, (size_t)s->nports * sizeof(*s->ports));
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_lft *t = s->nodes[i].lft;
		if (!t)
			continue;
		if (stop && atomic_load_explicit(stop, memory_order_relaxed))
			break;
		/* the chunk pointers, not the head: its count is atomic, and
		 * other threads change it */
		n += util_touch(t->chunk, t->nchunks * sizeof(t->chunk[0]));
		/* A chunk is an eighth of a page, and a table's chunks lie
		 * anywhere in the pool's slabs: each on its own. */
		for (uint32_t k = 0; k < t->nchunks; k++)
			n += util_touch(t->chunk[k], SNAP_LFT_CHUNK);
	}
	return n;
}

/* The next free chunk after c, as pop_free reads it: reading it touches
 * c's page, which is the point. pool_mu held. */
static uint8_t *free_next(const uint8_t *c)
{
	uint8_t *n;
	UNPOISON(c, sizeof(n));
	memcpy(&n, c, sizeof(n));
	POISON(c, sizeof(n));
	return n;
}

/* The i-th slab with free chunks (the partly used ones, then the kept
 * empty ones), or NULL. pool_mu held. */
static struct slab *spare_slab(size_t i)
{
	for (struct slab *s = pool_partial; s; s = s->next)
		if (!i--)
			return s;
	for (struct slab *s = pool_empty; s; s = s->next)
		if (!i--)
			return s;
	return NULL;
}

uint64_t snap_lft_touch_spare(const atomic_int *stop)
{
	uint64_t n = 0;
	/* A slab at a time: the pool's lock is everyone's (every plane's
	 * builder, and whoever drops a generation's last reference), and a
	 * slab's free chunks left alone for minutes cost ~1 ms to read. The
	 * lists may change in between: a slab read twice or not at all. */
	for (size_t i = 0; !(stop && atomic_load_explicit(stop, memory_order_relaxed)); i++) {
		pthread_mutex_lock(&pool_mu);
		struct slab *s = spare_slab(i);
		if (s) {
			/* Only the free chunks: the others are the tables',
			 * which snap_touch reads, and may be written meanwhile. */
			for (const uint8_t *c = s->free; c; c = free_next(c))
				n += SNAP_LFT_CHUNK;
		}
		pthread_mutex_unlock(&pool_mu);
		if (!s)
			break;
	}
	return n;
}

void snap_lft_pool(uint64_t *used, uint64_t *spare)
{
	pthread_mutex_lock(&pool_mu);
	uint64_t all = pool_slabs * SLAB_USABLE;
	*used = (all - pool_spare) * SNAP_LFT_CHUNK;
	*spare = pool_spare * SNAP_LFT_CHUNK;
	pthread_mutex_unlock(&pool_mu);
}

/* Eight entries at a time, where the byte order allows: snapshot.h. */
uint64_t snap_lft_diff_mask(const uint8_t *a, const uint8_t *b, uint32_t n)
{
	if (!a)
		return snap_lft_first(n);
	uint64_t m = 0;
	uint32_t l = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* Each differing byte's high bit, then those eight bits gathered
	 * into one byte by a multiply; entry l + i is bit i only where the
	 * first byte loads lowest. */
	for (; l + 8 <= n; l += 8) {
		uint64_t x, y;
		memcpy(&x, a + l, 8);
		memcpy(&y, b + l, 8);
		uint64_t d = x ^ y, lo7 = 0x7f7f7f7f7f7f7f7full;
		if (!d)
			continue;
		uint64_t hi = (((d & lo7) + lo7) | d) & ~lo7;
		m |= ((hi >> 7) * 0x0102040810204080ull >> 56) << l;
	}
#endif
	for (; l < n; l++)
		if (a[l] != b[l])
			m |= 1ull << l;
	return m;
}
