/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * delta.c - the delta codec (see delta.h and docs/snapshot-format.md).
 *
 * The decoder treats a delta as hostile exactly as snap_decode() treats a
 * snapshot: every count is checked against the bytes left before anything
 * is read or allocated, every index against the base, records must come in
 * strictly increasing order (so none is applied twice), and the result goes
 * through snap_validate() before anyone sees it (its tables' part block by
 * block as they land: snap_validate_records checks the rest).
 */
#include "delta.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lft_impl.h"
#include "util.h"
#include "wire.h"

#define PORT_REC 20   /* a present port's record after its presence byte */
#define BASE_LEN 32   /* base generation, SM GUID, timestamp, node count, flags */
#define BLOCK_KEY 6   /* an LFT block record's node index and block number */

static int fail(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, SNAP_ERR_LEN, fmt, ap);
	va_end(ap);
	return -1;
}

int snap_is_delta(const uint8_t *buf, size_t len)
{
	return len >= SNAP_MAGIC_LEN && !memcmp(buf, SNAP_DELTA_MAGIC, SNAP_MAGIC_LEN);
}

/* Header checks shared with the snapshot header: same layout, own magic. */
static int peek_delta_header(const uint8_t *buf, size_t len, uint64_t *payload, char err[SNAP_ERR_LEN])
{
	if (len < SNAP_HEADER_LEN)
		return fail(err, "truncated delta header: %zu of %d bytes", len, SNAP_HEADER_LEN);
	if (!snap_is_delta(buf, len))
		return fail(err, "not a topod delta (bad magic)");
	uint32_t ver = rd32(buf + 8), hlen = rd32(buf + 12);
	if (ver != SNAP_DELTA_VERSION)
		return fail(err, "unsupported delta version %u (this build reads %d)", ver, SNAP_DELTA_VERSION);
	if (hlen != SNAP_HEADER_LEN)
		return fail(err, "bad delta header length %u", hlen);
	uint8_t h[SNAP_HEADER_LEN];
	memcpy(h, buf, sizeof(h));
	memset(h + 36, 0, 4);
	if (snap_crc32c(0, h, sizeof(h)) != rd32(buf + 36))
		return fail(err, "delta header checksum mismatch");
	uint64_t plen = rd64(buf + 24);
	if (plen > SNAP_MAX_PAYLOAD)
		return fail(err, "delta payload of %llu bytes exceeds the limit", (unsigned long long)plen);
	*payload = plen;
	return 0;
}

int snap_peek_any(const uint8_t *buf, size_t len, uint64_t *payload, int *is_delta, char err[SNAP_ERR_LEN])
{
	*is_delta = snap_is_delta(buf, len);
	return *is_delta ? peek_delta_header(buf, len, payload, err) : snap_peek_header(buf, len, payload, err);
}

/* ---- encoding ------------------------------------------------------------- */

static uint32_t block_len(uint32_t lft_len, uint32_t blk)
{
	uint32_t left = lft_len - blk * SNAP_DELTA_BLOCK;
	return left < SNAP_DELTA_BLOCK ? left : SNAP_DELTA_BLOCK;
}

/* The next block from k on of node i's table (nblk blocks) to compare:
 * k itself, or with a hint (snap_delta_encode_hint) the next one it lists,
 * *at walking the hint in step with the caller's loop over the nodes.
 * UINT32_MAX when none is left. Entries out of order, repeated or past
 * the table are passed over, so that the records stay strictly
 * increasing whatever the hint holds. */
static uint32_t next_block(const uint64_t *hint, size_t nhint, size_t *at, uint32_t i, uint32_t k, uint32_t nblk)
{
	if (hint) {
		uint64_t from = (uint64_t)i << 16 | k;
		while (*at < nhint && hint[*at] < from)
			(*at)++;
		if (*at == nhint || hint[*at] >> 16 != i)
			return UINT32_MAX;
		k = (uint32_t)(hint[*at] & 0xffff);
	}
	return k < nblk ? k : UINT32_MAX;
}

/* One pass that either counts (p == NULL, returns the bytes; stops once
 * past max) or writes. hint (may be NULL): what snap_delta_encode_hint
 * was told. The block records name their entries when *masked: counting
 * sets it to whether that form is the smaller (a reroute's few entries
 * per block), writing follows it. */
