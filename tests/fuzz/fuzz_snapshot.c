/*
 * fuzz_snapshot.c - libFuzzer harness for the snapshot decoder.
 *
 * Input is the bytes a producer would send. Two paths: the bytes as they
 * are (which mostly exercises the header and checksum checks), and the
 * bytes with both checksums recomputed, so the fuzzer reaches the
 * structural checks and the builder behind them. A decoded snapshot must
 * validate, re-encode and decode again to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void check(const uint8_t *buf, size_t len)
{
	struct snap *s = NULL;
	char err[SNAP_ERR_LEN];
	if (snap_decode(buf, len, &s, err)) {
		if (!err[0])
			abort(); /* every refusal names its reason */
		return;
	}
	if (snap_validate(s, err))
		abort();
	uint8_t *again;
	size_t alen;
	if (snap_encode(s, &again, &alen, err))
		abort();
	struct snap *t = NULL;
	if (snap_decode(again, alen, &t, err))
		abort();
	uint8_t *third;
	size_t tlen;
	if (snap_encode(t, &third, &tlen, err) || tlen != alen || memcmp(third, again, alen))
		abort();
	free(third);
	free(again);
	snap_free(t);
	snap_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check(data, size);
	if (size < SNAP_HEADER_LEN)
		return 0;
	uint8_t *b = malloc(size);
	memcpy(b, data, size);
	memcpy(b, SNAP_MAGIC, SNAP_MAGIC_LEN);
	wr32(b + 8, SNAP_VERSION);
	wr32(b + 12, SNAP_HEADER_LEN);
	uint64_t plen = size - SNAP_HEADER_LEN;
	wr32(b + 24, (uint32_t)plen);
	wr32(b + 28, (uint32_t)(plen >> 32));
	wr32(b + 32, snap_crc32c(0, b + SNAP_HEADER_LEN, plen));
	wr32(b + 36, 0);
	wr32(b + 36, snap_crc32c(0, b, SNAP_HEADER_LEN));
	check(b, size);
	free(b);
	return 0;
}
