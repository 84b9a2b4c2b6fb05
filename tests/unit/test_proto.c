/*
 * test_proto.c - the request splitter on well-formed and hostile lines.
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "tap.h"

static struct proto_req req;

static int split(const char *text, const char **why)
{
	static char buf[PROTO_LINE_MAX + 1];
	size_t len = strlen(text);
	memcpy(buf, text, len + 1);
	return proto_split(buf, len, &req, why);
}

int main(void)
{
	const char *why = NULL;
	CHECK(split("hops c401-101 c402-101", &why) == 0 && !strcmp(req.cmd, "hops") && req.argc == 2 &&
		      !strcmp(req.argv[0], "c401-101") && !strcmp(req.argv[1], "c402-101"),
	      "command and two arguments");
	CHECK(split("  \thops\t a   b  \r", &why) == 0 && req.argc == 2 && !strcmp(req.argv[1], "b"),
	      "tabs, runs of spaces and a trailing CR");
	CHECK(split("", &why) != 0 && !strcmp(why, "empty request"), "empty line refused");
	CHECK(split("   ", &why) != 0 && !strcmp(why, "empty request"), "blank line refused");
	CHECK(split("hops a\x01 b", &why) != 0 && strstr(why, "control"), "control byte refused");
	CHECK(split("hops a\x7f", &why) != 0 && strstr(why, "control"), "DEL refused");
	CHECK(split("hops \"quoted host\"", &why) == 0 && req.argc == 2 && !strcmp(req.argv[0], "\"quoted"),
	      "quotes are plain bytes: they never join words");
	char nul[] = "hops a\0b";
	CHECK(proto_split(nul, 8, &req, &why) != 0 && strstr(why, "control"), "a NUL inside the line is refused");

	/* PROTO_ARGS_MAX arguments fit; one more does not. The splitter
	 * writes NULs into the line, so each case gets a fresh one. */
	char *big = malloc((PROTO_ARGS_MAX + 1) * 2 + 16);
	for (size_t nargs = PROTO_ARGS_MAX; nargs <= PROTO_ARGS_MAX + 1; nargs++) {
		size_t o = 8;
		memcpy(big, "clusters", 8);
		for (size_t i = 0; i < nargs; i++) {
			big[o++] = ' ';
			big[o++] = 'x';
		}
		big[o] = '\0';
		int rc = proto_split(big, o, &req, &why);
		if (nargs == PROTO_ARGS_MAX)
			CHECK(rc == 0 && req.argc == PROTO_ARGS_MAX, "%d arguments accepted", PROTO_ARGS_MAX);
		else
			CHECK(rc != 0 && strstr(why, "too many"), "one argument more is refused");
	}
	free(big);

	/* Random bytes: never a crash, and an accepted line has only
	 * printable words. */
	srand(7);
	int bad = 0;
	for (int it = 0; it < 100000; it++) {
		char line[64];
		size_t len = (size_t)(rand() % 63);
		for (size_t i = 0; i < len; i++)
			line[i] = (char)(rand() % 256);
		line[len] = '\0';
		if (proto_split(line, len, &req, &why) == 0) {
			for (size_t a = 0; a <= req.argc; a++) {
				const char *w = a ? req.argv[a - 1] : req.cmd;
				for (const unsigned char *p = (const unsigned char *)w; *p; p++)
					bad += *p < 0x20 || *p == 0x7f || *p == ' ';
			}
		}
	}
	CHECK(bad == 0, "100,000 random lines: accepted words never hold spaces or control bytes");
	return TAP_DONE();
}
