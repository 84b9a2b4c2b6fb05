/*
 * testdelta.h - hand-made deltas for test_delta and test_compose: the
 * encoder writes LFT block records that name their entries
 * (SNAP_DELTA_ENTRIES); a producer of the first version sent whole blocks,
 * and the decoder must take both.
 */
#ifndef TESTDELTA_H
#define TESTDELTA_H

#include "delta.h"
#include "testfab.h"
#include "wire.h"

/* Header and payload checksums again, after a test changed bytes. */
static inline void td_reseal(uint8_t *buf, size_t len)
{
	uint8_t *h = buf + 24;
	put64(&h, len - SNAP_HEADER_LEN);
	h = buf + 32;
	put32(&h, snap_crc32c(0, buf + SNAP_HEADER_LEN, len - SNAP_HEADER_LEN));
	put32(&h, 0);
	h = buf + 36;
	put32(&h, snap_crc32c(0, buf, SNAP_HEADER_LEN));
}

/* Where the sections of an encoded delta start: the first description
 * record, the port count, the LFT block count. */
static inline void td_offsets(const uint8_t *d, size_t *desc0, size_t *ports_off, size_t *blocks_off)
{
	size_t off = SNAP_HEADER_LEN + 32;
	off += 1 + d[off];
	uint32_t n = rd32(d + off);
	*desc0 = off + 4;
	off += 4;
	for (uint32_t k = 0; k < n; k++)
		off += 5 + d[off + 4];
	*ports_off = off;
	n = rd32(d + off);
	off += 4;
	for (uint32_t k = 0; k < n; k++)
		off += 6 + (d[off + 5] ? 20 : 0);
	*blocks_off = off;
}

/* Where an encoded delta's LFT block count is. */
static inline size_t td_blocks_at(const uint8_t *d)
{
	size_t desc0, ports_off, blocks_off;
	td_offsets(d, &desc0, &ports_off, &blocks_off);
	return blocks_off;
}

/* d (as the encoder writes it) with whole blocks, t's, and flags 0: what
 * a producer of the first version sends for the same change. */
static inline uint8_t *td_whole_blocks(const uint8_t *d, const struct snap *t, size_t *wl)
{
	size_t b0 = td_blocks_at(d);
	uint32_t n = rd32(d + b0);
	if (rd32(d + SNAP_HEADER_LEN + 28) != SNAP_DELTA_ENTRIES)
		tf_die("td_whole_blocks: the delta does not name its entries");
	uint8_t *w = malloc(b0 + 4 + (size_t)n * (6 + SNAP_DELTA_BLOCK)), *p = w + b0 + 4;
	if (!w)
		tf_die("malloc");
	memcpy(w, d, b0 + 4);
	uint8_t *f = w + SNAP_HEADER_LEN + 28;
	put32(&f, 0);
	const uint8_t *q = d + b0 + 4;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = rd32(q), blk = rd16(q + 4);
		uint64_t mask = rd64(q + 6);
		const struct snap_node *nd = &t->nodes[i];
		uint32_t l0 = blk * SNAP_DELTA_BLOCK, bl = nd->lft_len - l0 < SNAP_DELTA_BLOCK ? nd->lft_len - l0 : SNAP_DELTA_BLOCK;
		memcpy(p, q, 6);
		p += 6;
		for (uint32_t l = 0; l < bl; l++)
			*p++ = snap_lft_get(nd, l0 + l);
		q += 14 + (size_t)__builtin_popcountll(mask);
	}
	*wl = (size_t)(p - w);
	td_reseal(w, *wl);
	return w;
}

#endif
