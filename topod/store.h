/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store.h - the fabric being served, published RCU-style.
 *
 * A struct fabric is immutable once published: the snapshot plus everything
 * built from it. Readers take a reference with store_get() and then work
 * without any lock; store_publish() swaps in a new fabric and the last
 * reader of the old one frees it. So an answer is computed entirely from one
 * generation, whatever arrives meanwhile.
 */
#ifndef TOPOD_STORE_H
#define TOPOD_STORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "snapshot.h"

struct fabric_index; /* built query structures (fabric.c) */
struct history;      /* the generations before this one (history.c) */
struct route_namemap;
struct gone;        /* remembered hosts (gone.c) */
struct gone_cables; /* remembered cables (gone.c) */

struct fabric {
	atomic_uint refs;
	struct snap *snap;          /* never NULL; an empty snapshot before the first */
	struct fabric_index *index; /* NULL for the empty fabric */
	char source[128];           /* where it came from, for info/stats */
	uint64_t received_us;       /* when topod got it */
	double decode_ms, build_ms; /* what ingesting it cost */
	struct history *hist;       /* borrowed: the builder's, outlives every fabric */
	const struct route_namemap *map; /* borrowed: the names the index was built with */
	struct route_namemap *own_map;   /* owned: map when it is this generation's own (namemap.h), or NULL */
	struct gone *gone;          /* hosts earlier generations had and this one lacks (gone.h); may be NULL */
	struct gone_cables *gone_cables; /* cables earlier generations had, now unplugged (gone.h); may be NULL */
	const _Atomic uint64_t *held; /* borrowed: the builder's generation held back (0: none), or NULL */
};

struct store {
	pthread_mutex_t lock; /* covers only the load+increment of cur */
	struct fabric *cur;
	/* Called after every publish, from the publishing thread (the
	 * server wakes its `watch` clients with it). Set before any builder
	 * thread starts. */
	void (*on_publish)(void *arg);
	void *on_publish_arg;
};

/* Takes ownership of s; NULL on ENOMEM (s is then freed). */
struct fabric *fabric_new(struct snap *s, const char *source);
/* Drops a reference; the last one frees the fabric. NULL is a no-op. */
void fabric_put(struct fabric *f);

int store_init(struct store *st); /* publishes an empty fabric */
void store_destroy(struct store *st);
/* A new reference to the current fabric; release it with fabric_put(). */
struct fabric *store_get(struct store *st);
/* Makes f current; takes over the caller's reference. */
void store_publish(struct store *st, struct fabric *f);
/* store_publish() in two steps: queries see f at once, `watch` clients
 * (on_publish) only at store_notify(), which the builder calls once the
 * history holds f, so that a watcher woken by G finds G in `diff`. */
void store_swap(struct store *st, struct fabric *f);
void store_notify(struct store *st);

#endif
