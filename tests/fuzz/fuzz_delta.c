/*
 * fuzz_delta.c - libFuzzer harness for the delta decoder.
 *
 * The base is a fixed small fabric. Each input is tried as it is, and
 * with its header and base identity rewritten to match the base and its
 * checksums recomputed, so the fuzzer reaches the record checks. Whatever
 * applies must validate, and re-encoding it as a delta against the base
 * must apply again to the same snapshot.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "delta.h"
#include "testfab.h"
#include "wire.h"

static struct snap *base;

static void check(const uint8_t *buf, size_t len)
{
	struct snap *s = NULL;
	char err[SNAP_ERR_LEN];
	err[0] = 0;
	if (snap_delta_apply(base, buf, len, &s, NULL, err)) {
		if (!err[0])
			abort(); /* every refusal names its reason */
		return;
	}
	if (snap_validate(s, err))
		abort();
	uint8_t *again;
	size_t alen;
	struct snap *t = NULL;
	if (snap_delta_encode(base, s, &again, &alen, err) || snap_delta_apply(base, again, alen, &t, NULL, err) ||
	    snap_diff(s, t, SNAP_DIFF_STATE, NULL, NULL))
		abort();
	free(again);
	snap_free(t);
	snap_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base) {
		base = snap_new();
		tf_tree2(base, 3, 2, 2, 2);
		tf_finish(base, 0);
		base->generation = 5;
	}
	check(data, size);
	if (size < SNAP_HEADER_LEN + 32)
		return 0;
	uint8_t *b = malloc(size), *p;
	memcpy(b, data, size);
	memcpy(b, SNAP_DELTA_MAGIC, SNAP_MAGIC_LEN);
	p = b + 8;
	put32(&p, SNAP_DELTA_VERSION);
	put32(&p, SNAP_HEADER_LEN);
	p = b + 24;
	put64(&p, size - SNAP_HEADER_LEN);
	p = b + SNAP_HEADER_LEN;
	put64(&p, base->generation);
	put64(&p, base->sm_guid);
	put64(&p, base->timestamp);
	put32(&p, base->nnodes);
	p = b + 32;
	put32(&p, snap_crc32c(0, b + SNAP_HEADER_LEN, size - SNAP_HEADER_LEN));
	put32(&p, 0);
	p = b + 36;
	put32(&p, snap_crc32c(0, b, SNAP_HEADER_LEN));
	check(b, size);
	free(b);
	return 0;
}
