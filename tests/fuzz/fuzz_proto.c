/*
 * fuzz_proto.c - libFuzzer harness for the request splitter: any bytes,
 * never a crash, and an accepted request holds only printable words.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static struct proto_req req;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > PROTO_LINE_MAX)
		return 0;
	char *line = malloc(size + 1);
	memcpy(line, data, size);
	line[size] = '\0';
	const char *why;
	if (proto_split(line, size, &req, &why) == 0) {
		for (size_t a = 0; a <= req.argc; a++) {
			const char *w = a ? req.argv[a - 1] : req.cmd;
			if (!*w)
				abort();
			for (const unsigned char *p = (const unsigned char *)w; *p; p++)
				if (*p < 0x20 || *p == 0x7f || *p == ' ')
					abort();
		}
	} else if (!why || !*why) {
		abort();
	}
	free(line);
	return 0;
}
