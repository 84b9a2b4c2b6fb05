/*
 * fuzz_coll_topo.c - libFuzzer harness for libtopocoll's SimGrid platform
 * reader (TOPOCOLL_TOPOLOGY, and topod's `simgrid` answer; coll/topo.c,
 * included): the XML parsed, then the job's topology built over it as
 * init.c does, for a world whose ranks sit on the platform's first hosts
 * (two ranks on the first) and, when byte 0 is odd, one host the platform
 * does not have. A refusal says why.
 */
#include "../../coll/topo.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *xml = malloc(size);
	memcpy(xml, data + 1, size - 1);
	xml[size - 1] = '\0';
	char why[256] = "";
	struct tc_platform p = { 0 };
	if (tc_platform_parse(&p, xml, why, sizeof(why))) {
		if (!why[0])
			abort();
	} else if (p.n > 0) {
		int nw = (p.n < 6 ? p.n : 6) + 1 + (data[0] & 1);
		char *names = calloc((size_t)nw, TC_NAME);
		for (int r = 0; r < nw; r++)
			snprintf(names + (size_t)r * TC_NAME, TC_NAME, "%s",
				 r == nw - 1 && (data[0] & 1) ? "nosuchhost" : p.names + (size_t)(r ? r - 1 : 0) * TC_NAME);
		struct tc_topo t = { 0 };
		why[0] = '\0';
		if (tc_topo_build(&t, &p, names, NULL, nw, why, sizeof(why))) {
			if (!why[0])
				abort();
		} else {
			for (int r = 0; r < nw; r++)
				if (t.host_of[r] < 0 || t.host_of[r] >= t.nhosts)
					abort();
		}
		tc_topo_free(&t);
		free(names);
	}
	tc_platform_free(&p);
	free(xml);
	return 0;
}
