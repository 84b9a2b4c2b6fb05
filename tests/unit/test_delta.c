/*
 * test_delta.c - the delta codec: a delta applied to its base gives exactly
 * the target; the wrong base, a changed node set and every kind of damage
 * are refused with a reason; whatever a corrupted (re-sealed) delta turns
 * into is still a valid snapshot.
 */
#include <inttypes.h>

#include "testdelta.h"

static struct snap *fabric(void)
{
	struct snap *s = snap_new();
	tf_tree2(s, 4, 4, 2, 1);
	tf_finish(s, 0);
	s->generation = 10;
	s->sm_guid = 0x1234;
	s->sweep = 3;
	s->timestamp = 1700000000000000ull;
	snprintf(s->engine, sizeof(s->engine), "ftree");
	return s;
}

/* A reroute: one link down at both ends, the tables of one switch changed
 * in two blocks, a host renamed, and a new generation. */
static struct snap *rerouted(const struct snap *base)
{
	struct snap *t = snap_dup(base);
	if (!t)
		tf_die("dup");
	uint32_t leaf = (uint32_t)snap_find_node(t, TF_SW_GUID + 0);
	unsigned up = 4 + 1;
	struct snap_port *p = &t->ports[t->nodes[leaf].port0 + up];
	struct snap_port *q = &t->ports[t->nodes[p->peer_node].port0 + p->peer_port];
	p->state = q->state = SNAP_PORT_DOWN;
	uint32_t len = t->nodes[leaf].lft_len;
	for (uint32_t l = 1; l < len; l += 70)
		if (snap_lft_get(&t->nodes[leaf], l) == up)
			*tf_lft_at(t, leaf, l) = up + 1;
	*tf_lft_at(t, leaf, 1) = up + 1;
	uint32_t ca = (uint32_t)snap_find_node(t, TF_CA_GUID + 16 * 5);
	snprintf(t->nodes[ca].desc, sizeof(t->nodes[ca].desc), "renamed HCA-1");
	t->generation = 11;
	t->sweep = 4;
	t->timestamp = base->timestamp + 1000;
	snprintf(t->engine, sizeof(t->engine), "updn");
	return t;
}

static int same(const struct snap *a, const struct snap *b)
{
	return snap_diff(a, b, SNAP_DIFF_STATE, NULL, NULL) == 0 && a->generation == b->generation &&
	       a->sm_guid == b->sm_guid && a->sweep == b->sweep && a->timestamp == b->timestamp &&
	       a->max_lid == b->max_lid;
}

static void test_roundtrip(void)
{
	char err[SNAP_ERR_LEN];
	struct snap *a = fabric(), *b = rerouted(a), *c = NULL;
	uint8_t *d = NULL, *full = NULL;
	size_t dl = 0, fl = 0;
	CHECK(snap_delta_encode(a, b, &d, &dl, err) == 0, "a reroute encodes as a delta");
	CHECK(snap_encode(b, &full, &fl, err) == 0, "and as a full snapshot");
	CHECK(dl * 8 < fl, "even on 16 hosts the delta is under an eighth of the full snapshot (%zu of %zu bytes)", dl, fl);
	struct snap_delta_info info = { 0 };
	CHECK(snap_delta_apply(a, d, dl, &c, &info, err) == 0, "it applies to its base: %s", c ? "" : err);
	CHECK(c && same(b, c), "the result equals the target, header fields included");
	CHECK(info.descs == 1 && info.ports == 2 && info.blocks >= 1 && info.generation == 11 &&
		      info.base_generation == 10,
	      "it holds one description, two ports, %u LFT blocks", info.blocks);
	CHECK(snap_is_delta(d, dl) && !snap_is_delta(full, fl), "deltas and snapshots are told apart by magic");
	uint64_t plen;
	int isd;
	CHECK(snap_peek_any(d, dl, &plen, &isd, err) == 0 && isd && plen == dl - SNAP_HEADER_LEN,
	      "a stream reader learns a delta's length from its header");
	CHECK(snap_peek_any(full, fl, &plen, &isd, err) == 0 && !isd && plen == fl - SNAP_HEADER_LEN,
	      "and a snapshot's");
	struct snap *x = NULL;
	CHECK(snap_decode(d, dl, &x, err) && !x, "snap_decode refuses a delta (%s)", err);
	snap_free(c);
	c = NULL;

	/* The base is untouched by applying: apply twice, same answer. */
	CHECK(snap_delta_apply(a, d, dl, &c, NULL, err) == 0 && same(b, c), "applying leaves the base unchanged");
	snap_free(c);
	c = NULL;

	/* The wrong base: a later generation, the same fabric. */
	CHECK(snap_delta_apply(b, d, dl, &c, NULL, err) == SNAP_DELTA_NOBASE && !c,
	      "against another base: NOBASE (%s)", err);
	CHECK(strstr(err, "generation 10") && strstr(err, "generation 11"), "the reason names both generations");
	struct snap *a2 = snap_dup(a);
	a2->timestamp++;
	CHECK(snap_delta_apply(a2, d, dl, &c, NULL, err) == SNAP_DELTA_NOBASE, "same generation, other capture: NOBASE");
	snap_free(a2);

	/* No change at all is a valid (tiny) delta. */
	free(d);
	struct snap *same_gen = snap_dup(a);
	same_gen->generation = 12;
	CHECK(snap_delta_encode(a, same_gen, &d, &dl, err) == 0 && dl < 128, "an unchanged fabric: %zu bytes", dl);
	CHECK(snap_delta_apply(a, d, dl, &c, &info, err) == 0 && same(same_gen, c) && !info.ports && !info.blocks,
	      "and it applies to a copy with the new header");
	snap_free(c);
	snap_free(same_gen);
	free(d);
	free(full);
	snap_free(a);
	snap_free(b);
}

/* The copy a delta is written into, made beforehand (topod's spare): the
 * same result as a copy made in the apply; one of another generation is
 * not used (nor leaked: the sanitised build checks), and a copy is freed
 * when the delta is refused. */
