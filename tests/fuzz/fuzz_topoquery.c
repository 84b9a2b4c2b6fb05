/*
 * fuzz_topoquery.c - libFuzzer harness for topoquery: its main() (renamed)
 * with one of the command lines below, the files it reads (a topoprof
 * report, a traffic matrix, a METIS graph, a host file) made of the input,
 * and topod's replies from the input too, through libtii's real transport
 * over the fake network of fakenet.h. So the reading of every file a user
 * hands it and the printing of every reply (text and JSON) run on hostile
 * bytes.
 *
 * Input: byte 0 picks the command line, byte 1 the reply chunk size (0:
 * 64 KiB); then the file (up to "\n--\n"), then the server's bytes.
 * Output goes to stdout and stderr (t_fuzz.sh closes both). Seeds
 * (tests/fuzz/mkcorpus.sh): with FUZZ_TII_SERVERS=HOST:PORT topoquery asks
 * that real server instead.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakenet.h"
#include "fuzzfile.h"

int topoquery_main(int argc, char **argv);

/* "F" is replaced by the file's path. */
static const char *const lines[][12] = {
	{ "profile", "F" },
	{ "profile", "F", "F" },
	{ "--matrix", "F", "load", "matrix", "Hca1", "Hca2", "Hca3", "Hca4" },
	{ "-j", "--matrix", "F", "load", "matrix", "Hca1", "Hca2", "Hca3", "Hca4" },
	{ "--bytes", "6442450944", "--links", "load", "alltoall", "Hca1*2", "Hca2", "Hca3" },
	{ "-j", "--bytes", "9007199254740992", "load", "alltoall", "Hca1", "Hca2" },
	{ "map", "F", "Hca1*4", "Hca2*4" },
	{ "-j", "map", "stencil:2x2", "Hca1*2", "Hca2*2" },
	{ "-f", "F", "hops", "Hca1" },
	{ "-f", "F", "order" },
	{ "pick", "2", "Hca[1-4]" },
	{ "-j", "pick", "pattern=ring", "2", "Hca1", "Hca2", "Hca3" },
	{ "schedule", "route", "bytes=1099511627776", "Hca1*2", "Hca2*2" },
	{ "-j", "schedule", "agbest", "Hca1", "Hca2", "Hca3" },
	{ "tree" },
	{ "-j", "tree" },
	{ "path", "Hca1", "Hca2" },
	{ "-j", "shared", "--loads", "Hca1", "Hca2", "Hca3" },
	{ "matrix", "--delay=8589934592", "Hca1", "Hca2" },
	{ "-j", "matrix", "Hca1", "Hca2", "Hca3" },
	{ "history" },
	{ "-j", "diff", "1", "2", "Hca1", "Hca2" },
	{ "show", "Hca1" },
	{ "-j", "links", "--down" },
	{ "hosts" },
	{ "-j", "info" },
	{ "clusters", "Hca1", "Hca2" },
	{ "slurm" },
	{ "simgrid", "Hca1", "Hca2" },
	{ "planes" },
	{ "resolve", "Hca1" },
	{ "watch", "--after", "3", "--count", "2", "--wait", "1" },
};
#define NLINES (sizeof(lines) / sizeof(lines[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	const char *const *l = lines[data[0] % NLINES];
	size_t flen, slen;
	const uint8_t *srv;
	fuzz_split(data + 2, size - 2, &flen, &srv, &slen);
	char path[64];
	int fd = fuzz_file(data + 2, flen, path, sizeof(path));
	char *argv[20];
	int argc = 0;
	argv[argc++] = "topoquery";
	argv[argc++] = "-t";
	argv[argc++] = "2000";
	const char *real = getenv("FUZZ_TII_SERVERS");
	if (real) {
		argv[argc++] = "-s";
		argv[argc++] = (char *)real;
	}
	int first = argc;
	/* a real argv is writable (topoquery cuts WORD*N in place) */
	for (int i = 0; i < 12 && l[i]; i++)
		argv[argc++] = strdup(!strcmp(l[i], "F") ? path : l[i]);
	argv[argc] = NULL;
	F = (struct fakenet){ .data = srv, .len = slen, .chunk = data[1] ? data[1] : 65536, .active = !real };
	optind = 0;
	topoquery_main(argc, argv);
	F.active = 0;
	F.nfd = 0;
	for (int i = first; i < argc; i++)
		free(argv[i]);
	close(fd);
	return 0;
}
