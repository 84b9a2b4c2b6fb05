/*
 * fuzzfile.h - for harnesses whose parser opens a path: the input as a
 * file in memory (memfd), named /proc/self/fd/N, so nothing touches the
 * disk and nothing is left behind.
 */
#ifndef FUZZFILE_H
#define FUZZFILE_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Opens a file holding data[0..size); path gets its name. -1 on error. */
static inline int fuzz_file(const void *data, size_t size, char *path, size_t plen)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	const char *p = data;
	size_t left = size;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w <= 0)
			abort();
		p += w;
		left -= (size_t)w;
	}
	snprintf(path, plen, "/proc/self/fd/%d", fd);
	return fd;
}

/* Splits data at the first "\n--\n": *a the part before, *b after (empty
 * when there is no separator). */
static inline void fuzz_split(const unsigned char *data, size_t size, size_t *alen, const unsigned char **b,
			      size_t *blen)
{
	for (size_t i = 0; i + 4 <= size; i++)
		if (data[i] == '\n' && data[i + 1] == '-' && data[i + 2] == '-' && data[i + 3] == '\n') {
			*alen = i + 1;
			*b = data + i + 4;
			*blen = size - i - 4;
			return;
		}
	*alen = size;
	*b = data + size;
	*blen = 0;
}

#endif