static void test_apply_to(void)
{
	char err[SNAP_ERR_LEN];
	struct snap *a = fabric(), *b = rerouted(a), *c = NULL;
	uint8_t *d = NULL;
	size_t dl = 0;
	CHECK(snap_delta_encode(a, b, &d, &dl, err) == 0, "a reroute encodes");
	struct snap *copy = snap_dup(a);
	struct snap_delta_info info = { 0 };
	CHECK(snap_delta_apply_to(a, copy, d, dl, &c, &info, err) == 0 && c == copy && same(b, c),
	      "written into the copy given, it equals the target");
	CHECK(info.descs == 1 && info.ports == 2 && info.blocks >= 1, "with the same counts");
	snap_free(c);
	c = NULL;

	/* A copy of another generation is dropped, a fresh one used: had it
	 * been written, the description the delta does not bring would
	 * differ from the target's. */
	copy = snap_dup(a);
	copy->generation++;
	snprintf(copy->nodes[0].desc, sizeof(copy->nodes[0].desc), "not the base's");
	CHECK(snap_delta_apply_to(a, copy, d, dl, &c, NULL, err) == 0 && c && same(b, c),
	      "a copy of another generation is not written: the result still equals the target");
	snap_free(c);
	c = NULL;

	/* Refused deltas consume the copy too. */
	copy = snap_dup(b);
	CHECK(snap_delta_apply_to(b, copy, d, dl, &c, NULL, err) == SNAP_DELTA_NOBASE && !c,
	      "against another base: NOBASE, the copy freed (%s)", err);
	d[dl - 1] ^= 0xff;
	copy = snap_dup(a);
	CHECK(snap_delta_apply_to(a, copy, d, dl, &c, NULL, err) == -1 && !c, "damaged: refused, the copy freed (%s)",
	      err);
	free(d);
	snap_free(a);
	snap_free(b);
}

/* The block list kept for the next delta (snap_list_keep): an apply
 * whose list fits in it writes there, blocks and masks its own; one past
 * SNAP_LIST_KEEP_MAX is freed, not kept; the warm interval reads it. */
static void test_list_kept(void)
{
	char err[SNAP_ERR_LEN];
	struct snap *a = fabric(), *b = rerouted(a), *c = NULL;
	uint8_t *d = NULL;
	size_t dl = 0;
	CHECK(snap_delta_encode(a, b, &d, &dl, err) == 0, "a reroute encodes");
	struct snap_delta_info i1 = { .want_blocks = 1 }, i2 = { .want_blocks = 1 };
	CHECK(snap_delta_apply(a, d, dl, &c, &i1, err) == 0 && i1.blocks >= 1, "applied, its blocks listed");
	snap_free(c);
	c = NULL;
	size_t lb = (size_t)i1.blocks * sizeof(*i1.block);
	uint64_t *was = malloc(2 * lb + 1), *list = i1.block;
	memcpy(was, i1.block, lb);
	memcpy((uint8_t *)was + lb, i1.mask, lb);
	memset(i1.block, 0xA5, ((size_t)i1.blocks + 1) * 2 * sizeof(*i1.block)); /* the next apply writes it again */
	snap_delta_info_keep(&i1);
	CHECK(!i1.block && !i1.mask, "given back: the info no longer names it");
	CHECK(snap_bytes_touch_kept() >= 2 * lb, "the kept list is read with the kept bytes");
	CHECK(snap_delta_apply(a, d, dl, &c, &i2, err) == 0 && i2.block == list && i2.blocks == i1.blocks &&
	      !memcmp(was, i2.block, lb) && !memcmp((uint8_t *)was + lb, i2.mask, lb),
	      "the next apply writes its list into it: blocks and masks alike");
	CHECK(snap_list_take(1) == NULL, "taken by that apply: nothing kept");
	snap_free(c);
	c = NULL;
	/* A delta of no blocks takes it and gives it back whole: the next
	 * large one still finds it. */
	struct snap_delta_info i3 = { .want_blocks = 1 };
	uint8_t *d0 = NULL;
	size_t dl0 = 0;
	snap_delta_info_keep(&i2);
	CHECK(snap_delta_encode(a, a, &d0, &dl0, err) == 0 && snap_delta_apply(a, d0, dl0, &c, &i3, err) == 0 &&
	      i3.blocks == 0 && i3.block == list, "an empty delta lists its nothing in it");
	snap_delta_info_keep(&i3);
	CHECK(snap_list_take(2 * lb) == list, "and gives it back whole");
	snap_list_keep(list);
	free(d0);
	CHECK(snap_list_take((size_t)1 << 30) == NULL, "a list larger than the kept one: not given");
	uint64_t *t = snap_list_take(1);
	CHECK(t == list, "a smaller one: the same buffer");
	free(t);
	void *big = malloc(SNAP_LIST_KEEP_MAX + 1);
	snap_list_keep(big);
	CHECK(snap_list_take(SNAP_LIST_KEEP_MAX) == NULL, "past SNAP_LIST_KEEP_MAX: freed, not kept");

	/* Made ready after a full snapshot (topod: a quarter of the
	 * fabric's blocks): the next delta, small or large, lists into it,
	 * until the builder trims it to what it wants ready. */
	const uint32_t many = 100000; /* 1.6 MB of list */
	CHECK(snap_delta_list_ready(many, NULL) >= (uint64_t)many * 16, "a list of %u blocks made ready", many);
	CHECK(snap_delta_list_ready(many, NULL) == 0 && snap_delta_list_ready(many / 2, NULL) == 0,
	      "held already: none made again, for as many or half");
	uint64_t *ready = snap_list_take(1);
	CHECK(ready != NULL, "kept");
	snap_list_keep(ready);
	struct snap_delta_info i4 = { .want_blocks = 1 };
	snap_free(c);
	c = NULL;
	int rc4 = snap_delta_apply(a, d, dl, &c, &i4, err);
	CHECK(rc4 == 0 && i4.block == ready, "a reroute of %u blocks lists them in it", i4.blocks);
	snap_free(c);
	c = NULL;
	snap_delta_info_keep(&i4);
	snap_delta_list_trim(many);
	uint64_t *now = snap_list_take(1);
	CHECK(now == ready, "trimmed to a list of as many: kept");
	snap_list_keep(now);
	snap_delta_list_trim(i1.blocks);
	CHECK(snap_list_take(1) == NULL, "trimmed to the reroute's list: freed (over four times it, past 1 MiB)");
	atomic_int stop = 1;
	CHECK(snap_delta_list_ready(many, &stop) == 0 && (ready = snap_list_take((size_t)many * 16)) != NULL,
	      "stopped before its first page: made, kept, not written");
	free(ready);
	uint64_t got = snap_delta_list_ready(UINT32_MAX / 2, NULL);
	ready = snap_list_take(1);
	CHECK(got > ((uint64_t)SNAP_LIST_KEEP_MAX >> 1) && got < SNAP_LIST_KEEP_MAX && ready,
	      "a list past what is kept: made for what is (%llu bytes), and kept", (unsigned long long)got);
	free(ready);

	/* Received bytes over four times what a delta needs, past 1 MiB,
	 * are not given to it; its own replace them when kept. */
	void *rb = malloc((size_t)2 << 20);
	snap_bytes_keep(rb);
	CHECK(snap_bytes_take(100) == NULL, "2 MiB of received bytes kept: not given to a delta of 100 bytes");
	CHECK(snap_bytes_take((size_t)1 << 20) == rb, "given to one of 1 MiB");
	free(rb);
	free(was);
	free(d);
	snap_free(c);
	snap_free(a);
	snap_free(b);
}