static size_t encode_records(const struct snap *a, const struct snap *b, const uint64_t *hint, size_t nhint,
			     uint8_t *p, uint32_t cnt[3], size_t max, int *masked)
{
	uint8_t *const p0 = p;
	size_t size = 0;
	uint8_t *cntp;
	/* descriptions */
	cnt[0] = 0;
	cntp = p;
	if (p)
		p += 4;
	size += 4;
	for (uint32_t i = 0; i < a->nnodes; i++) {
		if (!strcmp(a->nodes[i].desc, b->nodes[i].desc))
			continue;
		size_t dl = strnlen(b->nodes[i].desc, SNAP_DESC_LEN);
		cnt[0]++;
		size += 5 + dl;
		if (p) {
			put32(&p, i);
			put8(&p, (uint8_t)dl);
			memcpy(p, b->nodes[i].desc, dl);
			p += dl;
		}
	}
	if (cntp)
		put32(&cntp, cnt[0]);
	/* ports */
	cnt[1] = 0;
	cntp = p;
	if (p)
		p += 4;
	size += 4;
	for (uint32_t i = 0; i < a->nnodes; i++) {
		const struct snap_node *nd = &b->nodes[i];
		for (unsigned q = 0; q <= nd->nports; q++) {
			const struct snap_port *u = &a->ports[a->nodes[i].port0 + q], *v = &b->ports[nd->port0 + q];
			if (snap_port_equal(u, v))
				continue;
			cnt[1]++;
			size += 6 + (v->present ? PORT_REC : 0);
			if (!p)
				continue;
			put32(&p, i);
			put8(&p, (uint8_t)q);
			put8(&p, v->present);
			if (!v->present)
				continue;
			put64(&p, v->guid);
			put16(&p, v->lid);
			put8(&p, v->lmc);
			put8(&p, v->state);
			put8(&p, v->width);
			put8(&p, v->speed);
			put8(&p, v->espeed);
			put32(&p, v->peer_node);
			put8(&p, v->peer_port);
		}
	}
	if (cntp)
		put32(&cntp, cnt[1]);
	/* LFT blocks: their bytes named (bm) and whole (bw) */
	cnt[2] = 0;
	cntp = p;
	if (p)
		p += 4;
	size += 4;
	size_t bm = 0, bw = 0;
	size_t at = 0; /* hint entries before it are of earlier nodes or blocks */
	for (uint32_t i = 0; i < a->nnodes; i++) {
		const struct snap_node *x = &a->nodes[i], *y = &b->nodes[i];
		/* A table b shares with a (copy-on-write) has not changed. */
		if (y->type != SNAP_NODE_SWITCH || (x->lft == y->lft && x->lft_len == y->lft_len))
			continue;
		uint32_t nblk = (y->lft_len + SNAP_DELTA_BLOCK - 1) / SNAP_DELTA_BLOCK;
		for (uint32_t k = next_block(hint, nhint, &at, i, 0, nblk); k != UINT32_MAX;
		     k = next_block(hint, nhint, &at, i, k + 1, nblk)) {
			uint32_t n = block_len(y->lft_len, k), rx, ry;
			const uint8_t *ex = snap_lft_span(x, k * SNAP_DELTA_BLOCK, &rx);
			const uint8_t *eb = snap_lft_span(y, k * SNAP_DELTA_BLOCK, &ry);
			/* A chunk both share is equal without reading it. */
			if (ex && (ex == eb || !memcmp(ex, eb, n)))
				continue;
			cnt[2]++;
			if (!p) {
				bm += BLOCK_KEY + 8 + (size_t)__builtin_popcountll(snap_lft_diff_mask(ex, eb, n));
				bw += BLOCK_KEY + n;
				if (size + (bm < bw ? bm : bw) > max)
					return size + (bm < bw ? bm : bw);
				continue;
			}
			put32(&p, i);
			put16(&p, (uint16_t)k);
			if (!*masked) {
				memcpy(p, eb, n);
				p += n;
				continue;
			}
			uint64_t mask = snap_lft_diff_mask(ex, eb, n);
			put64(&p, mask);
			for (uint64_t m = mask; m; m &= m - 1)
				*p++ = eb[__builtin_ctzll(m)];
		}
	}
	if (cntp)
		put32(&cntp, cnt[2]);
	if (p)
		return (size_t)(p - p0);
	*masked = bm <= bw;
	return size + (bm <= bw ? bm : bw);
}

/* The header of a delta whose payload (plen bytes) follows it in buf. */
static void seal(uint8_t *buf, uint64_t plen, uint64_t gen, uint64_t sm_guid, uint64_t sweep, uint64_t ts)
{
	uint8_t *h = buf;
	memcpy(h, SNAP_DELTA_MAGIC, SNAP_MAGIC_LEN);
	h += SNAP_MAGIC_LEN;
	put32(&h, SNAP_DELTA_VERSION);
	put32(&h, SNAP_HEADER_LEN);
	put64(&h, gen);
	put64(&h, plen);
	put32(&h, snap_crc32c(0, buf + SNAP_HEADER_LEN, plen));
	put32(&h, 0);
	put64(&h, sm_guid);
	put64(&h, sweep);
	put64(&h, ts);
	uint8_t *hc = buf + 36;
	put32(&hc, snap_crc32c(0, buf, SNAP_HEADER_LEN));
}

static int encode(const struct snap *base, const struct snap *target, const uint64_t *hint, size_t nhint,
		  size_t max, uint8_t **out, size_t *outlen, char err[SNAP_ERR_LEN])
{
	if (base->nnodes != target->nnodes) {
		snprintf(err, SNAP_ERR_LEN, "node count changed (%u -> %u)", base->nnodes, target->nnodes);
		return SNAP_DELTA_FULL;
	}
	for (uint32_t i = 0; i < base->nnodes; i++) {
		const struct snap_node *x = &base->nodes[i], *y = &target->nodes[i];
		if (x->guid != y->guid || x->type != y->type || x->nports != y->nports ||
		    x->sysimg_guid != y->sysimg_guid || x->lft_len != y->lft_len) {
			snprintf(err, SNAP_ERR_LEN, "node 0x%016llx changed identity or table size",
				 (unsigned long long)y->guid);
			return SNAP_DELTA_FULL;
		}
	}
	uint32_t cnt[3];
	int masked = 1;
	size_t elen = strnlen(target->engine, SNAP_ENGINE_LEN);
	size_t size =
		SNAP_HEADER_LEN + BASE_LEN + 1 + elen + encode_records(base, target, hint, nhint, NULL, cnt, max, &masked);
	if (size > max) {
		snprintf(err, SNAP_ERR_LEN, "delta larger than %zu bytes", max);
		return SNAP_DELTA_FULL;
	}
	if (size - SNAP_HEADER_LEN > SNAP_MAX_PAYLOAD)
		return fail(err, "delta of %zu bytes exceeds the limit", size);
	uint8_t *buf = malloc(size), *p = buf + SNAP_HEADER_LEN;
	if (!buf)
		return fail(err, "out of memory encoding a delta of %zu bytes", size);
	put64(&p, base->generation);
	put64(&p, base->sm_guid);
	put64(&p, base->timestamp);
	put32(&p, base->nnodes);
	put32(&p, masked ? SNAP_DELTA_ENTRIES : 0);
	put8(&p, (uint8_t)elen);
	memcpy(p, target->engine, elen);
	p += elen;
	p += encode_records(base, target, hint, nhint, p, cnt, SIZE_MAX, &masked);

	seal(buf, (uint64_t)(p - buf) - SNAP_HEADER_LEN, target->generation, target->sm_guid, target->sweep,
	     target->timestamp);
	*out = buf;
	*outlen = (size_t)(p - buf);
	return 0;
}

