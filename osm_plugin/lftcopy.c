/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lftcopy.c - see lftcopy.h. Knows nothing of OpenSM's types, so that the
 * unit tests can drive it with plain arrays (tests/unit/test_lftcopy.c).
 */
#include "lftcopy.h"

#include <stdlib.h>
#include <string.h>

/* ---- pointer map ---------------------------------------------------------- */

static size_t map_slot(const struct ptrmap *m, const void *k)
{
	/* Fibonacci hashing: the keys are malloc'd structs, whose low bits
	 * are alignment and carry no information. */
	return (size_t)(((uint64_t)(uintptr_t)k * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
}

int ptrmap_reset(struct ptrmap *m, size_t n)
{
	size_t cap = 64;

	while (cap < 2 * n + 1)
		cap *= 2;
	if (cap > m->cap) {
		const void **k = malloc(cap * sizeof *k);
		uint32_t *v = malloc(cap * sizeof *v);
		if (!k || !v) {
			free(k);
			free(v);
			return -1;
		}
		free(m->key);
		free(m->val);
		m->key = k;
		m->val = v;
		m->cap = cap;
	}
	memset(m->key, 0, m->cap * sizeof *m->key);
	return 0;
}

/* The caller keeps entries below half of cap (ptrmap_reset's n). */
void ptrmap_put(struct ptrmap *m, const void *k, uint32_t v)
{
	size_t i = map_slot(m, k);

	while (m->key[i] && m->key[i] != k)
		i = (i + 1) & (m->cap - 1);
	m->key[i] = k;
	m->val[i] = v;
}

int64_t ptrmap_get(const struct ptrmap *m, const void *k)
{
	size_t i;

	if (!m->cap)
		return -1;
	for (i = map_slot(m, k); m->key[i]; i = (i + 1) & (m->cap - 1))
		if (m->key[i] == k)
			return m->val[i];
	return -1;
}

void ptrmap_free(struct ptrmap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
}

/* ---- the kept copy ---------------------------------------------------------- */

int lfc_init(struct lfc *c)
{
	memset(c, 0, sizeof *c);
	return pthread_mutex_init(&c->lock, NULL) ? -1 : 0;
}

void lfc_free(struct lfc *c)
{
	pthread_mutex_destroy(&c->lock);
	free(c->note);
	free(c->mir);
	ptrmap_free(&c->kept);
	ptrmap_free(&c->last);
	memset(c, 0, sizeof *c);
}

void lfc_note(struct lfc *c, const void *sw, uint32_t block)
{
	pthread_mutex_lock(&c->lock);
	if (c->n < c->cap) {
		c->note[c->n].sw = sw;
		c->note[c->n].block = block;
		c->n++;
	} else if (!c->lost) {
		c->lost = 1;
		c->lost_why = "more changed blocks than noted";
	}
	pthread_mutex_unlock(&c->lock);
}

void lfc_invalidate(struct lfc *c, const char *why)
{
	pthread_mutex_lock(&c->lock);
	if (!c->lost) {
		c->lost = 1;
		c->lost_why = why;
	}
	pthread_mutex_unlock(&c->lock);
}

int lfc_prepare(struct lfc *c, size_t nodes, size_t blocks)
{
	size_t want = blocks / 2 + 1024;
	int rc = 0;

	if (nodes > c->mir_cap) {
		size_t cap = nodes + nodes / 8 + 64;
		struct lfc_mirror *m = realloc(c->mir, cap * sizeof *m);
		if (m) {
			/* lfc_switch() writes every entry under the lock: fault
			 * the new ones in now */
			memset(m + c->mir_cap, 0, (cap - c->mir_cap) * sizeof *m);
			c->mir = m;
			c->mir_cap = cap;
		} else {
			rc = -1;
		}
	}
	if (ptrmap_reset(&c->kept, c->mir_cap))
		rc = -1;
	/* Receivers may be appending: the new list is filled under the mutex
	 * and swapped in, the old one freed after. */
	if (want > c->cap) {
		struct lfc_note *nn = malloc(want * sizeof *nn), *old = NULL;
		if (nn) {
			pthread_mutex_lock(&c->lock);
			if (c->n)
				memcpy(nn, c->note, c->n * sizeof *nn);
			old = c->note;
			c->note = nn;
			c->cap = want;
			pthread_mutex_unlock(&c->lock);
			free(old);
		} else {
			rc = -1;
		}
	}
	if (rc)
		lfc_invalidate(c, "out of memory for the note list");
	return rc;
}

size_t lfc_warm(struct lfc *c, uint8_t *stage, size_t len)
{
	size_t i, n, touched = 0;
	int lost;

	/* Receivers append past n while we read: entries below it were
	 * written before the mutex handed n over, and only this thread moves
	 * the list (lfc_prepare, lfc_end). Not holding the mutex while pages
	 * fault in keeps lfc_note() from waiting on us. */
	pthread_mutex_lock(&c->lock);
	n = c->n;
	lost = c->lost;
	pthread_mutex_unlock(&c->lock);
	if (lost || !n || !c->valid || !c->mir_n || ptrmap_reset(&c->last, c->mir_n))
		return 0; /* a pass that copies every table whole needs none */
	for (i = 0; i < c->mir_n; i++)
		if (c->mir[i].sw)
			ptrmap_put(&c->last, c->mir[i].sw, (uint32_t)i);
	for (i = 0; i < n; i++) {
		int64_t idx = ptrmap_get(&c->last, c->note[i].sw);
		if (idx < 0)
			continue;
		const struct lfc_mirror *m = &c->mir[idx];
		uint64_t bo = (uint64_t)c->note[i].block * LFC_BLOCK;
		if (bo >= m->len || m->off + bo >= len)
			continue;
		/* Tables sit at any offset, so a block may straddle two
		 * pages: its first and last bytes. Writes: a page only read
		 * may fault again when written. */
		uint64_t last = (bo + LFC_BLOCK <= m->len ? bo + LFC_BLOCK : m->len) - 1;
		volatile uint8_t *b = stage + m->off + bo;
		*b = *b;
		if (m->off + last < len) {
			b = stage + m->off + last;
			*b = *b;
		}
		touched++;
	}
	return touched;
}

void lfc_begin(struct lfc *c, const char *full_why)
{
	memset(&c->st, 0, sizeof c->st);
	pthread_mutex_lock(&c->lock);
	if (c->lost) {
		/* this pass copies everything, which covers whatever was lost */
		if (!full_why)
			full_why = c->lost_why;
		c->lost = 0;
		c->lost_why = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (!full_why && !c->valid)
		full_why = "no earlier copy";
	if (!full_why && !c->kept.cap)
		full_why = "out of memory";
	c->st.full = full_why != NULL;
	c->st.why = full_why;
	c->overflow = 0;
	c->done = 0;
	c->valid = 0; /* until lfc_end() says the walk finished */
}

int lfc_switch(struct lfc *c, uint32_t idx, const void *sw, const void *lft, uint64_t guid, uint64_t off,
	       uint32_t len)
{
	int keep;

	if (idx >= c->mir_cap) {
		/* lfc_prepare() was told fewer nodes than there are: this
		 * pass cannot be remembered, so the next one copies all. */
		c->overflow = 1;
		return 0;
	}
	struct lfc_mirror *m = &c->mir[idx];
	if (!sw) {
		memset(m, 0, sizeof *m);
		return 0;
	}
	keep = !c->st.full && idx < c->mir_n && m->sw == sw && m->lft == lft && m->guid == guid &&
	       m->off == off && m->len == len;
	m->sw = sw;
	m->lft = lft;
	m->guid = guid;
	m->off = off;
	m->len = len;
	if (keep) {
		ptrmap_put(&c->kept, sw, idx);
		c->st.kept++;
	} else {
		c->st.whole++;
	}
	return keep;
}

int lfc_apply(struct lfc *c, uint8_t *stage, size_t max)
{
	size_t i, end;
	int more;

	pthread_mutex_lock(&c->lock);
	if (c->st.full || !c->st.kept)
		c->done = c->n; /* every kept table is whole: notes are moot */
	end = c->n - c->done > max ? c->done + max : c->n;
	for (i = c->done; i < end; i++) {
		int64_t idx = ptrmap_get(&c->kept, c->note[i].sw);
		if (idx < 0)
			continue; /* copied whole this pass, or gone */
		const struct lfc_mirror *m = &c->mir[idx];
		uint64_t bo = (uint64_t)c->note[i].block * LFC_BLOCK;
		if (bo >= m->len)
			continue; /* beyond the LIDs in use: not copied */
		uint32_t n = m->len - bo < LFC_BLOCK ? (uint32_t)(m->len - bo) : LFC_BLOCK;
		/* m->lft is the live table seen in this walk. */
		memcpy(stage + m->off + bo, (const uint8_t *)m->lft + bo, n);
		c->st.blocks++;
	}
	c->done = end;
	c->st.notes = end;
	more = end < c->n;
	pthread_mutex_unlock(&c->lock);
	return more;
}

void lfc_end(struct lfc *c, uint32_t nnodes, int ok)
{
	pthread_mutex_lock(&c->lock);
	/* Only what lfc_apply() saw is consumed. OpenSM raises block events
	 * with its lock held exclusively, so none can arrive while we hold it
	 * for reading; if one ever did, it stays for the next pass. */
	if (c->st.notes <= c->n) {
		if (c->n > c->st.notes)
			memmove(c->note, c->note + c->st.notes, (c->n - c->st.notes) * sizeof *c->note);
		c->n -= c->st.notes;
	}
	pthread_mutex_unlock(&c->lock);
	c->valid = ok && !c->overflow;
	c->mir_n = c->valid ? nnodes : 0;
}