static void test_full_needed(void)
{
	char err[SNAP_ERR_LEN];
	struct snap *a = fabric(), *b = snap_new();
	tf_tree2(b, 4, 4, 3, 1); /* one more spine */
	tf_finish(b, 0);
	uint8_t *d = NULL;
	size_t dl = 0;
	CHECK(snap_delta_encode(a, b, &d, &dl, err) == SNAP_DELTA_FULL && !d, "a switch more needs a full snapshot (%s)",
	      err);
	snap_free(b);
	b = snap_dup(a);
	uint32_t sw = (uint32_t)snap_find_node(b, TF_SW_GUID + 1);
	b->nodes[sw].sysimg_guid ^= 1;
	CHECK(snap_delta_encode(a, b, &d, &dl, err) == SNAP_DELTA_FULL, "a node that changed identity too");
	snap_free(a);
	snap_free(b);
}

/* Damage: every truncation, every bit flip, and records that are out of
 * range, out of order or make the fabric inconsistent (re-sealed, so the
 * checksums pass and the structural checks are reached). */
static void test_hostile(void)
{
	char err[SNAP_ERR_LEN];
	struct snap *a = fabric(), *b = rerouted(a), *c = NULL;
	uint8_t *d = NULL;
	size_t dl = 0;
	if (snap_delta_encode(a, b, &d, &dl, err))
		tf_die("encode");
	int bad = 0;
	for (size_t n = 0; n < dl; n++) {
		c = NULL;
		err[0] = 0;
		if (snap_delta_apply(a, d, n, &c, NULL, err) == 0 || !err[0])
			bad++;
		snap_free(c);
	}
	CHECK(!bad, "every truncation of the delta is refused with a reason (%d accepted)", bad);
	bad = 0;
	uint8_t *m = malloc(dl);
	for (size_t i = 0; i < dl * 8; i++) {
		memcpy(m, d, dl);
		m[i / 8] ^= (uint8_t)(1u << (i % 8));
		c = NULL;
		if (snap_delta_apply(a, m, dl, &c, NULL, err) == 0)
			bad++;
		snap_free(c);
	}
	CHECK(!bad, "every single-bit flip is caught (%d accepted)", bad);

	/* Re-sealed random corruption: refused, or a snapshot that validates. */
	int refused = 0, applied = 0;
	tf_rng_state = 7;
	for (int it = 0; it < 20000; it++) {
		memcpy(m, d, dl);
		int flips = 1 + (int)(tf_rand() % 4);
		for (int f = 0; f < flips; f++)
			m[SNAP_HEADER_LEN + 24 + tf_rand() % (dl - SNAP_HEADER_LEN - 24)] = (uint8_t)tf_rand();
		td_reseal(m, dl);
		c = NULL;
		int rc = snap_delta_apply(a, m, dl, &c, NULL, err);
		if (rc == 0) {
			applied++;
			if (snap_validate(c, err))
				bad++;
		} else {
			refused++;
			if (!err[0])
				bad++;
		}
		snap_free(c);
	}
	CHECK(!bad && refused > 0, "20,000 re-sealed corruptions: %d refused, %d applied, all results valid", refused,
	      applied);

	/* Hand-made records: port past nports, records out of order, a link
	 * to a port that does not point back. */
	size_t off = SNAP_HEADER_LEN + 32 + 1 + strlen(b->engine);
	uint32_t ndesc = rd32(d + off);
	size_t ports_off = off + 4;
	for (uint32_t k = 0; k < ndesc; k++)
		ports_off += 5 + d[ports_off + 4];
	CHECK(rd32(d + ports_off) == 2, "two port records where expected");
	size_t p0 = ports_off + 4, p1 = p0 + 6 + 20;
	memcpy(m, d, dl);
	m[p0 + 4] = 200;
	td_reseal(m, dl);
	CHECK(snap_delta_apply(a, m, dl, &c, NULL, err) == -1 && strstr(err, "out of range"),
	      "a port past the node's ports: %s", err);
	memcpy(m, d, dl);
	memcpy(m + p0, d + p1, 6 + 20);
	memcpy(m + p1, d + p0, 6 + 20);
	td_reseal(m, dl);
	CHECK(snap_delta_apply(a, m, dl, &c, NULL, err) == -1 && strstr(err, "out of order"),
	      "records out of order: %s", err);
	memcpy(m, d, dl);
	m[p0 + 6 + 19] ^= 0x7; /* peer port */
	td_reseal(m, dl);
	CHECK(snap_delta_apply(a, m, dl, &c, NULL, err) == -1, "a link that does not point back: %s", err);
	memcpy(m, d, dl);
	uint8_t *cnt = m + ports_off;
	put32(&cnt, 0x10000000);
	td_reseal(m, dl);
	CHECK(snap_delta_apply(a, m, dl, &c, NULL, err) == -1 && strstr(err, "cannot fit"),
	      "a count the bytes cannot hold: %s", err);
	free(m);
	free(d);
	snap_free(a);
	snap_free(b);
}

static int encodes_as(const struct snap *a, const struct snap *b, const uint64_t *hint, size_t n, const uint8_t *want,
		      size_t wl)
{
	char err[SNAP_ERR_LEN];
	uint8_t *d = NULL;
	size_t dl = 0;
	if (snap_delta_encode_hint(a, b, hint, n, &d, &dl, err))
		tf_die(err);
	int same = dl == wl && !memcmp(d, want, wl);
	free(d);
	return same;
}

/* Does the delta from a to b told hint[n] bring exactly those blocks, and
 * so not give b when the hint lacks one? */