int snap_delta_encode_max(const struct snap *base, const struct snap *target, size_t max, uint8_t **out,
			  size_t *outlen, char err[SNAP_ERR_LEN])
{
	return encode(base, target, NULL, 0, max, out, outlen, err);
}

int snap_delta_encode(const struct snap *base, const struct snap *target, uint8_t **out, size_t *outlen,
		      char err[SNAP_ERR_LEN])
{
	return encode(base, target, NULL, 0, SIZE_MAX, out, outlen, err);
}

int snap_delta_encode_hint(const struct snap *base, const struct snap *target, const uint64_t *block,
			   size_t nblock, uint8_t **out, size_t *outlen, char err[SNAP_ERR_LEN])
{
	return encode(base, target, block, nblock, SIZE_MAX, out, outlen, err);
}

/* ---- decoding ------------------------------------------------------------- */

struct rd {
	const uint8_t *p, *end;
	uint32_t flags; /* the payload's: SNAP_DELTA_ENTRIES or 0 */
};

static int need(const struct rd *r, size_t n)
{
	return (size_t)(r->end - r->p) >= n;
}

/* Header, checksums and the base identity; r is left at the engine name. */
static int open_delta(const uint8_t *buf, size_t len, struct snap_delta_info *info, struct rd *r,
		      uint32_t *nnodes, char err[SNAP_ERR_LEN])
{
	uint64_t plen;
	if (peek_delta_header(buf, len, &plen, err))
		return -1;
	if (len - SNAP_HEADER_LEN != plen)
		return fail(err, len - SNAP_HEADER_LEN < plen ? "truncated delta: %llu of %llu payload bytes"
							       : "delta of %llu bytes where the header says %llu",
			    (unsigned long long)(len - SNAP_HEADER_LEN), (unsigned long long)plen);
	if (snap_crc32c(0, buf + SNAP_HEADER_LEN, plen) != rd32(buf + 32))
		return fail(err, "delta payload checksum mismatch");
	if (plen < BASE_LEN + 1)
		return fail(err, "delta payload of %llu bytes is too short", (unsigned long long)plen);
	const uint8_t *q = buf + SNAP_HEADER_LEN;
	int want = info->want_blocks;
	memset(info, 0, sizeof(*info));
	info->want_blocks = want;
	info->generation = rd64(buf + 16);
	info->base_generation = rd64(q);
	info->base_sm_guid = rd64(q + 8);
	info->base_timestamp = rd64(q + 16);
	*nnodes = rd32(q + 24);
	r->flags = rd32(q + 28);
	if (r->flags & ~(uint32_t)SNAP_DELTA_ENTRIES)
		return fail(err, "unknown delta flags 0x%x", r->flags);
	r->p = q + BASE_LEN;
	r->end = buf + len;
	return 0;
}

/* The smallest LFT block record of r's form: one entry, named or not. */
static size_t block_min(const struct rd *r)
{
	return BLOCK_KEY + ((r->flags & SNAP_DELTA_ENTRIES) ? 8 : 0) + 1;
}

/* The body of an LFT block record of node nd's block blk, at p (past its
 * key, before r->end): its length in *len, in *mask the block's entries
 * it brings (all of them in a delta without SNAP_DELTA_ENTRIES) and in
 * *ent those entries, in order. Checked: the mask names at least one
 * entry and none past the table, and every entry is a port the switch
 * has (the one LFT rule snap_validate() has, so that an LFT-only delta
 * need not revalidate the whole fabric). */
static int block_body(const struct rd *r, const uint8_t *p, const struct snap_node *nd, uint32_t blk, size_t *len,
		      uint64_t *mask, const uint8_t **ent, char err[SNAP_ERR_LEN])
{
	uint32_t bl = block_len(nd->lft_len, blk);
	uint64_t all = snap_lft_first(bl);
	size_t left = (size_t)(r->end - p);
	*mask = all;
	if (r->flags & SNAP_DELTA_ENTRIES) {
		if (left < 8)
			return fail(err, "LFT block %u of node 0x%016llx truncated", blk, (unsigned long long)nd->guid);
		*mask = rd64(p);
		p += 8;
		left -= 8;
		if (!*mask || (*mask & ~all))
			return fail(err, "LFT block %u of node 0x%016llx: entry mask 0x%016llx names none, or past its %u entries",
				    blk, (unsigned long long)nd->guid, (unsigned long long)*mask, nd->lft_len);
	}
	/* entries counted as they are checked: without -mpopcnt a popcount
	 * is a libgcc call, one per record (262,195 in a k=56 cable fault) */
	size_t ne = 0;
	for (uint64_t m = *mask; m; m &= m - 1, ne++) {
		if (ne == left)
			return fail(err, "LFT block %u of node 0x%016llx truncated", blk, (unsigned long long)nd->guid);
		if (p[ne] != SNAP_LFT_NONE && p[ne] > nd->nports)
			return fail(err, "switch 0x%016llx: LFT sends LID %u to port %u, but it has %u ports",
				    (unsigned long long)nd->guid, blk * SNAP_DELTA_BLOCK + (unsigned)__builtin_ctzll(m),
				    p[ne], nd->nports);
	}
	*ent = p;
	*len = ((r->flags & SNAP_DELTA_ENTRIES) ? 8 : 0) + ne;
	return 0;
}

