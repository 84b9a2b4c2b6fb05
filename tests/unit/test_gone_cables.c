/*
 * test_gone_cables.c - topod remembers a cable an earlier generation had
 * while both its ports stay linked to nothing (gone.h), so that `links`
 * lists a pulled cable as Down: kept across generations, dropped when an
 * end is cabled again or its node leaves, each port in one entry at most.
 * And the gone hosts (gone_next): a generation whose route index is its
 * predecessor's (no port or description changed) carries the list the
 * full search would find.
 */
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "fabric.h"
#include "gone.h"
#include "store.h"
#include "testfab.h"

/* Two switches, cables 1-1, 2-2 and 3-3 between them, a host on each's 4. */
static struct snap *two_switches(int unplug1, int unplug2, int recable2)
{
	struct snap *s = snap_new();
	if (!s)
		tf_die("snap_new");
	uint32_t a = tf_switch(s, 1, 4), b = tf_switch(s, 2, 4);
	uint32_t h1 = tf_ca(s, 1, 1, "h1 HCA-1"), h2 = tf_ca(s, 2, 1, "h2 HCA-1");
	if (!unplug1)
		tf_link(s, a, 1, b, 1);
	if (!unplug2)
		tf_link(s, a, 2, b, 2);
	else if (recable2)
		tf_link(s, a, 2, h2, 1);
	tf_link(s, a, 3, b, 3);
	if (!recable2)
		tf_link(s, b, 4, h2, 1);
	tf_link(s, a, 4, h1, 1);
	tf_finish(s, 0);
	return s;
}

/* A fabric as the builder makes it, as far as gone_cables_next reads it:
 * the snapshot, a non-NULL index, the previous list. */
static struct fabric *fab(struct snap *s, const struct fabric *prev)
{
	struct fabric *f = fabric_new(s, "test");
	if (!f)
		tf_die("fabric_new");
	f->index = (struct fabric_index *)f; /* only tested for NULL here */
	f->gone_cables = gone_cables_next(prev, s, 0, NULL);
	return f;
}