static int brings_only(const struct snap *a, const struct snap *b, const uint64_t *hint, size_t n)
{
	char err[SNAP_ERR_LEN];
	uint8_t *d = NULL;
	size_t dl = 0;
	struct snap *c = NULL;
	struct snap_delta_info info = { .want_blocks = 1 };
	if (snap_delta_encode_hint(a, b, hint, n, &d, &dl, err) || snap_delta_apply(a, d, dl, &c, &info, err))
		tf_die(err);
	int ok = info.blocks == n && !memcmp(info.block, hint, n * sizeof(*hint)) &&
		 snap_diff(c, b, SNAP_DIFF_STATE, NULL, NULL) != 0;
	free(info.block);
	free(d);
	snap_free(c);
	return ok;
}

/* snap_delta_encode_hint, told by the apply of each delta of a chain of
 * random reroutes which blocks it brought (as topod's history is): the
 * same bytes as without the hint, in both directions and with more blocks
 * listed; a changed block left out of the hint is left out of the delta,
 * so the hint is what is read; and no hint, however wrong, makes a
 * malformed delta. */
static void test_hint(void)
{
	char err[SNAP_ERR_LEN];
	struct snap *cur = snap_new();
	tf_fattree3(cur, 8);
	tf_fattree3_finish(cur, 8);
	cur->generation = 1;
	cur->timestamp = 1;
	tf_rng_state = 11;
	unsigned steps = 40, differ = 0, more_differ = 0, left_out = 0, tried = 0, hostile = 0, blocks = 0, others = 0;
	unsigned masks_wrong = 0, masks_set = 0;
	for (unsigned it = 0; it < steps; it++) {
		struct snap *next = tf_reroute(cur, it), *applied = NULL;
		uint8_t *d = NULL, *rev = NULL, *fwd = NULL;
		size_t dl, rl, fl;
		struct snap_delta_info info = { .want_blocks = 1 };
		if (snap_delta_encode(cur, next, &d, &dl, err) || snap_delta_apply(cur, d, dl, &applied, &info, err) ||
		    snap_delta_encode(applied, cur, &rev, &rl, err) || snap_delta_encode(cur, applied, &fwd, &fl, err))
			tf_die(err);
		blocks += info.blocks;
		others += info.ports + info.descs > 0;
		/* The apply's masks are the entries whose value changed. */
		for (uint32_t k = 0; k < info.blocks; k++) {
			uint32_t i = (uint32_t)(info.block[k] >> 16), l0 = (uint32_t)(info.block[k] & 0xFFFF) * 64;
			uint32_t bl = cur->nodes[i].lft_len - l0 < 64 ? cur->nodes[i].lft_len - l0 : 64;
			uint64_t want = 0;
			for (uint32_t l = 0; l < bl; l++)
				if (snap_lft_get(&cur->nodes[i], l0 + l) != snap_lft_get(&applied->nodes[i], l0 + l))
					want |= 1ull << l;
			masks_wrong += info.mask[k] != want;
			masks_set += want != 0;
		}
		differ += !encodes_as(applied, cur, info.block, info.blocks, rev, rl) ||
			  !encodes_as(cur, applied, info.block, info.blocks, fwd, fl) ||
			  !encodes_as(applied, cur, NULL, 0, rev, rl);

		/* Every block of each switch the delta touched, each twice, a
		 * block past its table and the CAs': as OpenSM resends whole
		 * switches, and worse. */
		size_t nm = 0, cap = 0;
		for (uint32_t i = 0; i < cur->nnodes; i++)
			cap += 2 * ((cur->nodes[i].lft_len + SNAP_DELTA_BLOCK - 1) / SNAP_DELTA_BLOCK) + 1;
		uint64_t *more = malloc(cap * sizeof(*more)), *less = malloc((info.blocks + 1) * sizeof(*less));
		if (!more || !less)
			tf_die("out of memory");
		for (uint32_t i = 0; i < cur->nnodes; i++) {
			const struct snap_node *nd = &cur->nodes[i];
			uint32_t nblk = (nd->lft_len + SNAP_DELTA_BLOCK - 1) / SNAP_DELTA_BLOCK;
			int touched = 0;
			for (uint32_t k = 0; k < info.blocks; k++)
				touched |= info.block[k] >> 16 == i;
			for (uint32_t k = 0; touched && k < nblk; k++) {
				more[nm++] = (uint64_t)i << 16 | k;
				more[nm++] = (uint64_t)i << 16 | k;
			}
			if (touched || nd->type != SNAP_NODE_SWITCH)
				more[nm++] = (uint64_t)i << 16 | (nd->type == SNAP_NODE_SWITCH ? nblk : 0);
		}
		more_differ += !encodes_as(applied, cur, more, nm, rev, rl);

		/* One changed block left out: the reverse delta lacks it. */
		if (info.blocks) {
			uint32_t drop = (uint32_t)(tf_rand() % info.blocks);
			tried++;
			memcpy(less, info.block, info.blocks * sizeof(*less));
			memmove(less + drop, less + drop + 1, (info.blocks - drop - 1) * sizeof(*less));
			left_out += brings_only(applied, cur, less, info.blocks - 1);
			/* Backwards: passed over, never records out of order. */
			for (uint32_t k = 0; k < info.blocks; k++)
				less[k] = info.block[info.blocks - 1 - k];
			uint8_t *bd = NULL;
			size_t bl;
			struct snap *c = NULL;
			if (snap_delta_encode_hint(applied, cur, less, info.blocks, &bd, &bl, err) ||
			    snap_delta_apply(applied, bd, bl, &c, NULL, err))
				hostile++;
			snap_free(c);
			free(bd);
		}
		free(less);
		free(more);
		free(info.block);
		free(d);
		free(rev);
		free(fwd);
		snap_free(next);
		snap_free(cur);
		cur = applied;
	}
	CHECK(blocks >= steps && others >= steps / 4, "%u random reroutes: %u changed LFT blocks, %u with ports or "
	      "descriptions too", steps, blocks, others);
	CHECK(!masks_wrong && masks_set > steps, "the apply lists each block's changed entries (%u blocks with some, "
	      "%u wrong)", masks_set, masks_wrong);
	CHECK(!differ, "told the apply's blocks, the delta back and forth is the one without the hint, byte for byte "
	      "(%u differ)", differ);
	CHECK(!more_differ, "and told every block of the switches touched, repeated, and some past their tables (%u "
	      "differ)", more_differ);
	CHECK(tried >= steps - 2 && left_out == tried, "a changed block the hint leaves out is left out of the delta: "
	      "the hint is what is compared (%u of %u)", left_out, tried);
	CHECK(!hostile, "a hint out of order still gives a delta that applies (%u do not)", hostile);
	snap_free(cur);
}

