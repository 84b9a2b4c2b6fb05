/*
 * fuzz_conf.c - libFuzzer harness for topod.conf (topod -c FILE): topod's
 * own main.c is compiled in, its main() renamed, so the real parse_config()
 * and every option's parser it calls run on the input as a file. Keys
 * that only store a path are taken as they are (nothing is opened but the
 * file itself); a refused line says why on stderr (t_fuzz.sh closes it).
 */
#define main topod_main
#include "../../topod/main.c"
#undef main

#include "fuzzfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path, sizeof(path));
	struct options o;
	memset(&o, 0, sizeof(o));
	set_defaults(&o);
	parse_config(&o, path);
	if (o.nplanes > TOPO_PLANES_MAX || o.srv.ningest > SERVER_MAX_ADDRS || o.srv.nlisten > SERVER_MAX_ADDRS)
		abort();
	for (int i = 0; i < o.nowned; i++)
		free(o.owned[i]);
	close(fd);
	return 0;
}
