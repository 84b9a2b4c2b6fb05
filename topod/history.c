/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * history.c - see history.h.
 */
#include "history.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "delta.h"
#include "fabric.h"
#include "log.h"
#include "store.h"
#include "util.h"

#define HIST_MAGIC "TOPOHIST"
#define HIST_LINE_MAX 512

struct entry {
	struct history_meta m;
	uint8_t *data; /* reverse delta or full encoding; NULL for the served */
	size_t len;
};

struct history {
	pthread_mutex_t lock;
	unsigned max_gens;
	size_t max_bytes, bytes;
	char dir[4096];
	struct entry *e; /* oldest first; e[n-1] is the served generation */
	size_t n, cap;
	struct fabric *head;
};

struct history *history_new(unsigned max_gens, size_t max_bytes, const char *dir)
{
	struct history *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	pthread_mutex_init(&h->lock, NULL);
	h->max_gens = max_gens ? max_gens : 1;
	h->max_bytes = max_bytes;
	if (dir && *dir) {
		if (mkdir(dir, 0700) && errno != EEXIST)
			tlog(TLOG_WARN, "history: cannot create %s: %s; history is kept in memory only", dir,
			     strerror(errno));
		else
			snprintf(h->dir, sizeof(h->dir), "%s", dir);
	}
	return h;
}