/* k=24: 720 switches' tables of 4,177 entries, 3.3 MB in chunks; and its
 * encoding in *buf. NULL (a failed check) when it cannot be made. */
static struct snap *k24_encoded(uint8_t **buf, size_t *len)
{
	struct snap *s = snap_new();
	char err[SNAP_ERR_LEN] = "out of memory";
	if (s) {
		tf_fattree3(s, 24);
		tf_fattree3_finish(s, 24);
	}
	if (!s || snap_encode(s, buf, len, err)) {
		CHECK(0, "encode: %s", err);
		snap_free(s);
		return NULL;
	}
	return s;
}

/* A decode large enough to reserve its slabs first (several threads
 * touch them, lft.c), from bytes grown as topod's ingest grows them: the
 * tables equal, the reserve's unused slabs given back, and every chunk
 * back when freed. */
static void test_decode_reserved(void)
{
	struct snap *d = NULL;
	uint8_t *buf = NULL, *rx = NULL;
	size_t len = 0, cap = 0;
	char err[SNAP_ERR_LEN];
	struct snap *s = k24_encoded(&buf, &len);
	if (!s)
		return;
	/* as ingest_read_cb: a megabyte at a time, the buffer doubled */
	int grown = 1;
	for (size_t have = 0; grown && have < len;) {
		size_t take = len - have < (1u << 20) ? len - have : 1u << 20;
		if (have + take > cap) {
			cap = cap ? cap : 1 << 16;
			while (cap < have + take)
				cap *= 2;
			cap = cap < len ? cap : len;
			uint8_t *nb = snap_bytes_realloc(rx, cap);
			grown = nb != NULL;
			rx = nb ? nb : rx;
		}
		if (grown)
			memcpy(rx + have, buf + have, take);
		have += take;
	}
	CHECK(grown && !memcmp(rx, buf, len), "the bytes grown as received keep what was written");
	free(buf);
	uint64_t used0, spare0, used1, spare1, room;
	snap_lft_pool(&used0, &spare0);
	/* as topod's builder while the bytes arrive: room made, then given
	 * back when no decode follows (a refused snapshot) */
	CHECK(!snap_make_room(len), "room made for %zu bytes", len);
	snap_lft_pool(&used1, &room);
	CHECK(used1 == used0 && room >= spare0 + ((len >> SNAP_LFT_CHUNK_SHIFT) << SNAP_LFT_CHUNK_SHIFT) -
						  ((uint64_t)2 << 20),
	      "as spare chunks (%llu bytes spare, %llu before)", (unsigned long long)room, (unsigned long long)spare0);
	snap_release_room();
	snap_lft_pool(&used1, &spare1);
	CHECK(used1 == used0 && spare1 <= spare0 + ((uint64_t)2 << 20), "given back unused (%llu spare)",
	      (unsigned long long)spare1);
	/* and then a decode into the room */
	CHECK(!snap_make_room(len), "room made again");
	snap_lft_pool(&used1, &room);
	err[0] = 0;
	int decoded = grown && !snap_decode(rx, len, &d, err) && d;
	CHECK(decoded, "decoded %s", err);
	snap_lft_pool(&used1, &spare1);
	CHECK(used1 + spare1 <= used0 + room, "the decode's tables took the room: %llu bytes in the pool, %llu made",
	      (unsigned long long)(used1 + spare1), (unsigned long long)(used0 + room));
	int same = d && d->nnodes == s->nnodes && d->nlft == s->nlft;
	for (uint32_t i = 0; same && i < s->nnodes; i++)
		same = tf_lft_same(&d->nodes[i], &s->nodes[i]);
	CHECK(same, "every table equal to the encoded one");
	CHECK(d && used1 - used0 == snap_lft_held(d) && used1 - used0 >= s->nlft &&
	      spare1 <= spare0 + ((uint64_t)2 << 20),
	      "the tables' chunks used (%llu bytes), the reserve's rest given back (%llu spare, %llu before)",
	      (unsigned long long)(used1 - used0), (unsigned long long)spare1, (unsigned long long)spare0);
	free(rx);
	snap_free(d);
	snap_lft_pool(&used1, &spare1);
	CHECK(used1 == used0 && spare1 <= spare0 + ((uint64_t)2 << 20), "freed, every chunk back (%llu used, %llu before)",
	      (unsigned long long)used1, (unsigned long long)used0);
	snap_free(s);
}

/* Tables whole and equal to s's, and the pool holding only d's. */
static void early_check(const struct snap *s, const struct snap *d, uint64_t used0, const char *what)
{
	uint64_t used, spare;
	snap_lft_pool(&used, &spare);
	int same = d && d->nnodes == s->nnodes && d->nlft == s->nlft;
	for (uint32_t i = 0; same && i < s->nnodes; i++)
		same = tf_lft_same(&d->nodes[i], &s->nodes[i]);
	CHECK(same && used - used0 == snap_lft_held(d), "%s: every table equal to the encoded one, the pool holds "
	      "only the decode's (%llu bytes, %llu held)", what, (unsigned long long)(used - used0),
	      d ? (unsigned long long)snap_lft_held(d) : 0ull);
}

/* Tables fed from one snapshot, then the decode of another of the same
 * shape whose records lie one byte further (a longer description first)
 * and whose first switch routes one LID elsewhere: none is taken. */
