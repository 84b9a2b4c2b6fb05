/*
 * fuzz_coll_sched.c - libFuzzer harness for libtopocoll's schedule files
 * (TOPOCOLL_SCHEDULE for MPI_Alltoall, TOPOCOLL_ALLGATHER_SCHEDULE for
 * MPI_Allgather; coll/sched.c, included so its static reader runs): the
 * path rank 0 takes (from_file, then the check every schedule must pass),
 * then every rank's part as each would cut it. Byte 0 gives the
 * communicator's size (1..64) and the kind (0x80: an allgather's); the
 * rest is the file. A refused schedule says why.
 */
#include "../../coll/sched.c"

#include "fuzzfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int n = (data[0] & 0x3f) + 1, ag = data[0] >> 7;
	char path[64], why[256] = "";
	int fd = fuzz_file(data + 1, size - 1, path, sizeof(path));
	struct tc_whole f = { .n = n, .ag = ag, .bytes = 1 << 20, .agring_s = -1 };
	if (from_file(&f, path, why, sizeof(why)) || valid(&f, why, sizeof(why))) {
		if (!why[0])
			abort();
	} else {
		for (int me = 0; me < n; me++) {
			if (ag) {
				struct tc_agsched *s = mine_ag(&f, me);
				if (!s)
					abort();
				tc_agsched_free(s);
			} else {
				struct tc_sched s = { .nsteps = f.nsteps };
				if (mine_room(&s, &f))
					abort();
				mine(&s, &f, me);
				if (s.soff[f.nsteps] != n - 1 || s.roff[f.nsteps] != n - 1)
					abort();
				tc_sched_free(&s);
			}
		}
	}
	whole_free(&f);
	close(fd);
	return 0;
}
