/*
 * fuzz_text.c - libFuzzer harness for the text fabric loader (topo-snap
 * from-text, topod --topology/--lfts): an ibnetdiscover topology, then
 * "\n--\n", then ibroute / opensm-lfts.dump LFTs (none without the
 * separator). A fabric that loads must validate and survive the snapshot
 * encoding both ways; a refusal names its reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzzfile.h"
#include "snapshot.h"
#include "textdump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t tlen, llen;
	const uint8_t *lfts;
	fuzz_split(data, size, &tlen, &lfts, &llen);
	char tpath[64], lpath[64], err[SNAP_ERR_LEN];
	int tfd = fuzz_file(data, tlen, tpath, sizeof(tpath));
	int lfd = llen ? fuzz_file(lfts, llen, lpath, sizeof(lpath)) : -1;
	struct snap *s = NULL;
	err[0] = '\0';
	if (snap_load_text(tpath, lfd >= 0 ? lpath : NULL, &s, err)) {
		if (!err[0])
			abort();   /* every refusal names its reason */
	} else {
		uint8_t *buf;
		size_t len;
		struct snap *t = NULL;
		if (snap_validate(s, err) || snap_encode(s, &buf, &len, err) || snap_decode(buf, len, &t, err))
			abort();
		free(buf);
		snap_free(t);
		snap_free(s);
	}
	close(tfd);
	if (lfd >= 0)
		close(lfd);
	return 0;
}