static void test_early_elsewhere(const struct snap *s, const uint8_t *buf, size_t len, uint64_t used0)
{
	struct snap *o = snap_dup(s), *d = NULL;
	uint8_t *obuf = NULL;
	size_t olen = 0;
	char err[SNAP_ERR_LEN];
	uint32_t sw = 0;
	while (o && sw < o->nnodes && o->nodes[sw].type != SNAP_NODE_SWITCH)
		sw++;
	if (!o || sw == o->nnodes || strlen(o->nodes[0].desc) >= SNAP_DESC_LEN) {
		CHECK(0, "a fabric to change");
		snap_free(o);
		return;
	}
	strcat(o->nodes[0].desc, "x");
	uint8_t *t = tf_lft_at(o, sw, 1);
	*t = *t == 1 ? 2 : 1;
	struct snap_early *e = snap_early_new();
	int ok = !snap_encode(o, &obuf, &olen, err) && e && !snap_early_feed(e, buf, len) &&
		 !snap_decode_early(obuf, olen, e, &d, err) && d;
	CHECK(ok && snap_early_entries(e) == s->nlft && snap_early_taken(e) == 0,
	      "tables fed from another snapshot's bytes: none taken (%llu made, %llu taken) %s",
	      (unsigned long long)snap_early_entries(e), (unsigned long long)snap_early_taken(e), err);
	int same = d && d->nnodes == o->nnodes;
	for (uint32_t i = 0; same && i < o->nnodes; i++)
		same = tf_lft_same(&d->nodes[i], &o->nodes[i]);
	CHECK(same, "the decode's tables are its own bytes'");
	snap_free(d);
	snap_early_free(e);
	free(obuf);
	snap_free(o);
	uint64_t used, spare;
	snap_lft_pool(&used, &spare);
	CHECK(used == used0, "and every chunk back (%llu used, %llu before)", (unsigned long long)used,
	      (unsigned long long)used0);
}

/* topod's builder copies a large snapshot's tables while its bytes arrive
 * (snap_early_feed), the decode takes them: fed in uneven pieces, wholly,
 * in part, refused after, and on bytes the feed cannot frame. */
static void test_decode_early(void)
{
	struct snap *d = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char err[SNAP_ERR_LEN];
	struct snap *s = k24_encoded(&buf, &len);
	if (!s)
		return;
	uint64_t used0, spare0, used, spare;
	snap_lft_pool(&used0, &spare0);
	for (int part = 0; part < 3; part++) {
		/* 0: every byte fed; 1: the first half; 2: fed, then refused */
		struct snap_early *e = snap_early_new();
		size_t upto = part == 1 ? len / 2 : len, step = 1;
		uint64_t made = 0, seen = 0;
		int mono = 1, feeds = 0, fed = 1;
		for (size_t have = 0; e && have < upto; feeds++) {
			/* uneven steps: a few bytes, a record's worth, a megabyte */
			step = step * 7 + 13;
			have += step % (part ? 1u << 20 : 200000u) + 1;
			have = have < upto ? have : upto;
			fed &= !snap_early_feed(e, buf, have);
			made = snap_early_entries(e);
			mono &= made >= seen;
			seen = made;
		}
		CHECK(e && fed && mono && (part == 1 ? made > 0 && made < s->nlft : made == s->nlft),
		      "part %d: %llu table entries made as the bytes arrived (%d feeds), of %llu", part,
		      (unsigned long long)made, feeds, (unsigned long long)s->nlft);
		if (part == 2) {
			buf[len - 1] ^= 1; /* the checksum no longer holds */
			CHECK(snap_decode_early(buf, len, e, &d, err) && !d, "a damaged snapshot is refused: %s", err);
			buf[len - 1] ^= 1;
			snap_early_free(e);
			snap_lft_pool(&used, &spare);
			CHECK(used == used0, "its early tables freed (%llu used, %llu before)", (unsigned long long)used,
			      (unsigned long long)used0);
			continue;
		}
		err[0] = 0;
		CHECK(!snap_decode_early(buf, len, e, &d, err) && d, "part %d: decoded %s", part, err);
		/* before e is freed: the decode took its tables, copied none twice */
		early_check(s, d, used0, part ? "half fed" : "all fed");
		CHECK(snap_early_taken(e) == made, "part %d: the decode took every one made (%llu)", part,
		      (unsigned long long)snap_early_taken(e));
		snap_early_free(e);
		snap_free(d);
		d = NULL;
	}
	/* a record the feed cannot frame (a presence byte of 2 in the first
	 * node's port 0, the checksum made good): it stops there, and the
	 * decode says why */
	uint8_t *bad = malloc(len), *q;
	struct snap_early *e = snap_early_new();
	if (bad && e) {
		memcpy(bad, buf, len);
		size_t at = SNAP_HEADER_LEN + 9 + bad[SNAP_HEADER_LEN + 8];
		at += 19 + bad[at + 18];
		bad[at] = 2;
		q = bad + 32;
		put32(&q, snap_crc32c(0, bad + SNAP_HEADER_LEN, len - SNAP_HEADER_LEN));
		put32(&q, 0); /* the header's own checksum, over the header with it zero */
		q = bad + 36;
		put32(&q, snap_crc32c(0, bad, SNAP_HEADER_LEN));
		CHECK(!snap_early_feed(e, bad, len) && snap_early_entries(e) == 0, "unframed: the feed stops at once");
		CHECK(snap_decode_early(bad, len, e, &d, err) && !d && strstr(err, "presence byte"),
		      "and the decode refuses it: %s", err);
	}
	snap_early_free(e);
	free(bad);
	test_early_elsewhere(s, buf, len, used0);
	snap_lft_pool(&used, &spare);
	CHECK(used == used0, "every chunk back (%llu used, %llu before)", (unsigned long long)used,
	      (unsigned long long)used0);
	free(buf);
	snap_free(s);
}

/* Block records name their entries (SNAP_DELTA_ENTRIES): exactly those
 * that differ, 15 bytes for one where the first version spent 70; a
 * delta of whole blocks (flags 0, what an older producer sends) applies
 * to the same fabric; the mask is checked like any other field. */
