/*
 * fuzz_namemap.c - libFuzzer harness for the node-name-map parser
 * (topod --node-name-map, analysis/namemap.c), and for what its names do
 * downstream: a map that parses is applied to a small two-rail fabric
 * (tf_tree2: CA GUIDs 0x0002c903000000NN, switches 0x0008f105000000NN)
 * whose index, hierarchy and host names are then built from it. A map may
 * name a CA anything: the index must come out whole or refuse with a
 * reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "namemap.h"
#include "route.h"
#include "testfab.h"

static struct snap *fab;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!fab) {
		fab = snap_new();
		tf_tree2(fab, 3, 2, 2, 2);
		tf_finish(fab, 0);
	}
	struct route_namemap *m = NULL;
	char err[AN_ERR_LEN];
	err[0] = '\0';
	if (route_namemap_parse((const char *)data, size, &m, err)) {
		if (!err[0])
			abort();
		return 0;
	}
	struct fabric_index *x = NULL;
	err[0] = '\0';
	if (fabric_index_build(fab, m, 1, &x, err)) {
		if (!err[0])
			abort();
	}
	fabric_index_free(x);
	route_namemap_free(m);
	return 0;
}