int snap_delta_peek(const uint8_t *buf, size_t len, struct snap_delta_info *info, char err[SNAP_ERR_LEN])
{
	struct rd r;
	uint32_t nnodes;
	info->want_blocks = 0;
	return open_delta(buf, len, info, &r, &nnodes, err);
}

static int read_count(struct rd *r, size_t rec_min, const char *what, uint32_t *n, char err[SNAP_ERR_LEN])
{
	if (!need(r, 4))
		return fail(err, "delta truncated before the %s count", what);
	*n = rd32(r->p);
	r->p += 4;
	/* Before the loop: a count the remaining bytes cannot hold is refused
	 * without touching them. */
	if ((uint64_t)*n * rec_min > (uint64_t)(r->end - r->p))
		return fail(err, "%u %s records cannot fit in the %zu bytes left", *n, what, (size_t)(r->end - r->p));
	return 0;
}

static int apply_descs(struct rd *r, struct snap *s, uint32_t *count, char err[SNAP_ERR_LEN])
{
	uint32_t n;
	if (read_count(r, 5, "description", &n, err))
		return -1;
	int64_t last = -1;
	for (uint32_t k = 0; k < n; k++) {
		if (!need(r, 5))
			return fail(err, "description record %u truncated", k);
		uint32_t i = rd32(r->p);
		uint8_t dl = r->p[4];
		r->p += 5;
		if (i >= s->nnodes || (int64_t)i <= last)
			return fail(err, "description record %u names node %u (of %u, after %lld)", k, i, s->nnodes,
				    (long long)last);
		if (dl > SNAP_DESC_LEN || !need(r, dl) || memchr(r->p, 0, dl))
			return fail(err, "description of node %u: bad length %u or a NUL byte", i, dl);
		memcpy(s->nodes[i].desc, r->p, dl);
		s->nodes[i].desc[dl] = 0;
		r->p += dl;
		last = i;
	}
	*count = n;
	return 0;
}

/* The first cap ports rewritten go to keys[] (node << 8 | port). */
static int apply_ports(struct rd *r, struct snap *s, uint64_t *keys, uint32_t cap, uint32_t *count,
		       char err[SNAP_ERR_LEN])
{
	uint32_t n;
	if (read_count(r, 6, "port", &n, err))
		return -1;
	int64_t last = -1;
	for (uint32_t k = 0; k < n; k++) {
		if (!need(r, 6))
			return fail(err, "port record %u truncated", k);
		uint32_t i = rd32(r->p);
		unsigned q = r->p[4];
		uint8_t present = r->p[5];
		r->p += 6;
		int64_t key = (int64_t)i << 8 | q;
		if (i >= s->nnodes || q > s->nodes[i].nports || key <= last)
			return fail(err, "port record %u names node %u port %u: out of range or out of order", k, i, q);
		if (present > 1)
			return fail(err, "port record %u: presence byte %u", k, present);
		last = key;
		if (k < cap)
			keys[k] = (uint64_t)key;
		struct snap_port *pt = &s->ports[s->nodes[i].port0 + q];
		if (!present) {
			memset(pt, 0, sizeof(*pt));
			pt->peer_node = SNAP_NONE;
			continue;
		}
		if (!need(r, PORT_REC))
			return fail(err, "port record %u truncated", k);
		const uint8_t *p = r->p;
		pt->present = 1;
		pt->guid = rd64(p);
		pt->lid = rd16(p + 8);
		pt->lmc = p[10];
		pt->state = p[11];
		pt->width = p[12];
		pt->speed = p[13];
		pt->espeed = p[14];
		pt->peer_node = rd32(p + 15);
		pt->peer_port = p[19];
		r->p += PORT_REC;
	}
	*count = n;
	return 0;
}

/* One LFT block record read and checked, waiting in apply_blocks' window
 * for its table's line to arrive. */
struct blk_rec {
	uint32_t node, at, bl, k;
	uint64_t mask;
	const uint8_t *ent;
};

/* Writes one checked record into s's tables and lists it in info. The
 * base still reads this table: the first block that changes a chunk of it
 * copies that chunk (copy-on-write), the others land in the copy. A
 * producer may list entries that did not change (a delta without
 * SNAP_DELTA_ENTRIES lists whole blocks): those copy nothing. */