static void test_entries(void)
{
	char err[SNAP_ERR_LEN];
	struct snap *a = snap_new();
	tf_tree2(a, 16, 16, 4, 1);
	tf_finish(a, 0);
	a->generation = 10;
	int wrong = 0, whole_bad = 0;
	uint32_t recs = 0, ents = 0, last_short = 0;
	size_t named = 0, whole = 0;
	for (unsigned it = 0; it < 50; it++) {
		struct snap *b = tf_reroute(a, it), *c = NULL, *w = NULL;
		uint8_t *d = NULL, *wd = NULL;
		size_t dl, wl;
		if (snap_delta_encode(a, b, &d, &dl, err))
			tf_die(err);
		if (rd32(d + SNAP_HEADER_LEN + 28) != SNAP_DELTA_ENTRIES)
			tf_die("a reroute of a few entries encoded as whole blocks");
		const uint8_t *q = d + td_blocks_at(d);
		uint32_t n = rd32(q);
		q += 4;
		for (uint32_t k = 0; k < n; k++, recs++) {
			uint32_t i = rd32(q), l0 = rd16(q + 4) * SNAP_DELTA_BLOCK;
			uint64_t mask = rd64(q + 6), want = 0;
			const struct snap_node *x = &a->nodes[i], *y = &b->nodes[i];
			for (uint32_t l = 0; l < SNAP_DELTA_BLOCK && l0 + l < y->lft_len; l++)
				want |= (uint64_t)(snap_lft_get(x, l0 + l) != snap_lft_get(y, l0 + l)) << l;
			last_short += y->lft_len - l0 < SNAP_DELTA_BLOCK;
			int e = 0;
			for (uint64_t m = mask; m; m &= m - 1, e++)
				wrong += q[14 + e] != snap_lft_get(y, l0 + (uint32_t)__builtin_ctzll(m));
			wrong += mask != want;
			ents += (uint32_t)e;
			q += 14 + (size_t)e;
		}
		wrong += q != d + dl;
		wd = td_whole_blocks(d, b, &wl);
		named += dl;
		whole += wl;
		whole_bad += snap_delta_apply(a, d, dl, &c, NULL, err) || !same(b, c) ||
			     snap_delta_apply(a, wd, wl, &w, NULL, err) || !same(b, w);
		snap_free(c);
		snap_free(w);
		free(d);
		free(wd);
		snap_free(b);
	}
	CHECK(recs >= 50 && !wrong, "50 random reroutes, %u block records: each names exactly the %u entries that "
				    "differ, with the target's values (%d wrong)", recs, ents, wrong);
	CHECK(!whole_bad && last_short > 0, "the same deltas with whole blocks (flags 0) apply to the same fabrics "
					    "(%d do not; %u records of a table's short last block)", whole_bad, last_short);
	CHECK(named < whole, "named entries take %zu bytes, whole blocks %zu", named, whole);

	/* A table rewritten whole: its blocks go whole, the smaller form. */
	struct snap *rw = snap_dup(a), *back = NULL;
	uint32_t sw = 0;
	while (rw->nodes[sw].type != SNAP_NODE_SWITCH)
		sw++;
	for (uint32_t l = 0; l < rw->nodes[sw].lft_len; l++) {
		uint8_t e = snap_lft_get(&rw->nodes[sw], l);
		*tf_lft_at(rw, sw, l) = (uint8_t)(e == SNAP_LFT_NONE ? 1 : e % rw->nodes[sw].nports + 1);
	}
	rw->generation = 11;
	uint8_t *rd = NULL;
	size_t rl;
	if (snap_delta_encode(a, rw, &rd, &rl, err))
		tf_die(err);
	uint32_t nb = rd32(rd + td_blocks_at(rd)), want_nb = (rw->nodes[sw].lft_len + 63) / 64;
	CHECK(rd32(rd + SNAP_HEADER_LEN + 28) == 0 && nb == want_nb &&
		      rl == td_blocks_at(rd) + 4 + (size_t)nb * 6 + rw->nodes[sw].lft_len &&
		      !snap_delta_apply(a, rd, rl, &back, NULL, err) && same(rw, back),
	      "a switch's %u entries all changed: %u whole blocks (flags 0), %zu bytes, applied", rw->nodes[sw].lft_len, nb,
	      rl);
	snap_free(back);
	snap_free(rw);
	free(rd);

	/* Damage to the mask, re-sealed so that the checks are reached. */
	struct snap *b = tf_reroute(a, 0), *c = NULL;
	uint8_t *d = NULL;
	size_t dl;
	if (snap_delta_encode(a, b, &d, &dl, err))
		tf_die(err);
	size_t r0 = td_blocks_at(d) + 4;
	uint32_t i = rd32(d + r0), blk = rd16(d + r0 + 4);
	uint32_t bl = b->nodes[i].lft_len - blk * SNAP_DELTA_BLOCK;
	uint8_t *m = malloc(dl), *wp;
	memcpy(m, d, dl);
	wp = m + r0 + 6;
	put64(&wp, 0);
	td_reseal(m, dl);
	CHECK(snap_delta_apply(a, m, dl, &c, NULL, err) == -1 && strstr(err, "names none"), "a mask naming no entry: %s",
	      err);
	memcpy(m, d, dl);
	wp = m + r0 + 6;
	uint64_t was = rd64(d + r0 + 6), clear = ~was & (was + 1); /* its lowest entry not named */
	put64(&wp, bl < SNAP_DELTA_BLOCK ? was | 1ull << bl : was | clear); /* past a short block, or one entry more */
	td_reseal(m, dl);
	CHECK(clear && snap_delta_apply(a, m, dl, &c, NULL, err) == -1 &&
		      (bl >= SNAP_DELTA_BLOCK || strstr(err, "past its")),
	      "a mask naming an entry past the table, or more entries than follow: %s", err);
	memcpy(m, d, dl);
	m[r0 + 14] = 200;
	td_reseal(m, dl);
	CHECK(snap_delta_apply(a, m, dl, &c, NULL, err) == -1 && strstr(err, "LFT sends"),
	      "a named entry naming a port the switch lacks: %s", err);
	memcpy(m, d, dl);
	wp = m + SNAP_HEADER_LEN + 28;
	put32(&wp, SNAP_DELTA_ENTRIES | 2);
	td_reseal(m, dl);
	CHECK(snap_delta_apply(a, m, dl, &c, NULL, err) == -1 && strstr(err, "unknown delta flags"),
	      "an unknown flag: %s", err);
	memcpy(m, d, dl);
	wp = m + SNAP_HEADER_LEN + 28;
	put32(&wp, 0);
	td_reseal(m, dl);
	CHECK(snap_delta_apply(a, m, dl, &c, NULL, err) == -1, "named entries read as whole blocks: refused (%s)", err);
	free(m);
	free(d);
	snap_free(b);
	snap_free(a);
}

/* Port slot k of s as snap_validate_ports() keys it (node << 8 | port). */
static uint64_t slot_key(const struct snap *s, uint32_t slot)
{
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (slot >= s->nodes[i].port0 && slot <= s->nodes[i].port0 + s->nodes[i].nports)
			return (uint64_t)i << 8 | (slot - s->nodes[i].port0);
	tf_die("slot_key");
	return 0;
}

static uint32_t peer_slot(const struct snap *s, const struct snap_port *p)
{
	return s->nodes[p->peer_node].port0 + p->peer_port;
}

static int linked(const struct snap_port *p)
{
	return p->present && p->peer_node != SNAP_NONE;
}

static void unlink_port(struct snap_port *p)
{
	p->peer_node = SNAP_NONE;
	p->peer_port = 0;
}