/* field by field: an entry's padding is whatever malloc left */
static int same_list(const struct gone_cables *a, const struct gone_cables *b)
{
	if (a == b)
		return 1;
	if (!a || !b || a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		for (int e = 0; e < 2; e++)
			if (a->v[i].node[e] != b->v[i].node[e] || a->v[i].port[e] != b->v[i].port[e])
				return 0;
	return 1;
}

/* The builder after a delta: prev's snapshot with the delta to f's
 * applied, the list found among the ports the delta rewrote, which must
 * be the one found among every port (a cable whose two ends were both
 * rewritten is found twice, and listed once). */
static void same_by_delta(const struct fabric *prev, const struct fabric *f, const char *what)
{
	char err[SNAP_ERR_LEN];
	uint8_t *d = NULL;
	size_t dl = 0;
	struct snap *s = NULL;
	struct snap_delta_info info = { 0 };
	if (snap_delta_encode(prev->snap, f->snap, &d, &dl, err) || snap_delta_apply(prev->snap, d, dl, &s, &info, err))
		tf_die(err);
	struct gone_cables *every = gone_cables_next(prev, s, 0, NULL), *by = gone_cables_next(prev, s, 0, &info);
	CHECK(info.ports > 0 && same_list(every, by) && same_list(every, f->gone_cables),
	      "%s: the %u ports the delta rewrote find the list every port does (%zu cables)", what, info.ports,
	      by ? by->n : 0);
	gone_cables_free(every);
	gone_cables_free(by);
	snap_free(s);
	free(d);
}

/* Two switches joined by 2-2 and by the crossed cable 1-3 (unless
 * unplugged), a host on each's 4. */
static struct snap *crossed(int unplug)
{
	struct snap *s = snap_new();
	if (!s)
		tf_die("snap_new");
	uint32_t a = tf_switch(s, 1, 4), b = tf_switch(s, 2, 4);
	if (!unplug)
		tf_link(s, a, 1, b, 3);
	tf_link(s, a, 2, b, 2);
	tf_link(s, a, 4, tf_ca(s, 1, 1, "h1 HCA-1"), 1);
	tf_link(s, b, 4, tf_ca(s, 2, 1, "h2 HCA-1"), 1);
	tf_finish(s, 0);
	return s;
}

/* The delta's ports are used only for the delta they came with, and
 * up to SNAP_DELTA_PORT_KEYS of them: any other info, the full search
 * (keys left at 0, which name no cable, would find nothing). */
static void keys_trusted_only(const struct fabric *prev, const struct fabric *f)
{
	struct snap_delta_info *info = calloc(1, sizeof(*info));
	if (!info)
		tf_die("calloc");
	info->generation = f->snap->generation;
	info->base_generation = prev->snap->generation;
	info->base_sm_guid = prev->snap->sm_guid;
	info->base_timestamp = prev->snap->timestamp;
	info->ports = SNAP_DELTA_PORT_KEYS + 1;
	struct gone_cables *far = gone_cables_next(prev, f->snap, 0, info);
	info->ports = 2;
	info->base_generation = prev->snap->generation + 7;
	struct gone_cables *other = gone_cables_next(prev, f->snap, 0, info);
	CHECK(f->gone_cables && same_list(far, f->gone_cables) && same_list(other, f->gone_cables),
	      "a delta of %u ports, or one from another base: every cable searched (%zu found)",
	      SNAP_DELTA_PORT_KEYS + 1, far ? far->n : 0);
	gone_cables_free(far);
	gone_cables_free(other);
	free(info);
}

static void drop(struct fabric *f)
{
	f->index = NULL;
	fabric_put(f);
}

/* Is (guid a, port pa) - (guid b, port pb) in f's list? */
static int listed(const struct fabric *f, uint64_t ga, unsigned pa, uint64_t gb, unsigned pb)
{
	const struct gone_cables *g = f->gone_cables;
	for (size_t i = 0; g && i < g->n; i++) {
		const struct gone_cable *c = &g->v[i];
		if (f->snap->nodes[c->node[0]].guid == ga && c->port[0] == pa && f->snap->nodes[c->node[1]].guid == gb &&
		    c->port[1] == pb)
			return 1;
	}
	return 0;
}

/* Two linked switches with a host each, the second named host2; as the
 * builder makes it after prev (its index built, its gone list found). */
static struct fabric *hosts_fab(const char *host2, const struct fabric *prev)
{
	char err[AN_ERR_LEN];
	struct snap *s = snap_new();
	if (!s)
		tf_die("snap_new");
	uint32_t a = tf_switch(s, 1, 4), b = tf_switch(s, 2, 4);
	tf_link(s, a, 1, b, 1);
	tf_link(s, a, 4, tf_ca(s, 1, 1, "h1 HCA-1"), 1);
	tf_link(s, b, 4, tf_ca(s, 2, 1, host2), 1);
	tf_finish(s, 0);
	s->generation = prev ? prev->snap->generation + 1 : 1;
	struct fabric *f = fabric_new(s, "test");
	if (!f || fabric_index_build(s, NULL, 1, &f->index, err))
		tf_die("hosts_fab");
	f->gone = gone_next(prev, f->index->rt, NULL, 0);
	return f;
}

static int same_gone(const struct gone *a, const struct gone *b)
{
	return a && b && a->n == b->n && !memcmp(a->v, b->v, a->n * sizeof(*a->v));
}

static void gone_hosts(void)
{
	struct fabric *g1 = hosts_fab("h2 HCA-1", NULL), *g2 = hosts_fab("h3 HCA-1", g1);
	CHECK(g2->gone && g2->gone->n == 1 && !strcmp(g2->gone->v[0].name, "h2") && g2->gone->v[0].last_gen == 1,
	      "a host renamed: its old name is gone, last seen in generation 1");
	/* The next generation with g2's route index re-pointed (a delta of
	 * LFT blocks alone): the list without searching g2's hosts. */
	struct route_tab *rt3 = NULL;
	struct snap *s3 = snap_dup(g2->snap);
	if (!s3 || route_repoint(g2->index->rt, s3, &rt3))
		tf_die("repoint");
	struct gone *full = gone_next(g2, rt3, NULL, 0), *same = gone_next(g2, rt3, NULL, 1);
	CHECK(same_gone(full, same) && same->n == 1, "the same hosts: the list the full search finds (%zu entry)",
	      same ? same->n : 0);
	gone_free(full);
	gone_free(same);
	route_free(rt3);
	snap_free(s3);
	fabric_put(g2);
	fabric_put(g1);
}

int main(void)
{
	gone_hosts();
	uint64_t A = TF_SW_GUID + 1, B = TF_SW_GUID + 2;
	struct fabric *f0 = fab(two_switches(0, 0, 0), NULL);
	CHECK(!f0->gone_cables, "the first generation remembers nothing");
	struct fabric *f1 = fab(two_switches(1, 0, 0), f0);
	CHECK(f1->gone_cables && f1->gone_cables->n == 1 && listed(f1, A, 1, B, 1),
	      "cable 1 pulled: remembered, lower GUID end first");
	same_by_delta(f0, f1, "cable 1 pulled");
	struct fabric *f2 = fab(two_switches(1, 1, 0), f1);
	CHECK(f2->gone_cables && f2->gone_cables->n == 2 && listed(f2, A, 1, B, 1) && listed(f2, A, 2, B, 2) &&
	      f2->gone_cables->v[0].port[0] == 1,
	      "cable 2 pulled too: both, cable 1 kept from the list, in port order");
	same_by_delta(f1, f2, "cable 2 pulled too");
	struct fabric *f3 = fab(two_switches(1, 1, 1), f2);
	CHECK(f3->gone_cables && f3->gone_cables->n == 1 && listed(f3, A, 1, B, 1) && !listed(f3, A, 2, B, 2),
	      "A's port 2 cabled to a host: that cable is forgotten, cable 1 still listed");
	same_by_delta(f2, f3, "A's port 2 recabled");
	struct fabric *f4 = fab(two_switches(0, 0, 0), f3);
	CHECK(!f4->gone_cables, "every cable back: nothing remembered");
	same_by_delta(f3, f4, "every cable back");

	keys_trusted_only(f0, f1);

	/* a cable between different port numbers: found from both ends,
	 * listed once with the lower GUID's port first */
	struct fabric *c0 = fab(crossed(0), NULL), *c1 = fab(crossed(1), c0);
	CHECK(c1->gone_cables && c1->gone_cables->n == 1 && listed(c1, A, 1, B, 3),
	      "the crossed cable pulled: A's port 1 to B's port 3");
	same_by_delta(c0, c1, "the crossed cable pulled");
	drop(c1);
	drop(c0);

	/* a port rewritten whose cable stays: nothing listed */
	struct snap *st = snap_dup(f4->snap);
	int64_t ia = st ? snap_find_node(st, A) : -1;
	if (ia < 0)
		tf_die("snap_dup");
	st->ports[st->nodes[ia].port0 + 3].state = SNAP_PORT_INIT;
	struct fabric *f6 = fab(st, f4);
	CHECK(!f6->gone_cables, "A's port 3 back to Init, still cabled: nothing remembered");
	same_by_delta(f4, f6, "a port's state rewritten");
	drop(f6);

	/* a node that leaves takes its cables with it */
	struct snap *lone = snap_new();
	if (!lone)
		tf_die("snap_new");
	uint32_t a = tf_switch(lone, 1, 4), h1 = tf_ca(lone, 1, 1, "h1 HCA-1");
	tf_link(lone, a, 4, h1, 1);
	tf_finish(lone, 0);
	struct fabric *f5 = fab(lone, f2);
	CHECK(!f5->gone_cables, "switch B gone: none of its cables is listed");

	/* NULL-safe */
	gone_cables_free(NULL);
	CHECK(gone_cables_next(NULL, f0->snap, 0, NULL) == NULL, "no previous generation: nothing");
	/* A delta that changed no port (the builder sees the route index
	 * shared): the list is f2's, entry for entry, without the search. */
	struct gone_cables *same = gone_cables_next(f2, f2->snap, 1, NULL);
	CHECK(same && same != f2->gone_cables && same->n == f2->gone_cables->n &&
	      !memcmp(same->v, f2->gone_cables->v, same->n * sizeof(*same->v)),
	      "with the same links: a copy of the previous list");
	gone_cables_free(same);
	drop(f0);
	drop(f1);
	drop(f2);
	drop(f3);
	drop(f4);
	drop(f5);
	return tf_failures != 0;
}