static int apply_block(struct snap *s, const struct blk_rec *b, struct snap_delta_info *info, char err[SNAP_ERR_LEN])
{
	/* read again: a record before it in the window may have copied its
	 * chunk (the line asked for is the same bytes, or that copy's) */
	uint32_t run;
	const uint8_t *cur = snap_lft_span(&s->nodes[b->node], b->at, &run);
	int whole = b->mask == snap_lft_first(b->bl);
	uint64_t differs = whole ? snap_lft_diff_mask(cur, b->ent, b->bl) : 0;
	for (uint64_t m = b->mask, e = 0; !whole && m; m &= m - 1, e++)
		if (cur[__builtin_ctzll(m)] != b->ent[e])
			differs |= m & -m;
	if (differs) {
		uint8_t *t = snap_lft_own(s, b->node, b->at, b->bl);
		if (!t)
			return fail(err, "out of memory copying the LFT of node 0x%016llx",
				    (unsigned long long)s->nodes[b->node].guid);
		if (whole)
			memcpy(t, b->ent, b->bl);
		for (uint64_t m = b->mask, e = 0; !whole && m; m &= m - 1, e++)
			t[__builtin_ctzll(m)] = b->ent[e];
	}
	if (info->block)
		info->mask[b->k] = differs;
	return 0;
}

/* snap_delta_info's block and mask for n blocks, one allocation. */
static size_t list_bytes(uint32_t n)
{
	return ((size_t)n + 1) * 2 * sizeof(uint64_t);
}

/* The most blocks snap_delta_list_ready makes a list for: its usable
 * size within what snap_list_keep keeps, though aligned_alloc's may
 * reach up to 2 MiB past the bytes rounded to 2 MiB pages. */
#define LIST_READY_MAX ((SNAP_LIST_KEEP_MAX - ((size_t)4 << 20)) / (2 * sizeof(uint64_t)) - 1)

uint32_t snap_delta_list_most(uint32_t blocks)
{
	return blocks < LIST_READY_MAX ? blocks : (uint32_t)LIST_READY_MAX;
}

uint64_t snap_delta_list_ready(uint32_t blocks, const atomic_int *stop)
{
	blocks = snap_delta_list_most(blocks);
	size_t bytes = list_bytes(blocks);
	if (!blocks)
		return 0;
	void *p = snap_list_take(bytes);
	if (p) {
		snap_list_keep(p);
		return 0;
	}
	p = util_alloc_big(bytes, bytes);
	if (!p || malloc_usable_size(p) > SNAP_LIST_KEEP_MAX) {
		free(p); /* would not be kept */
		return 0;
	}
	/* its page faults, here; a snapshot arriving stops it, the rest
	 * to be faulted by the delta that writes it */
	const size_t step = (size_t)2 << 20;
	size_t done = 0;
	for (; done < bytes && !(stop && atomic_load_explicit(stop, memory_order_relaxed)); done += step)
		memset((uint8_t *)p + done, 0, bytes - done < step ? bytes - done : step);
	snap_list_keep(p);
	return done < bytes ? done : bytes;
}

void snap_delta_list_trim(uint32_t blocks)
{
	snap_list_trim(list_bytes(snap_delta_list_most(blocks)));
}

/* Records are read APPLY_AHEAD ahead of their writes, each one's table
 * chunk asked for when read: a cable fault's 262,000 blocks at k=56 each
 * read a line of a table no cache holds, the loop's main stall in perf;
 * reading eight ahead took that apply from 28.0 to 25.7 ms (median of
 * 10, against one ahead), asking for the whole chunk a record will copy
 * (79,482 chunks) from 23.4 to 19.9 ms. */
#define APPLY_AHEAD 8

static int apply_blocks(struct rd *r, struct snap *s, struct snap_delta_info *info, char err[SNAP_ERR_LEN])
{
	uint32_t n;
	if (read_count(r, block_min(r), "LFT block", &n, err))
		return -1;
	if (info->want_blocks) {
		/* n is bounded by the bytes left (read_count); a cable
		 * fault's 262,000 blocks at k=56 are 4.2 MB of list: the
		 * kept one when it holds them (snap_delta_info_keep,
		 * snap_delta_list_ready), else new (in 2 MiB pages from
		 * 4 MiB: util_alloc_big) */
		size_t bytes = list_bytes(n);
		info->block = snap_list_take(bytes);
		if (!info->block)
			info->block = util_alloc_big(bytes, bytes);
		if (!info->block)
			return fail(err, "out of memory listing %u LFT blocks", n);
		info->mask = info->block + n + 1;
	}
	struct blk_rec win[APPLY_AHEAD];
	int64_t last = -1;
	uint32_t prev_node = UINT32_MAX, prev_chunk = 0;
	for (uint32_t k = 0; k < n + APPLY_AHEAD; k++) {
		if (k >= APPLY_AHEAD && apply_block(s, &win[k % APPLY_AHEAD], info, err))
			return -1;
		if (k >= n)
			continue;
		if (!need(r, BLOCK_KEY))
			return fail(err, "LFT block record %u truncated", k);
		uint32_t i = rd32(r->p);
		uint32_t blk = rd16(r->p + 4);
		r->p += BLOCK_KEY;
		int64_t key = (int64_t)i << 16 | blk;
		if (i >= s->nnodes || s->nodes[i].type != SNAP_NODE_SWITCH || key <= last)
			return fail(err, "LFT block record %u names node %u: not a switch, or out of order", k, i);
		const struct snap_node *nd = &s->nodes[i];
		if ((uint64_t)blk * SNAP_DELTA_BLOCK >= nd->lft_len)
			return fail(err, "LFT block %u of node 0x%016llx is past its %u entries", blk,
				    (unsigned long long)nd->guid, nd->lft_len);
		struct blk_rec *b = &win[k % APPLY_AHEAD];
		size_t len;
		if (block_body(r, r->p, nd, blk, &len, &b->mask, &b->ent, err))
			return -1;
		b->node = i;
		b->k = k;
		b->at = blk * SNAP_DELTA_BLOCK;
		b->bl = block_len(nd->lft_len, blk);
		/* The first record of a chunk asks for the whole chunk and its
		 * holder count, which snap_lft_own reads to copy it; the
		 * chunk's other records find their lines asked for. */
		if (i != prev_node || b->at >> SNAP_LFT_CHUNK_SHIFT != prev_chunk)
			lft_prefetch_chunk(nd, b->at);
		prev_node = i;
		prev_chunk = b->at >> SNAP_LFT_CHUNK_SHIFT;
		r->p += len;
		last = key;
		if (info->block)
			info->block[k] = (uint64_t)key;
	}
	info->blocks = n;
	return 0;
}