/* One random change to the ports of t, marked in mark[] by slot: what a
 * fault or a recabling does (valid) and what damage does (mostly not). */
static void mutate_ports(struct snap *t, uint8_t *mark)
{
	uint32_t a = (uint32_t)(tf_rand() % t->nports), c = (uint32_t)(tf_rand() % t->nports);
	struct snap_port *pa = &t->ports[a], *pc = &t->ports[c];
	mark[a] = 1;
	switch (tf_rand() % 10) {
	case 0: /* a cable out, both ends */
		if (linked(pa)) {
			uint32_t b = peer_slot(t, pa);
			unlink_port(&t->ports[b]);
			mark[b] = 1;
			unlink_port(pa);
		}
		break;
	case 1: /* two cables swapped at one end each */
		if (linked(pa) && linked(pc) && a != c) {
			uint32_t b = peer_slot(t, pa), d = peer_slot(t, pc);
			struct snap_port ta = *pa, tc = *pc;
			pa->peer_node = tc.peer_node, pa->peer_port = tc.peer_port;
			pc->peer_node = ta.peer_node, pc->peer_port = ta.peer_port;
			uint64_t ka = slot_key(t, a), kc = slot_key(t, c);
			t->ports[d].peer_node = (uint32_t)(ka >> 8), t->ports[d].peer_port = (uint8_t)ka;
			t->ports[b].peer_node = (uint32_t)(kc >> 8), t->ports[b].peer_port = (uint8_t)kc;
			mark[b] = mark[c] = mark[d] = 1;
		}
		break;
	case 2: /* one end of a cable forgotten */
		unlink_port(pa);
		break;
	case 3:
		pa->lid = (uint16_t)(tf_rand() % (t->max_lid + 8));
		break;
	case 4:
		pa->guid = tf_rand() % 2 ? pc->guid : tf_rand();
		break;
	case 5:
		pa->state = (uint8_t)(tf_rand() % 6);
		break;
	case 6:
		pa->lmc = (uint8_t)(tf_rand() % 9);
		break;
	case 7:
		if (pa->present) {
			memset(pa, 0, sizeof(*pa));
			unlink_port(pa);
		} else {
			*pa = *pc;
			pa->present = 1;
		}
		break;
	case 8:
		pa->peer_node = (uint32_t)(tf_rand() % (t->nnodes + 1));
		pa->peer_port = (uint8_t)(tf_rand() % 8);
		break;
	default: /* a port down or up */
		if (pa->present)
			pa->state = (uint8_t)(1 + tf_rand() % 4);
	}
}

/* A delta that rewrites a few ports is checked port by port
 * (snap_validate_ports) rather than across the fabric: over random
 * changes it must reach snap_validate_records()'s verdict every time,
 * and through snap_delta_apply whatever a re-sealed corruption of a
 * ports-only delta turns into must still be a valid snapshot. */
static void test_ports_checked(void)
{
	char err[SNAP_ERR_LEN], err2[SNAP_ERR_LEN];
	struct snap *a = fabric();
	uint8_t *mark = calloc(a->nports, 1);
	uint64_t *keys = malloc(a->nports * sizeof(*keys));
	int agree = 0, differ = 0, valid = 0;
	tf_rng_state = 11;
	for (int it = 0; it < 20000; it++) {
		struct snap *t = snap_dup(a);
		memset(mark, 0, a->nports);
		for (int m = (int)(tf_rand() % 3); m >= 0; m--)
			mutate_ports(t, mark);
		uint32_t n = 0;
		for (uint32_t k = 0; k < a->nports; k++)
			if (mark[k])
				keys[n++] = slot_key(t, k);
		int whole = snap_validate_records(t, err) != 0;
		int by_port = snap_validate_ports(t, a, keys, n, err2) != 0;
		if (whole == by_port)
			agree++;
		else if (differ++ < 5)
			fprintf(stderr, "# round %d: whole %s, by port %s\n", it, whole ? err : "valid",
				by_port ? err2 : "valid");
		valid += !whole;
		snap_free(t);
	}
	CHECK(!differ && valid > 2000 && valid < 18000,
	      "20,000 random port changes: checked by port as across the fabric (%d agree, %d valid, %d differ)",
	      agree, valid, differ);

	/* A ports-only delta (a cable out), corrupted and re-sealed. */
	struct snap *b = snap_dup(a), *c = NULL;
	uint32_t leaf = (uint32_t)snap_find_node(b, TF_SW_GUID + 0);
	struct snap_port *p = &b->ports[b->nodes[leaf].port0 + 5];
	struct snap_port *q = &b->ports[peer_slot(b, p)];
	unlink_port(q);
	unlink_port(p);
	p->state = q->state = SNAP_PORT_DOWN;
	b->generation = a->generation + 1;
	uint8_t *d = NULL;
	size_t dl = 0;
	struct snap_delta_info info = { 0 };
	if (snap_delta_encode(a, b, &d, &dl, err))
		tf_die(err);
	CHECK(snap_delta_apply(a, d, dl, &c, &info, err) == 0 && info.ports == 2 && !info.descs && same(b, c),
	      "a cable out: two port records, applied exactly");
	snap_free(c);
	uint8_t *m = malloc(dl);
	int refused = 0, applied = 0, bad = 0;
	for (int it = 0; it < 20000; it++) {
		memcpy(m, d, dl);
		for (int f = 1 + (int)(tf_rand() % 3); f > 0; f--)
			m[SNAP_HEADER_LEN + 24 + tf_rand() % (dl - SNAP_HEADER_LEN - 24)] = (uint8_t)tf_rand();
		td_reseal(m, dl);
		c = NULL;
		if (snap_delta_apply(a, m, dl, &c, NULL, err) == 0) {
			applied++;
			bad += snap_validate(c, err) != 0;
		} else {
			refused++;
		}
		snap_free(c);
	}
	CHECK(!bad && refused > 0 && applied > 0,
	      "20,000 re-sealed corruptions of it: %d refused, %d applied, all results valid (%d not)", refused,
	      applied, bad);
	free(m);
	free(d);
	snap_free(b);
	free(mark);
	free(keys);
	snap_free(a);
}

int main(void)
{
	test_roundtrip();
	test_full_needed();
	test_hostile();
	test_ports_checked();
	test_apply_to();
	test_list_kept();
	test_hint();
	test_entries();
	test_decode_reserved();
	test_decode_early();
	return tf_failures != 0;
}