void history_free(struct history *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		free(h->e[i].data);
	free(h->e);
	fabric_put(h->head);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static void meta_of(const struct fabric *f, struct history_meta *m)
{
	const struct snap *s = f->snap;
	const struct fabric_index *x = f->index;
	memset(m, 0, sizeof(*m));
	m->generation = s->generation;
	m->sm_guid = s->sm_guid;
	m->sweep = s->sweep;
	m->timestamp = s->timestamp;
	m->received_us = f->received_us;
	snprintf(m->engine, sizeof(m->engine), "%s", s->engine);
	m->nodes = s->nnodes;
	if (x) {
		m->switches = x->switches;
		m->cas = x->cas;
		m->links = x->links;
		m->hosts = x->rt->nhosts;
	}
	m->kind = 's';
}

static void entry_path(const struct history *h, uint64_t gen, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%020" PRIu64 ".hist", h->dir, gen);
}

/* Engine names come from producers: only a safe alphabet goes to a file. */
static void safe_engine(const char *in, char *out, size_t n)
{
	size_t k = 0;
	for (; in[k] && k + 1 < n; k++) {
		char ch = in[k];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			 ch == '_' || ch == '-' || ch == ',' || ch == '.';
		if (!ok)
			break;
		out[k] = ch;
	}
	out[k] = 0;
	if (!k || in[k])
		snprintf(out, n, "-");
}

static void persist(struct history *h, const struct entry *e)
{
	if (!h->dir[0])
		return;
	char line[HIST_LINE_MAX], eng[SNAP_ENGINE_LEN + 1], path[4200], err[SNAP_ERR_LEN];
	safe_engine(e->m.engine, eng, sizeof(eng));
	int ll = snprintf(line, sizeof(line),
			  "%s 1 generation=%" PRIu64 " sm_guid=%" PRIu64 " sweep=%" PRIu64 " timestamp=%" PRIu64
			  " received_us=%" PRIu64 " nodes=%u switches=%u cas=%u links=%u hosts=%u kind=%c engine=%s\n",
			  HIST_MAGIC, e->m.generation, e->m.sm_guid, e->m.sweep, e->m.timestamp, e->m.received_us,
			  e->m.nodes, e->m.switches, e->m.cas, e->m.links, e->m.hosts, e->m.kind, eng);
	uint8_t *buf = malloc((size_t)ll + e->len);
	if (!buf)
		return;
	memcpy(buf, line, (size_t)ll);
	memcpy(buf + ll, e->data, e->len);
	entry_path(h, e->m.generation, path, sizeof(path));
	/* Not part of any acknowledgement, so no fsync is owed; but a torn
	 * file must never be read back, hence the atomic write. */
	if (snap_write_atomic_mode(path, buf, (size_t)ll + e->len, 0600, err))
		tlog(TLOG_WARN, "history: %s", err);
	free(buf);
}

static void evict(struct history *h)
{
	while (h->n > 1 && (h->n > h->max_gens || h->bytes > h->max_bytes)) {
		struct entry *e = &h->e[0];
		if (h->dir[0]) {
			char path[4200];
			entry_path(h, e->m.generation, path, sizeof(path));
			unlink(path);
		}
		h->bytes -= e->len;
		free(e->data);
		memmove(h->e, h->e + 1, (h->n - 1) * sizeof(*h->e));
		h->n--;
	}
}

static int reserve(struct history *h, size_t need)
{
	if (need <= h->cap)
		return 0;
	size_t c = h->cap ? h->cap * 2 : 16;
	while (c < need)
		c *= 2;
	struct entry *ne = realloc(h->e, c * sizeof(*ne));
	if (!ne)
		return -1;
	h->e = ne;
	h->cap = c;
	return 0;
}

/* The served generation becomes its reverse delta against f's snapshot.
 * The blocks a delta brought say where the two can differ only when it
 * was applied to this very snapshot (history_push). Comparing every table
 * a reroute copied instead (2,600 of them at k=56 for 0.5 % of the
 * blocks, bench/bench_delta.py) holds up the builder's next snapshot. */
static int retire_head(struct history *h, const struct fabric *f, const struct snap *base, const uint64_t *block,
		       size_t nblock)
{
	char err[SNAP_ERR_LEN];
	struct entry *last = &h->e[h->n - 1];
	uint8_t *d = NULL;
	size_t dl = 0;
	const uint64_t *hint = base && base == h->head->snap ? block : NULL;
	int rc = snap_delta_encode_hint(f->snap, h->head->snap, hint, nblock, &d, &dl, err);
	last->m.kind = 'd';
	if (rc == SNAP_DELTA_FULL) {
		rc = snap_encode(h->head->snap, &d, &dl, err);
		last->m.kind = 'f';
	}
	if (rc) {
		tlog(TLOG_WARN, "history: cannot keep generation %" PRIu64 ": %s", last->m.generation, err);
		return -1;
	}
	last->data = d;
	last->len = dl;
	last->m.bytes = dl;
	h->bytes += dl;
	persist(h, last);
	return 0;
}

void history_push(struct history *h, struct fabric *f, const struct snap *base, const uint64_t *block,
		  size_t nblock)
{
	if (!h || !f->index)
		return;
	pthread_mutex_lock(&h->lock);
	if (h->head && retire_head(h, f, base, block, nblock)) {
		/* Without the delta the chain back is broken: start over. */
		for (size_t i = 0; i < h->n; i++)
			free(h->e[i].data);
		h->n = 0;
		h->bytes = 0;
	}
	if (reserve(h, h->n + 1)) {
		pthread_mutex_unlock(&h->lock);
		return;
	}
	struct entry *e = &h->e[h->n++];
	memset(e, 0, sizeof(*e));
	meta_of(f, &e->m);
	atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
	fabric_put(h->head);
	h->head = f;
	evict(h);
	pthread_mutex_unlock(&h->lock);
}

/* ---- start-up: entries a previous run wrote ------------------------------- */

static int parse_line(const char *line, struct history_meta *m)
{
	char eng[SNAP_ENGINE_LEN + 1] = "";
	char kind = 0;
	int ver = 0;
	memset(m, 0, sizeof(*m));
	if (sscanf(line,
		   HIST_MAGIC " %d generation=%" SCNu64 " sm_guid=%" SCNu64 " sweep=%" SCNu64 " timestamp=%" SCNu64
			      " received_us=%" SCNu64 " nodes=%u switches=%u cas=%u links=%u hosts=%u kind=%c engine=%63s",
		   &ver, &m->generation, &m->sm_guid, &m->sweep, &m->timestamp, &m->received_us, &m->nodes,
		   &m->switches, &m->cas, &m->links, &m->hosts, &kind, eng) != 13 ||
	    ver != 1 || (kind != 'd' && kind != 'f'))
		return -1;
	m->kind = kind;
	snprintf(m->engine, sizeof(m->engine), "%s", eng);
	return 0;
}

static int read_entry(const char *path, size_t max, struct entry *e)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return -1;
	char line[HIST_LINE_MAX];
	int rc = -1;
	struct stat st;
	if (!fgets(line, sizeof(line), fp) || !strchr(line, '\n') || parse_line(line, &e->m) ||
	    fstat(fileno(fp), &st))
		goto out;
	long at = ftell(fp);
	if (at < 0 || st.st_size <= at || (size_t)(st.st_size - at) > max)
		goto out;
	e->len = (size_t)(st.st_size - at);
	e->data = malloc(e->len);
	if (!e->data || fread(e->data, 1, e->len, fp) != e->len)
		goto out;
	/* Only the framing here; the contents are checked when applied. */
	uint64_t plen;
	int isd;
	char err[SNAP_ERR_LEN];
	if (snap_peek_any(e->data, e->len, &plen, &isd, err) || isd != (e->m.kind == 'd') ||
	    plen != e->len - SNAP_HEADER_LEN)
		goto out;
	e->m.bytes = e->len;
	rc = 0;
out:
	if (rc) {
		free(e->data);
		e->data = NULL;
	}
	fclose(fp);
	return rc;
}

static int cmp_gen(const void *a, const void *b)
{
	uint64_t x = ((const struct entry *)a)->m.generation, y = ((const struct entry *)b)->m.generation;
	return x < y ? -1 : x > y;
}