void snap_delta_info_keep(struct snap_delta_info *info)
{
	snap_list_keep(info->block);
	info->block = NULL;
	info->mask = NULL;
}

/* Whether copy can be what snap_dup(base) would make: the caller promises
 * it was, and unchanged; this catches one made from another generation. */
static int copy_of(const struct snap *copy, const struct snap *base)
{
	return copy->generation == base->generation && copy->sm_guid == base->sm_guid &&
	       copy->timestamp == base->timestamp && copy->nnodes == base->nnodes && copy->nports == base->nports;
}

int snap_delta_apply(const struct snap *base, const uint8_t *buf, size_t len, struct snap **out,
		     struct snap_delta_info *info, char err[SNAP_ERR_LEN])
{
	return snap_delta_apply_to(base, NULL, buf, len, out, info, err);
}

/* A delta's header and engine name, checked against base: r is left at
 * its first record, the engine copied into engine[]. 0, -1 or
 * SNAP_DELTA_NOBASE. */
static int open_against(const struct snap *base, const uint8_t *buf, size_t len, struct snap_delta_info *info,
			struct rd *r, char engine[SNAP_ENGINE_LEN + 1], char err[SNAP_ERR_LEN])
{
	uint32_t nnodes;
	if (open_delta(buf, len, info, r, &nnodes, err))
		return -1;
	if (info->base_generation != base->generation || info->base_sm_guid != base->sm_guid ||
	    info->base_timestamp != base->timestamp) {
		snprintf(err, SNAP_ERR_LEN,
			 "delta against generation %llu (SM 0x%016llx, taken %llu), but the base here is "
			 "generation %llu (SM 0x%016llx, taken %llu): send a full snapshot",
			 (unsigned long long)info->base_generation, (unsigned long long)info->base_sm_guid,
			 (unsigned long long)info->base_timestamp, (unsigned long long)base->generation,
			 (unsigned long long)base->sm_guid, (unsigned long long)base->timestamp);
		return SNAP_DELTA_NOBASE;
	}
	if (nnodes != base->nnodes)
		return fail(err, "delta for %u nodes applied to a base of %u", nnodes, base->nnodes);
	uint8_t elen = *r->p++;
	if (elen > SNAP_ENGINE_LEN || !need(r, elen) || memchr(r->p, 0, elen))
		return fail(err, "bad engine name in delta (length %u)", elen);
	memcpy(engine, r->p, elen);
	engine[elen] = 0;
	r->p += elen;
	return 0;
}

int snap_delta_apply_to(const struct snap *base, struct snap *copy, const uint8_t *buf, size_t len,
			struct snap **out, struct snap_delta_info *info, char err[SNAP_ERR_LEN])
{
	struct snap_delta_info tmp = { 0 };
	struct rd r;
	char engine[SNAP_ENGINE_LEN + 1];
	if (!info)
		info = &tmp;
	int rc = open_against(base, buf, len, info, &r, engine, err);
	if (rc || (copy && !copy_of(copy, base))) {
		snap_free(copy);
		copy = NULL;
	}
	if (rc)
		return rc;
	struct snap *s = copy ? copy : snap_dup(base);
	if (!s)
		return fail(err, "out of memory sharing the base");
	memcpy(s->engine, engine, strlen(engine) + 1);
	s->generation = info->generation;
	s->sm_guid = rd64(buf + 40);
	s->sweep = rd64(buf + 48);
	s->timestamp = rd64(buf + 56);
	if (apply_descs(&r, s, &info->descs, err) ||
	    apply_ports(&r, s, info->port_key, SNAP_DELTA_PORT_KEYS, &info->ports, err) ||
	    apply_blocks(&r, s, info, err))
		goto bad;
	if (r.p != r.end) {
		fail(err, "%zu bytes after the last delta record", (size_t)(r.end - r.p));
		goto bad;
	}
	/* Ports change what snap_validate() checks across the fabric (links,
	 * LIDs, GUIDs): a few (a cable) are checked with what they touch, many
	 * (a subnet-up) with the whole fabric. LFT blocks were checked as they
	 * were applied, and the base was valid. */
	if (info->ports || info->descs) {
		s->max_lid = snap_max_lid(s);
		if (info->descs || info->ports > SNAP_DELTA_PORT_KEYS
			    ? snap_validate_records(s, err)
			    : snap_validate_ports(s, base, info->port_key, info->ports, err))
			goto bad;
	}
	*out = s;
	return 0;
bad:
	snap_delta_info_keep(info); /* perhaps the kept one: for the next */
	snap_free(s);
	return -1;
}


