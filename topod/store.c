/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store.c - see store.h.
 */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>

#include "fabric.h"
#include "gone.h"

struct fabric *fabric_new(struct snap *s, const char *source)
{
	struct fabric *f = calloc(1, sizeof(*f));
	if (!f) {
		snap_free(s);
		return NULL;
	}
	atomic_init(&f->refs, 1);
	f->snap = s;
	snprintf(f->source, sizeof(f->source), "%s", source);
	f->received_us = snap_now_us();
	return f;
}

void fabric_put(struct fabric *f)
{
	if (!f)
		return;
	/* acq_rel: the freeing thread must see every write the other
	 * holders made before they let go. */
	if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
		return;
	fabric_index_free(f->index);
	gone_free(f->gone);
	gone_cables_free(f->gone_cables);
	route_namemap_free(f->own_map);
	snap_free(f->snap);
	free(f);
}

int store_init(struct store *st)
{
	struct snap *s = snap_new();
	if (!s)
		return -1;
	st->on_publish = NULL;
	st->on_publish_arg = NULL;
	st->cur = fabric_new(s, "none");
	if (!st->cur)
		return -1;
	return pthread_mutex_init(&st->lock, NULL) ? -1 : 0;
}

void store_destroy(struct store *st)
{
	fabric_put(st->cur);
	st->cur = NULL;
	pthread_mutex_destroy(&st->lock);
}

struct fabric *store_get(struct store *st)
{
	/* Without the lock a publish could free cur between our load and
	 * our increment. */
	pthread_mutex_lock(&st->lock);
	struct fabric *f = st->cur;
	atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&st->lock);
	return f;
}

void store_swap(struct store *st, struct fabric *f)
{
	pthread_mutex_lock(&st->lock);
	struct fabric *old = st->cur;
	st->cur = f;
	pthread_mutex_unlock(&st->lock);
	fabric_put(old);
}

void store_notify(struct store *st)
{
	if (st->on_publish)
		st->on_publish(st->on_publish_arg);
}

void store_publish(struct store *st, struct fabric *f)
{
	store_swap(st, f);
	store_notify(st);
}