int history_load(struct history *h)
{
	if (!h || !h->dir[0])
		return 0;
	DIR *d = opendir(h->dir);
	if (!d)
		return 0;
	pthread_mutex_lock(&h->lock);
	uint64_t served = h->head ? h->head->snap->generation : 0;
	struct entry *got = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		if (nl < 6 || strcmp(de->d_name + nl - 5, ".hist"))
			continue;
		char path[4400];
		snprintf(path, sizeof(path), "%s/%s", h->dir, de->d_name);
		struct entry e = { 0 };
		if (!h->head || read_entry(path, h->max_bytes, &e) || e.m.generation >= served) {
			/* Unreadable, or from a future this state no longer has
			 * (a forced restore): nothing can chain to it. */
			tlog(TLOG_INFO, "history: dropping %s", path);
			free(e.data);
			unlink(path);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct entry *ng = realloc(got, cap * sizeof(*ng));
			if (!ng) {
				free(e.data);
				break;
			}
			got = ng;
		}
		got[n++] = e;
	}
	closedir(d);
	int added = 0;
	if (n && !reserve(h, h->n + n)) {
		qsort(got, n, sizeof(*got), cmp_gen);
		memmove(h->e + n, h->e, h->n * sizeof(*h->e));
		for (size_t i = 0; i < n; i++) {
			h->e[i] = got[i];
			h->bytes += got[i].len;
		}
		h->n += n;
		added = (int)n;
		evict(h);
	} else {
		for (size_t i = 0; i < n; i++)
			free(got[i].data);
	}
	free(got);
	pthread_mutex_unlock(&h->lock);
	return added;
}

/* ---- reading -------------------------------------------------------------- */

int history_list(struct history *h, struct history_meta **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	if (!h)
		return 0;
	pthread_mutex_lock(&h->lock);
	int rc = 0;
	if (h->n) {
		*out = malloc(h->n * sizeof(**out));
		if (!*out)
			rc = -1;
		else
			for (size_t i = 0; i < h->n; i++)
				(*out)[i] = h->e[i].m;
		*n = *out ? h->n : 0;
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

uint64_t history_at(struct history *h, uint64_t t_us)
{
	uint64_t g = 0;
	if (!h)
		return 0;
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n; i++)
		if (h->e[i].m.timestamp <= t_us)
			g = h->e[i].m.generation;
	pthread_mutex_unlock(&h->lock);
	return g;
}

size_t history_bytes(struct history *h)
{
	pthread_mutex_lock(&h->lock);
	size_t b = h->bytes;
	pthread_mutex_unlock(&h->lock);
	return b;
}

int history_get(struct history *h, uint64_t gen, struct snap **out, struct history_meta *meta,
		char err[SNAP_ERR_LEN])
{
	if (!h) {
		snprintf(err, SNAP_ERR_LEN, "generation %" PRIu64 " is not held: no history is kept", gen);
		return 1;
	}
	pthread_mutex_lock(&h->lock);
	size_t idx = h->n;
	for (size_t i = 0; i < h->n; i++)
		if (h->e[i].m.generation == gen)
			idx = i;
	if (idx == h->n) {
		if (h->n)
			snprintf(err, SNAP_ERR_LEN, "generation %" PRIu64 " is not in the history (it holds %" PRIu64
						    " to %" PRIu64 ")",
				 gen, h->e[0].m.generation, h->e[h->n - 1].m.generation);
		else
			snprintf(err, SNAP_ERR_LEN, "generation %" PRIu64 " is not in the history (it is empty)", gen);
		pthread_mutex_unlock(&h->lock);
		return 1;
	}
	if (meta)
		*meta = h->e[idx].m;
	/* Copies of the deltas from gen up to the served one: the rebuild
	 * runs without the lock, and eviction may free the originals. */
	size_t k = h->n - 1 - idx;
	struct entry *chain = k ? calloc(k, sizeof(*chain)) : NULL;
	int oom = k && !chain;
	for (size_t i = 0; i < k && !oom; i++) {
		chain[i] = h->e[idx + i];
		chain[i].data = malloc(chain[i].len);
		if (!chain[i].data)
			oom = 1;
		else
			memcpy(chain[i].data, h->e[idx + i].data, chain[i].len);
	}
	struct fabric *head = h->head;
	atomic_fetch_add_explicit(&head->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&h->lock);

	int rc = 0;
	struct snap *cur = NULL;
	if (oom) {
		snprintf(err, SNAP_ERR_LEN, "out of memory");
		rc = -1;
	} else if (!k) {
		cur = snap_dup(head->snap);
		if (!cur) {
			snprintf(err, SNAP_ERR_LEN, "out of memory");
			rc = -1;
		}
	}
	for (size_t i = k; i-- > 0 && !rc;) {
		const struct snap *base = cur ? cur : head->snap;
		struct snap *next = NULL;
		if (chain[i].m.kind == 'f')
			rc = snap_decode(chain[i].data, chain[i].len, &next, err);
		else
			rc = snap_delta_apply(base, chain[i].data, chain[i].len, &next, NULL, err) ? -1 : 0;
		if (rc) {
			char e2[SNAP_ERR_LEN];
			snprintf(e2, sizeof(e2), "history of generation %" PRIu64 " is damaged: %.180s",
				 chain[i].m.generation, err);
			memcpy(err, e2, SNAP_ERR_LEN);
		}
		snap_free(cur);
		cur = next;
	}
	for (size_t i = 0; i < k; i++)
		free(chain[i].data);
	free(chain);
	fabric_put(head);
	if (rc) {
		snap_free(cur);
		return -1;
	}
	*out = cur;
	return 0;
}