/* ---- composition ---------------------------------------------------------- */

/* One section of a delta (descriptions, ports or LFT blocks) read record by
 * record and checked as apply_descs/ports/blocks check it, against the
 * node table of shape (a snapshot of the fabric both deltas describe: only
 * its node count, types, port counts and table lengths are used). */
enum { SEC_DESC, SEC_PORT, SEC_BLOCK };
static const char *const sec_name[] = { "description", "port", "LFT block" };
static const size_t sec_min[] = { 5, 6, BLOCK_KEY + 1 }; /* smallest record, for read_count (blocks: block_min) */
static const size_t sec_fixed[] = { 5, 6, BLOCK_KEY };    /* the bytes before its variable part */

struct sec {
	struct rd *r;
	int kind;
	const char *who; /* "first" or "second", for errors */
	uint32_t left, k;
	int64_t last, key;
	const uint8_t *rec; /* the current record, its key fields included */
	size_t len;
	uint64_t mask;      /* an LFT block record's entries (block_body) */
	const uint8_t *ent;
};

static int sec_open(struct sec *s, struct rd *r, int kind, const char *who, char err[SNAP_ERR_LEN])
{
	char e[SNAP_ERR_LEN];
	*s = (struct sec){ .r = r, .kind = kind, .who = who, .last = -1 };
	if (read_count(r, kind == SEC_BLOCK ? block_min(r) : sec_min[kind], sec_name[kind], &s->left, e))
		return fail(err, "%s delta: %s", who, e);
	return 0;
}

/* The length of the record at s->r->p with its key in *key; -1 when it is
 * malformed. */
static int64_t sec_record(struct sec *s, const struct snap *shape, int64_t *key, char err[SNAP_ERR_LEN])
{
	const struct rd *r = s->r;
	const uint8_t *p = r->p;
	if (!need(r, sec_fixed[s->kind]))
		return fail(err, "%s delta: %s record %u truncated", s->who, sec_name[s->kind], s->k);
	uint32_t i = rd32(p);
	if (i >= shape->nnodes)
		return fail(err, "%s delta: %s record %u names node %u of %u", s->who, sec_name[s->kind], s->k, i,
			    shape->nnodes);
	const struct snap_node *nd = &shape->nodes[i];
	size_t len;
	if (s->kind == SEC_DESC) {
		*key = i;
		len = 5 + (size_t)p[4];
		if (p[4] > SNAP_DESC_LEN || !need(r, len) || memchr(p + 5, 0, p[4]))
			return fail(err, "%s delta: description of node %u: bad length %u or a NUL byte", s->who, i, p[4]);
	} else if (s->kind == SEC_PORT) {
		*key = (int64_t)i << 8 | p[4];
		if (p[4] > nd->nports || p[5] > 1)
			return fail(err, "%s delta: port record %u: node %u has no port %u, or presence byte %u", s->who,
				    s->k, i, p[4], p[5]);
		len = 6 + (p[5] ? PORT_REC : 0);
		if (!need(r, len))
			return fail(err, "%s delta: port record %u truncated", s->who, s->k);
	} else {
		uint32_t blk = rd16(p + 4);
		*key = (int64_t)i << 16 | blk;
		if (nd->type != SNAP_NODE_SWITCH || (uint64_t)blk * SNAP_DELTA_BLOCK >= nd->lft_len)
			return fail(err, "%s delta: LFT block record %u names node %u block %u: not a switch, or past its table",
				    s->who, s->k, i, blk);
		char e[SNAP_ERR_LEN];
		if (block_body(r, p + BLOCK_KEY, nd, blk, &len, &s->mask, &s->ent, e))
			return fail(err, "%s delta: %s", s->who, e);
		len += BLOCK_KEY;
	}
	if (*key <= s->last)
		return fail(err, "%s delta: %s record %u out of order", s->who, sec_name[s->kind], s->k);
	return (int64_t)len;
}

/* Steps to the next record: 1, 0 at the end of the section, -1 if bad. */
static int sec_next(struct sec *s, const struct snap *shape, char err[SNAP_ERR_LEN])
{
	s->rec = NULL;
	if (!s->left)
		return 0;
	int64_t len = sec_record(s, shape, &s->key, err);
	if (len < 0)
		return -1;
	s->rec = s->r->p;
	s->len = (size_t)len;
	s->r->p += len;
	s->last = s->key;
	s->left--;
	s->k++;
	return 1;
}

/* An LFT block record with its entry mask (SNAP_DELTA_ENTRIES): b's
 * entries, and a's (may be NULL) where b has none. */
static void put_block(uint8_t **p, const struct sec *a, const struct sec *b)
{
	uint64_t ma = a ? a->mask : 0, mb = b->mask;
	memcpy(*p, b->rec, BLOCK_KEY);
	*p += BLOCK_KEY;
	put64(p, ma | mb);
	for (uint64_t m = ma | mb; m; m &= m - 1) {
		uint64_t bit = m & -m;
		const struct sec *t = (mb & bit) ? b : a;
		*(*p)++ = t->ent[__builtin_popcountll(t->mask & (bit - 1))];
	}
}

/* Merges one section of both deltas into *p: every key of either, the
 * second's record where both have one (each record replaces all of its
 * description or port; of a block, the entries it names). masked: the
 * result's block records name their entries (either delta's did). */
