/*
 * test_touch.c - what topod's preparation thread reads between snapshots to
 * keep the served generation mapped (snap_touch, fabric_index_touch;
 * topod --warm-interval): every array of the snapshot and of its index
 * with the length it was allocated with (a missing or doubled array
 * changes the total; a length past an allocation's end shows in the
 * sanitised build when the read lands in a redzone), a shared table's
 * chunks once per table that holds them, the pool's free chunks and no
 * other, and nothing after the stop flag is raised.
 */
#include "fabric.h"
#include "testfab.h"

static uint64_t snap_bytes(const struct snap *s)
{
	uint64_t n = (uint64_t)s->nnodes * sizeof(*s->nodes) + (uint64_t)s->nports * sizeof(*s->ports);
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].lft)
			n += s->nodes[i].lft->nchunks * (sizeof(void *) + SNAP_LFT_CHUNK);
	return n;
}

int main(void)
{
	struct snap *s = snap_new();
	tf_fattree3(s, 8);
	tf_fattree3_finish(s, 8);
	char err[AN_ERR_LEN];
	struct fabric_index *x = NULL;
	int rc = fabric_index_build(s, NULL, 1, &x, err);
	CHECK(rc == AN_OK && x && x->hc && hopcover_complete(x->hc), "a k=8 fat tree indexed, its cover complete");
	if (!x)
		return tf_failures != 0;

	uint64_t want = snap_bytes(s);
	CHECK(snap_touch(s, NULL) == want, "the snapshot: nodes, ports, every table's chunk pointers and chunks (%llu bytes)",
	      (unsigned long long)want);
	atomic_int stop = 1;
	uint64_t head = (uint64_t)s->nnodes * sizeof(*s->nodes) + (uint64_t)s->nports * sizeof(*s->ports);
	CHECK(snap_touch(s, &stop) == head, "stopped: no table read");

	const struct route_tab *rt = x->rt;
	const struct hier *h = x->hier;
	const struct hopdist *d = x->hc->hd;
	uint64_t rails = 0;
	for (uint32_t i = 0; i < rt->nhosts; i++)
		rails += rt->hosts[i].nrails;
	uint64_t npt = 0;
	for (uint32_t i = 0; i < rt->nsw; i++)
		npt += s->nodes[rt->sw_node[i]].nports + 1u;
	uint64_t idx = rt->neps * sizeof(*rt->eps) + rt->nhosts * sizeof(*rt->hosts) + rails * sizeof(*rt->rails) +
		       ((uint64_t)rt->max_lid + 1) * sizeof(*rt->lid_ep) + rt->nguid * sizeof(*rt->guid_ep) +
		       rt->nsw * (sizeof(*rt->sw_node) + sizeof(*rt->pt_off) + sizeof(*rt->swlft)) +
		       (uint64_t)s->nnodes * sizeof(*rt->sw_of_node) + npt * sizeof(*rt->pt);
	uint64_t hi = h->nclusters * (sizeof(*h->clusters) + sizeof(*h->names)) +
		      h->nhosts * (sizeof(*h->host_parent) + (uint64_t)h->depth * sizeof(*h->anc)) +
		      h->nsw * sizeof(*h->swnames);
	uint64_t cov = d->nsw + (uint64_t)d->nlid + (uint64_t)d->nlid * sizeof(*d->lid_leaf) +
		       (uint64_t)d->nsw * d->nleaf;
	uint64_t got = fabric_index_touch(x, NULL);
	CHECK(got == idx + hi + cov, "the index: routes %llu, hierarchy %llu, cover and distances %llu bytes (%llu)",
	      (unsigned long long)idx, (unsigned long long)hi, (unsigned long long)cov, (unsigned long long)got);
	CHECK(fabric_index_touch(x, &stop) == idx, "stopped: the routes only");
	CHECK(fabric_index_touch(NULL, NULL) == 0, "no index: nothing");

	/* A delta's generation shares its base's tables: read through it,
	 * each chunk once per table. */
	struct snap *c = snap_dup(s);
	uint8_t *t = snap_lft_own(c, s->nnodes - 1, 0, 1);
	CHECK(t && snap_touch(c, NULL) == want, "a copy that owns one chunk of its own covers as many bytes");
	snap_free(c);
	/* The chunk the copy owned is free now: the next copy's. Every free
	 * chunk is read, through the links that poison them under the
	 * sanitiser (which must not report it), and no chunk in use. */
	uint64_t used, spare;
	snap_lft_pool(&used, &spare);
	uint64_t sp = snap_lft_touch_spare(NULL);
	CHECK(spare > 0 && sp == spare, "the pool's free chunks read: %llu bytes of %llu", (unsigned long long)sp,
	      (unsigned long long)spare);
	CHECK(snap_lft_touch_spare(&stop) == 0, "stopped: no slab read");
	fabric_index_free(x);
	snap_free(s);
	return tf_failures != 0;
}
