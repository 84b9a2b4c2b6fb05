/*
 * test_touch.c - what topod's preparation thread reads between snapshots to
 * keep the served generation mapped (snap_touch, fabric_index_touch;
 * topod --warm-interval): every array of the snapshot and of its index
 * with the length it was allocated with (a missing or doubled array
 * changes the total; a length past an allocation's end shows in the
 * sanitised build when the read lands in a redzone), a shared table's
 * chunks once per table that holds them, the pool's free chunks and no
 * other, and nothing after the stop flag is raised. And how those big
 * arrays are mapped (util_alloc_huge): huge pages asked for only where
 * they will be filled, as the kernel records it in /proc/self/smaps.
 */
#include "fabric.h"
#include "testfab.h"
#include "util.h"

#include <malloc.h>
#include <sys/mman.h>

/* Whether huge pages were asked for in the kernel's mapping that holds
 * address a ("hg" in its VmFlags), and its bounds; -1 if none is found. */
static int vma_hg(uintptr_t a, uintptr_t *lo, uintptr_t *hi)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	int in = 0, hg = -1;
	while (hg < 0 && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2) { /* a mapping's first line */
			in = a >= s && a < e;
			*lo = s;
			*hi = e;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			hg = strstr(line, " hg") != NULL;
		}
	}
	fclose(f);
	return hg;
}

/* Resident 4 KiB pages of [p, p + n). */
static unsigned resident(const uint8_t *p, size_t n)
{
	unsigned char v[1024];
	size_t pages = n / 4096;
	if (pages > sizeof(v) || mincore((void *)p, n, v))
		return ~0u;
	unsigned r = 0;
	for (size_t i = 0; i < pages; i++)
		r += v[i] & 1;
	return r;
}

/* 6 MiB asked for, 5 MiB and 100 KiB of it written: the first two 2 MiB
 * pages advised, the part page and the room after it not (before, a
 * third huge page held 2 MiB for the last 1.1 MiB). */
static void test_huge_advice(void)
{
	/* With huge pages for every mapping ("always") no advice is needed,
	 * nor can any keep them out: Debian's kernels say "madvise". */
	char mode[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f) {
		printf("ok - no transparent huge pages in this kernel: no advice to test # SKIP\n");
		return;
	}
	if (!fgets(mode, sizeof(mode), f))
		mode[0] = '\0';
	fclose(f);
	/* as topod's main() sets it: mapped apart, never the heap's pages */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	const size_t mib = (size_t)1 << 20, n = 6 * mib, hot = 5 * mib + 100 * 1024;
	uint8_t *p = util_alloc_big(n, hot);
	CHECK(p && ((uintptr_t)p & (2 * mib - 1)) == 0, "util_alloc_big: 6 MiB aligned to 2 MiB");
	if (!p)
		return;
	memset(p, 1, hot);
	uintptr_t lo = 0, hi = 0, lo2 = 0, hi2 = 0;
	int hg = vma_hg((uintptr_t)p, &lo, &hi), hg2 = vma_hg((uintptr_t)p + 4 * mib, &lo2, &hi2);
	CHECK(hg == 1 && lo == (uintptr_t)p && hi == (uintptr_t)p + 4 * mib,
	      "huge pages asked for over the two whole 2 MiB pages written, no further (+%#lx to +%#lx)",
	      (unsigned long)(lo - (uintptr_t)p), (unsigned long)(hi - (uintptr_t)p));
	unsigned tail = resident(p + 4 * mib, 2 * mib), want = (unsigned)((hot - 4 * mib + 4095) / 4096);
	if (strstr(mode, "[always]"))
		want = tail;
	CHECK(hg2 == 0 && tail == want, "the rest not: %u pages of 4 KiB resident past them for the %u written (a huge page: 512)",
	      tail, want);
	free(p);
	uint8_t *q = util_alloc_huge(n, 3 * mib);
	CHECK(q && vma_hg((uintptr_t)q, &lo, &hi) == 1 && lo == (uintptr_t)q && hi == (uintptr_t)q + 2 * mib,
	      "3 MiB to write: one huge page asked for");
	free(q);
}

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
	test_huge_advice();
	return tf_failures != 0;
}