static int merge_section(struct rd *ra, struct rd *rb, int kind, int masked, const struct snap *shape, uint8_t **p,
			 char err[SNAP_ERR_LEN])
{
	struct sec x, y;
	if (sec_open(&x, ra, kind, "first", err) || sec_open(&y, rb, kind, "second", err))
		return -1;
	uint8_t *cntp = *p;
	uint32_t n = 0;
	*p += 4;
	masked = masked && kind == SEC_BLOCK;
	int hx = sec_next(&x, shape, err), hy = hx < 0 ? 0 : sec_next(&y, shape, err);
	for (;;) {
		if (hx < 0 || hy < 0)
			return -1;
		if (!hx && !hy)
			break;
		int use_x = hx && (!hy || x.key < y.key), both = hx && hy && x.key == y.key;
		const struct sec *t = use_x ? &x : &y;
		if (masked)
			put_block(p, both ? &x : NULL, t);
		else {
			memcpy(*p, t->rec, t->len);
			*p += t->len;
		}
		n++;
		if (use_x) {
			hx = sec_next(&x, shape, err);
			continue;
		}
		if (both)
			hx = sec_next(&x, shape, err);
		if (hx >= 0)
			hy = sec_next(&y, shape, err);
	}
	put32(&cntp, n);
	return 0;
}

static int read_engine(struct rd *r, const char *who, const uint8_t **name, uint8_t *len, char err[SNAP_ERR_LEN])
{
	*len = *r->p++;
	*name = r->p;
	if (*len > SNAP_ENGINE_LEN || !need(r, *len) || memchr(r->p, 0, *len))
		return fail(err, "%s delta: bad engine name (length %u)", who, *len);
	r->p += *len;
	return 0;
}

int snap_delta_compose(const struct snap *shape, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
		       uint8_t **out, size_t *outlen, char err[SNAP_ERR_LEN])
{
	struct snap_delta_info ia = { 0 }, ib = { 0 };
	struct rd ra, rb;
	uint32_t na, nb;
	char e[SNAP_ERR_LEN];
	*out = NULL;
	if (open_delta(a, alen, &ia, &ra, &na, e))
		return fail(err, "first delta: %s", e);
	if (open_delta(b, blen, &ib, &rb, &nb, e))
		return fail(err, "second delta: %s", e);
	if (ib.base_generation != ia.generation || ib.base_sm_guid != rd64(a + 40) ||
	    ib.base_timestamp != rd64(a + 56)) {
		snprintf(err, SNAP_ERR_LEN,
			 "the second delta is against generation %llu (SM 0x%016llx, taken %llu), but the first "
			 "makes generation %llu (SM 0x%016llx, taken %llu)",
			 (unsigned long long)ib.base_generation, (unsigned long long)ib.base_sm_guid,
			 (unsigned long long)ib.base_timestamp, (unsigned long long)ia.generation,
			 (unsigned long long)rd64(a + 40), (unsigned long long)rd64(a + 56));
		return SNAP_DELTA_NOBASE;
	}
	if (na != shape->nnodes || nb != shape->nnodes)
		return fail(err, "deltas for %u and %u nodes composed on a fabric of %u", na, nb, shape->nnodes);
	const uint8_t *ea, *eb;
	uint8_t la, lb;
	if (read_engine(&ra, "first", &ea, &la, err) || read_engine(&rb, "second", &eb, &lb, err))
		return -1;
	/* The result holds at most every record of both, and one header, base
	 * and engine name fewer; when one delta names block entries and the
	 * other not, the other's block records (7 bytes or more) each gain
	 * an 8-byte mask. Written once and dropped (topod journals it and
	 * reads it back for the next): in 2 MiB pages past a few MiB, whose
	 * first writes fault 512 times less often, and only those written
	 * are resident. */
	uint32_t flags = (ra.flags | rb.flags) & SNAP_DELTA_ENTRIES;
	size_t room = alen + blen;
	if (flags && !(ra.flags & SNAP_DELTA_ENTRIES))
		room += alen / (BLOCK_KEY + 1) * 8;
	if (flags && !(rb.flags & SNAP_DELTA_ENTRIES))
		room += blen / (BLOCK_KEY + 1) * 8;
	uint8_t *buf = snap_bytes_realloc(NULL, room), *p = buf + SNAP_HEADER_LEN;
	if (!buf)
		return fail(err, "out of memory composing deltas of %zu and %zu bytes", alen, blen);
	put64(&p, ia.base_generation);
	put64(&p, ia.base_sm_guid);
	put64(&p, ia.base_timestamp);
	put32(&p, na);
	put32(&p, flags);
	put8(&p, lb);
	memcpy(p, eb, lb);
	p += lb;
	for (int kind = SEC_DESC; kind <= SEC_BLOCK; kind++)
		if (merge_section(&ra, &rb, kind, flags != 0, shape, &p, err))
			goto bad;
	if (ra.p != ra.end || rb.p != rb.end) {
		fail(err, "%zu bytes after the last record of the %s delta",
		     (size_t)(ra.p != ra.end ? ra.end - ra.p : rb.end - rb.p), ra.p != ra.end ? "first" : "second");
		goto bad;
	}
	uint64_t plen = (uint64_t)(p - buf) - SNAP_HEADER_LEN;
	if (plen > SNAP_MAX_PAYLOAD) {
		fail(err, "composed delta of %llu bytes exceeds the limit", (unsigned long long)plen);
		goto bad;
	}
	seal(buf, plen, ib.generation, rd64(b + 40), rd64(b + 48), rd64(b + 56));
	*out = buf;
	*outlen = (size_t)(p - buf);
	return 0;
bad:
	free(buf);
	return -1;
}
