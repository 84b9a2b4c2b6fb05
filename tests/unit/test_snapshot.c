/*
 * test_snapshot.c - the snapshot codec against good, truncated, bit-flipped,
 * oversized and structurally hostile input; the sink option parser; the
 * text-dump loader on hostile text.
 */
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lft_impl.h"
#include "sink.h"
#include "snapshot.h"
#include "tap.h"
#include "textdump.h"

/* Two nodes' tables hold the same entries: read out whole (snap_lft_read
 * across chunks) and compared. */
static int tables_equal_node(const struct snap_node *a, const struct snap_node *b)
{
	uint8_t *x = malloc(a->lft_len + 1u), *y = malloc(a->lft_len + 1u);
	int same = x && y && a->lft_len == b->lft_len;
	if (same) {
		snap_lft_read(a, 0, a->lft_len, x);
		snap_lft_read(b, 0, b->lft_len, y);
		same = !memcmp(x, y, a->lft_len);
	}
	free(x);
	free(y);
	return same;
}

/* Two leaf switches joined by two cables, two hosts each; nodes added out
 * of GUID order so that canonicalization has work to do. */
static struct snap *small_fabric(void)
{
	struct snap *s = snap_new();
	s->generation = 42;
	s->sm_guid = 0x100001;
	s->sweep = 7;
	s->timestamp = 123456789;
	snprintf(s->engine, sizeof(s->engine), "minhop");
	int64_t sw2 = snap_add_node(s, SNAP_NODE_SWITCH, 0x200002, 0x200002, 8, "leaf-2", 6);
	int64_t sw1 = snap_add_node(s, SNAP_NODE_SWITCH, 0x200001, 0x200001, 8, "leaf-1", 6);
	int64_t h[4];
	const char *names[4] = { "c401-101 HCA-1", "c401-102 HCA-1", "c402-101 HCA-1", "c402-102 HCA-1" };
	for (int i = 0; i < 4; i++) {
		h[i] = snap_add_node(s, SNAP_NODE_CA, 0x100010 + 0x10u * (unsigned)(3 - i), 0x100010 + 0x10u * (unsigned)(3 - i), 1,
				     names[i], strlen(names[i]));
		struct snap_port *p = snap_port_of(s, (uint32_t)h[i], 1);
		p->present = 1;
		p->guid = 0x100011 + 0x10u * (unsigned)(3 - i);
		p->lid = (uint16_t)(3 + i);
		p->state = SNAP_PORT_ACTIVE;
		p->width = 2;
		p->speed = 4;
	}
	int64_t sws[2] = { sw1, sw2 };
	for (int k = 0; k < 2; k++) {
		for (unsigned p = 0; p <= 8; p++) {
			struct snap_port *pt = snap_port_of(s, (uint32_t)sws[k], p);
			pt->present = 1;
			pt->guid = s->nodes[sws[k]].guid;
			pt->state = p <= 4 ? SNAP_PORT_ACTIVE : SNAP_PORT_DOWN;
		}
		snap_port_of(s, (uint32_t)sws[k], 0)->lid = (uint16_t)(1 + k);
	}
	snap_link(s, (uint32_t)sw1, 1, (uint32_t)h[0], 1);
	snap_link(s, (uint32_t)sw1, 2, (uint32_t)h[1], 1);
	snap_link(s, (uint32_t)sw2, 1, (uint32_t)h[2], 1);
	snap_link(s, (uint32_t)sw2, 2, (uint32_t)h[3], 1);
	snap_link(s, (uint32_t)sw1, 3, (uint32_t)sw2, 3);
	snap_link(s, (uint32_t)sw1, 4, (uint32_t)sw2, 4);
	/* LID: 1 sw1, 2 sw2, 3,4 on sw1, 5,6 on sw2 */
	uint8_t l1[7] = { SNAP_LFT_NONE, 0, 3, 1, 2, 4, 3 };
	uint8_t l2[7] = { SNAP_LFT_NONE, 3, 0, 4, 3, 1, 2 };
	snap_set_lft(s, (uint32_t)sw1, l1, 7);
	snap_set_lft(s, (uint32_t)sw2, l2, 7);
	snap_canonicalize(s);
	return s;
}

static void wr32(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24); }
static void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)v); wr32(p + 4, (uint32_t)(v >> 32)); }

/* Recomputes both checksums, so that a mutation reaches the structural
 * checks instead of stopping at the CRC. */
static void reseal(uint8_t *buf, size_t len)
{
	wr64(buf + 24, len - SNAP_HEADER_LEN);
	wr32(buf + 32, snap_crc32c(0, buf + SNAP_HEADER_LEN, len - SNAP_HEADER_LEN));
	wr32(buf + 36, 0);
	wr32(buf + 36, snap_crc32c(0, buf, SNAP_HEADER_LEN));
}

static int decode_fails_with(uint8_t *buf, size_t len, const char *needle)
{
	struct snap *s = NULL;
	char err[SNAP_ERR_LEN] = "";
	int rc = snap_decode(buf, len, &s, err);
	if (rc == 0) {
		snap_free(s);
		printf("# decoded unexpectedly\n");
		return 0;
	}
	if (!strstr(err, needle)) {
		printf("# error was: %s\n", err);
		return 0;
	}
	return 1;
}

/* Offsets into the payload of small_fabric(): the first node record starts
 * after counts (8) + engine length and name. */
static size_t first_node_off(const uint8_t *buf)
{
	return SNAP_HEADER_LEN + 8 + 1 + buf[SNAP_HEADER_LEN + 8];
}

static void test_roundtrip(void)
{
	struct snap *s = small_fabric();
	char err[SNAP_ERR_LEN];
	CHECK(snap_validate(s, err) == 0, "hand-built fabric validates");
	CHECK(s->nodes[0].guid < s->nodes[1].guid && s->nodes[4].type == SNAP_NODE_SWITCH,
	      "canonicalize sorts nodes by GUID");
	uint8_t *buf;
	size_t len;
	CHECK(snap_encode(s, &buf, &len, err) == 0, "encode");
	struct snap *d = NULL;
	CHECK(snap_decode(buf, len, &d, err) == 0, "decode what we encoded");
	if (!d)
		return;
	CHECK(d->generation == 42 && d->sweep == 7 && d->sm_guid == 0x100001 && d->timestamp == 123456789 &&
		      !strcmp(d->engine, "minhop"),
	      "header fields survive");
	CHECK(d->nnodes == 6 && d->nports == s->nports && d->nlft == 14 && d->max_lid == 6, "counts survive");
	int same = 1;
	for (uint32_t i = 0; i < d->nnodes; i++)
		same &= d->nodes[i].guid == s->nodes[i].guid && !strcmp(d->nodes[i].desc, s->nodes[i].desc) &&
			d->nodes[i].lft_len == s->nodes[i].lft_len &&
			tables_equal_node(&d->nodes[i], &s->nodes[i]);
	CHECK(same, "nodes, descriptions and LFTs survive");
	int64_t sw = snap_find_node(d, 0x200001);
	CHECK(sw >= 0 && snap_lft_get(&d->nodes[sw], 0) == SNAP_LFT_NONE && snap_lft_get(&d->nodes[sw], 1) == 0,
	      "no-path (0xFF) stays distinct from port 0");
	uint32_t n;
	unsigned p;
	CHECK(snap_find_lid(d, 5, &n, &p) == 0 && d->nodes[n].guid == 0x100020 && p == 1, "find LID 5");
	uint8_t *buf2;
	size_t len2;
	snap_encode(d, &buf2, &len2, err);
	CHECK(len2 == len && !memcmp(buf, buf2, len), "re-encoding is byte-identical");

	char path[] = "/tmp/test_snapshot_XXXXXX";
	int fd = mkstemp(path);
	close(fd);
	struct snap *f = NULL;
	CHECK(snap_write_file(d, path, err) == 0 && snap_read_file(path, &f, err) == 0 && f->nnodes == 6,
	      "atomic file write and read back");
	unlink(path);
	snap_free(f);
	free(buf2);
	snap_free(d);
	free(buf);
	snap_free(s);
}

static void test_truncated(void)
{
	struct snap *s = small_fabric();
	uint8_t *buf;
	size_t len;
	char err[SNAP_ERR_LEN];
	snap_encode(s, &buf, &len, err);
	int all = 1;
	for (size_t l = 0; l < len; l++) {
		/* A fresh copy of exactly l bytes, so ASan sees any over-read. */
		uint8_t *t = malloc(l ? l : 1);
		memcpy(t, buf, l);
		struct snap *d = NULL;
		err[0] = 0;
		if (snap_decode(t, l, &d, err) == 0 || !err[0] ||
		    !(strstr(err, "truncated") || strstr(err, "trailing"))) {
			printf("# length %zu: %s\n", l, err);
			all = 0;
		}
		snap_free(d);
		free(t);
	}
	CHECK(all, "every truncation (0..%zu bytes) is rejected as truncated", len - 1);
	/* Truncated but re-sealed: the structure itself ends early. */
	int all2 = 1;
	for (size_t l = SNAP_HEADER_LEN; l < len; l++) {
		uint8_t *t = malloc(l);
		memcpy(t, buf, l);
		reseal(t, l);
		struct snap *d = NULL;
		if (snap_decode(t, l, &d, err) == 0) {
			printf("# resealed length %zu decoded\n", l);
			all2 = 0;
		}
		snap_free(d);
		free(t);
	}
	CHECK(all2, "every truncated payload with valid checksums is rejected");
	free(buf);
	snap_free(s);
}

static void test_bitflips(void)
{
	struct snap *s = small_fabric();
	uint8_t *buf;
	size_t len;
	char err[SNAP_ERR_LEN];
	snap_encode(s, &buf, &len, err);
	int all = 1, hdr = 0, pay = 0;
	for (size_t i = 0; i < len * 8; i++) {
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
		struct snap *d = NULL;
		err[0] = 0;
		if (snap_decode(buf, len, &d, err) == 0 || !err[0]) {
			printf("# bit %zu accepted\n", i);
			all = 0;
		}
		hdr += strstr(err, "header checksum") || strstr(err, "magic") || strstr(err, "version") ||
		       strstr(err, "header length");
		pay += !!strstr(err, "payload checksum");
		snap_free(d);
		buf[i / 8] ^= (uint8_t)(1u << (i % 8));
	}
	CHECK(all, "all %zu single-bit flips are rejected", len * 8);
	CHECK(hdr > 0 && pay > 0, "flips are named: %d header, %d payload checksum errors", hdr, pay);
	free(buf);
	snap_free(s);
}

static void test_oversized(void)
{
	struct snap *s = small_fabric();
	uint8_t *buf;
	size_t len;
	char err[SNAP_ERR_LEN];
	snap_encode(s, &buf, &len, err);
	uint8_t *t = malloc(len + 16);
	memcpy(t, buf, len);

	/* A header announcing 1 TiB: refused before anything is allocated. */
	wr64(t + 24, (uint64_t)1 << 40);
	wr32(t + 36, 0);
	wr32(t + 36, snap_crc32c(0, t, SNAP_HEADER_LEN));
	uint64_t plen;
	CHECK(snap_peek_header(t, len, &plen, err) != 0 && strstr(err, "exceeds the limit"),
	      "a 1 TiB payload length is refused from the header alone");
	memcpy(t, buf, len);

	/* A node count of 2^20 in a payload of a few hundred bytes. */
	wr32(t + SNAP_HEADER_LEN, 1u << 20);
	reseal(t, len);
	CHECK(decode_fails_with(t, len, "does not fit"), "a node count larger than the payload is refused");
	memcpy(t, buf, len);

	/* Trailing bytes beyond the declared payload. */
	memset(t + len, 0xAB, 16);
	CHECK(decode_fails_with(t, len + 16, "trailing"), "bytes after the payload are refused");

	/* Extra bytes inside the payload, counted and sealed. */
	memcpy(t, buf, len);
	memset(t + len, 0, 16);
	reseal(t, len + 16);
	CHECK(decode_fails_with(t, len + 16, "unparsed"), "payload bytes nobody describes are refused");
	free(t);
	free(buf);
	snap_free(s);
}

/* Structural lies with valid checksums: each must be named. */
static void test_structure(void)
{
	struct snap *s = small_fabric();
	uint8_t *buf;
	size_t len;
	char err[SNAP_ERR_LEN];
	snap_encode(s, &buf, &len, err);
	uint8_t *t = malloc(len);
	size_t n0 = first_node_off(buf);
	/* node 0 is host 0x100000..: type,nports,guid,sysimg,desc_len,desc, then ports */
	size_t desc_len = buf[n0 + 18];
	size_t port1 = n0 + 19 + desc_len + 1; /* port 0 absent: one byte */

#define MUTATE(what, off, val, needle)                                  \
	do {                                                            \
		memcpy(t, buf, len);                                    \
		t[(off)] = (uint8_t)(val);                              \
		reseal(t, len);                                         \
		CHECK(decode_fails_with(t, len, needle), what);         \
	} while (0)

	MUTATE("unknown node type", n0, 9, "unknown node type");
	MUTATE("description longer than 64 bytes", n0 + 18, 200, "description length");
	MUTATE("NUL inside a description", n0 + 19, 0, "NUL byte inside description");
	MUTATE("port presence byte not 0/1", port1, 7, "presence");
	MUTATE("link to a node index out of range", port1 + 1 + 15 + 3, 0x7f, "link to node index");
	MUTATE("link to a port the peer lacks", port1 + 1 + 19, 200, "which has");
	MUTATE("asymmetric link", port1 + 1 + 19, 5, "not symmetric");
	MUTATE("LMC above 7", port1 + 1 + 10, 9, "LMC");
	MUTATE("port state out of range", port1 + 1 + 11, 9, "bad state");
	/* Give host 1 the LID of host 0. */
	memcpy(t, buf, len);
	size_t n1 = port1 + 21;
	size_t port1b = n1 + 19 + buf[n1 + 18] + 1;
	t[port1b + 1 + 8] = buf[port1 + 1 + 8];
	reseal(t, len);
	CHECK(decode_fails_with(t, len, "assigned to two ports"), "duplicate LID");
	/* An LFT entry naming port 9 of an 8-port switch: the last byte of
	 * the payload is the last switch's entry for LID 6. */
	MUTATE("LFT port beyond the switch's ports", len - 1, 9, "it has 8 ports");
	/* Engine name with a NUL. */
	MUTATE("NUL in the engine name", SNAP_HEADER_LEN + 9, 0, "engine");
	/* Nodes out of GUID order: swap the low GUID byte of node 0. */
	MUTATE("nodes out of GUID order", n0 + 2, 0xff, "GUID order");
#undef MUTATE

	/* Random multi-byte damage, re-sealed: never a crash; anything that
	 * is accepted must still validate. */
	srand(1);
	int bad = 0;
	for (int it = 0; it < 20000; it++) {
		memcpy(t, buf, len);
		int k = 1 + rand() % 4;
		for (int j = 0; j < k; j++)
			t[SNAP_HEADER_LEN + (size_t)rand() % (len - SNAP_HEADER_LEN)] = (uint8_t)rand();
		reseal(t, len);
		struct snap *d = NULL;
		if (snap_decode(t, len, &d, err) == 0) {
			if (snap_validate(d, err))
				bad++;
			snap_free(d);
		} else if (!err[0]) {
			bad++;
		}
	}
	CHECK(bad == 0, "20000 random re-sealed corruptions: no crash, no silent acceptance of invalid data");
	free(t);
	free(buf);
	snap_free(s);
}

static void test_sink_options(void)
{
	struct sink_opts o;
	char err[SNAP_ERR_LEN];
	CHECK(sink_parse_options("sink=unix:/run/topod/ingest.sock  sink=tcp:127.0.0.1:7879\tspool=/var/lib/x "
				 "timeout_ms=100 backoff_max_ms=2000 linger_ms=0",
				 &o, err) == 0 &&
		      o.nsinks == 3 && o.sinks[0].kind == SINK_UNIX && o.sinks[1].kind == SINK_TCP &&
		      !strcmp(o.sinks[1].port, "7879") && o.sinks[2].kind == SINK_SPOOL && o.timeout_ms == 100 &&
		      o.backoff_max_ms == 2000 && o.linger_ms == 0,
	      "parse several sinks and timings");
	CHECK(sink_parse_options("sink=tcp:[::1]:99", &o, err) == 0 && !strcmp(o.sinks[0].host, "::1"),
	      "IPv6 sink address");
	CHECK(sink_parse_options(NULL, &o, err) == 0 && o.nsinks == 0, "no options: no sinks");
	CHECK(sink_parse_options("sink=udp:x", &o, err) != 0 && strstr(err, "unix:PATH or tcp"), "bad sink kind named");
	CHECK(sink_parse_options("sink=tcp:host:99999", &o, err) != 0, "port out of range");
	CHECK(sink_parse_options("colour=blue", &o, err) != 0 && strstr(err, "unknown option"), "unknown key named");
	CHECK(sink_parse_options("sink", &o, err) != 0 && strstr(err, "key=value"), "token without '='");
	CHECK(sink_parse_options("timeout_ms=-5", &o, err) != 0, "negative timeout");
	char longpath[300];
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = 0;
	char opt[400];
	snprintf(opt, sizeof(opt), "sink=unix:/%.200s", longpath);
	CHECK(sink_parse_options(opt, &o, err) != 0 && strstr(err, "107"), "UNIX path longer than sun_path");
	CHECK(sink_parse_options("sink=unix:/a sink=unix:/b sink=unix:/c sink=unix:/d sink=unix:/e "
				 "sink=unix:/f sink=unix:/g sink=unix:/h sink=unix:/i",
				 &o, err) != 0 && strstr(err, "more than"),
	      "too many sinks");
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	return 0;
}

static void test_textdump(void)
{
	char topo[] = "/tmp/test_topo_XXXXXX", lfts[] = "/tmp/test_lfts_XXXXXX";
	close(mkstemp(topo));
	close(mkstemp(lfts));
	const char *good =
		"# Topology file\n"
		"vendid=0x0\ndevid=0x0\nsysimgguid=0x200000\nswitchguid=0x200000(200000)\n"
		"Switch\t8 \"S-0000000000200000\"\t\t# \"leaf \\\"one\\\"\" base port 0 lid 1 lmc 0\n"
		"[1]\t\"H-0000000000100000\"[1](100001) \t\t# \"c401-101 HCA-1\" lid 2 4xQDR\n"
		"[2]\t\"H-0000000000100003\"[1](100004) \t\t# \"c401-102 HCA-1\" lid 3 4xEDR\n"
		"\n"
		"vendid=0x0\ndevid=0x0\nsysimgguid=0x100000\ncaguid=0x100000\n"
		"Ca\t1 \"H-0000000000100000\"\t\t# \"c401-101 HCA-1\"\n"
		"[1](100001) \t\"S-0000000000200000\"[1]\t\t# lid 2 lmc 0 \"leaf\" lid 1 4xQDR\n"
		"\n"
		"sysimgguid=0x100003\ncaguid=0x100003\n"
		"Ca\t1 \"H-0000000000100003\"\t\t# \"c401-102 HCA-1\"\n"
		"[1](100004) \t\"S-0000000000200000\"[2]\t\t# lid 3 lmc 0 \"leaf\" lid 1 4xEDR\n";
	const char *lft =
		"Unicast lids [0x0-0x3] of switch Lid 1 guid 0x0000000000200000 (leaf):\n"
		"  Lid  Out   Destination\n       Port     Info \n"
		"0x0001 000 : (Switch portguid 0x0000000000200000: 'leaf')\n"
		"0x0002 001 : (Channel Adapter portguid 0x0000000000100001: 'c401-101 HCA-1')\n"
		"0x0003 002 : (Channel Adapter portguid 0x0000000000100004: 'c401-102 HCA-1')\n"
		"3 valid lids dumped \n";
	write_file(topo, good);
	write_file(lfts, lft);
	struct snap *s = NULL;
	char err[SNAP_ERR_LEN];
	int rc = snap_load_text(topo, lfts, &s, err);
	CHECK(rc == 0, "load ibnetdiscover + ibroute text%s%s", rc ? ": " : "", rc ? err : "");
	if (s) {
		int64_t sw = snap_find_node(s, 0x200000);
		CHECK(sw >= 0 && s->nodes[sw].lft_len == 4 && snap_lft_get(&s->nodes[sw], 3) == 2 &&
			      snap_lft_get(&s->nodes[sw], 0) == SNAP_LFT_NONE,
		      "LFT from the dump, unlisted LID 0 is no-path");
		CHECK(sw >= 0 && !strcmp(s->nodes[sw].desc, "leaf \\\"one\\\""), "description with quotes kept");
		int64_t h = snap_find_node(s, 0x100003);
		CHECK(h >= 0 && s->ports[s->nodes[h].port0 + 1].lid == 3 && s->ports[s->nodes[h].port0 + 1].espeed == 2,
		      "CA LID and EDR speed parsed");
		snap_free(s);
	}
	/* Hostile variants: each must fail with a line number, never crash. */
	static const char *bad[] = {
		"Switch 8 \"S-1\" # \"x\" base port 0 lid 1 lmc 0\n",                     /* no GUID line */
		"switchguid=0x1\nSwitch 999 \"S-1\"\n",                                   /* port count */
		"switchguid=0x1\nSwitch 8 \"S-1\"\n[1] \"nobody\"[1]\n",                  /* unknown peer */
		"switchguid=0x1\nSwitch 8 \"S-1\"\n[9] \"S-1\"[1]\n",                     /* port > nports */
		"[1] \"S-1\"[1]\n",                                                       /* port outside node */
		"switchguid=0x1\nSwitch 8 \"S-1\n",                                       /* unterminated quote */
		"caguid=0x2\nCa 1 \"H-2\"\n[1](2) \"H-2\"[1] # lid 70000 lmc 0 \"x\" 4xSDR\n", /* LID range */
		"garbage line\n",
	};
	int all = 1;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(topo, bad[i]);
		s = NULL;
		if (snap_load_text(topo, NULL, &s, err) == 0 || !strstr(err, ":")) {
			printf("# case %zu accepted or unnamed: %s\n", i, err);
			all = 0;
			snap_free(s);
		}
	}
	CHECK(all, "hostile topology files are rejected with file:line");
	/* A 10 KiB line. */
	FILE *f = fopen(topo, "w");
	for (int i = 0; i < 10000; i++)
		fputc('x', f);
	fputc('\n', f);
	fclose(f);
	CHECK(snap_load_text(topo, NULL, &s, err) != 0 && strstr(err, "longer than"), "overlong line is refused");
	/* LFT naming a port the switch lacks. */
	write_file(topo, good);
	write_file(lfts, "Unicast lids [0x0-0x3] of switch Lid 1 guid 0x0000000000200000 (leaf):\n0x0002 009 : x\n");
	CHECK(snap_load_text(topo, lfts, &s, err) != 0 && strstr(err, "8-port switch"), "LFT port out of range");
	write_file(lfts, "Unicast lids [0x0-0x3] of switch Lid 1 guid 0x0000000000999999 (x):\n");
	CHECK(snap_load_text(topo, lfts, &s, err) != 0 && strstr(err, "not a switch"), "LFT of an unknown switch");
	unlink(topo);
	unlink(lfts);
}

struct diff_log {
	int n, kinds[8];
	struct snap_diff_item last;
};

static int log_diff(void *ctx, const struct snap_diff_item *d)
{
	struct diff_log *l = ctx;
	l->n++;
	l->kinds[d->kind]++;
	l->last = *d;
	return 0;
}

static void test_diff(void)
{
	struct snap *a = small_fabric(), *b = small_fabric();
	struct diff_log l = { 0 };
	CHECK(snap_diff(a, b, SNAP_DIFF_STATE, log_diff, &l) == 0 && l.n == 0, "diff: a fabric equals itself");
	/* One LFT entry, one port state, one description: states count only
	 * with SNAP_DIFF_STATE, and every difference names its place. */
	uint32_t sw = (uint32_t)snap_find_node(b, 0x200001);
	*snap_lft_own(b, sw, 5, 1) = 3;
	b->ports[b->nodes[sw].port0 + 1].state = SNAP_PORT_INIT;
	uint32_t ca = (uint32_t)snap_find_node(b, 0x100010);
	b->nodes[ca].desc[0] = 'X';
	snprintf(b->engine, sizeof(b->engine), "ftree");
	memset(&l, 0, sizeof(l));
	uint64_t n = snap_diff(a, b, 0, log_diff, &l);
	CHECK(n == 2 && l.kinds[SNAP_DIFF_LFT] == 1 && l.kinds[SNAP_DIFF_NODE] == 1,
	      "diff: routes differ in one LFT entry and one node (%d LFT, %d node, %" PRIu64 " in all)",
	      l.kinds[SNAP_DIFF_LFT], l.kinds[SNAP_DIFF_NODE], n);
	memset(&l, 0, sizeof(l));
	n = snap_diff(a, b, SNAP_DIFF_STATE, log_diff, &l);
	CHECK(n == 4 && l.kinds[SNAP_DIFF_PORT] == 1 && l.kinds[SNAP_DIFF_ENGINE] == 1,
	      "diff with states: the port state and the engine count too (%" PRIu64 ")", n);
	CHECK(snap_diff(a, b, 0, NULL, NULL) == 2, "diff without a callback counts");
	snap_free(a);
	snap_free(b);
}

/* A fabric of nsw switches with len-byte tables, each row its own (NULL
 * on failure). */
static struct snap *cow_fabric(uint32_t nsw, uint32_t len)
{
	struct snap *a = snap_new();
	uint8_t *row = malloc(len);
	int ok = a && row;
	for (uint32_t i = 0; ok && i < nsw; i++) {
		int64_t n = snap_add_node(a, SNAP_NODE_SWITCH, 0x100 + i, 0x100 + i, 4, "sw", 2);
		for (uint32_t l = 0; l < len; l++)
			row[l] = (uint8_t)((l + i) % 5);
		ok = n >= 0 && !snap_set_lft(a, (uint32_t)n, row, len);
	}
	free(row);
	if (!ok) {
		snap_free(a);
		return NULL;
	}
	return a;
}

static int tables_equal(const struct snap *a, const struct snap *b)
{
	if (a->nnodes != b->nnodes || a->nlft != b->nlft)
		return 0;
	for (uint32_t i = 0; i < a->nnodes; i++)
		if (!tables_equal_node(&a->nodes[i], &b->nodes[i]))
			return 0;
	return 1;
}

static uint64_t pool_used(void)
{
	uint64_t used, spare;
	snap_lft_pool(&used, &spare);
	return used;
}

/* Copy-on-write tables (issues 22, 39): a copy shares every table until
 * one is written, the writer copies the one chunk it writes, the
 * original is untouched, either snapshot outlives the other (ASan sees a
 * use after free or a leak), and every chunk goes back to the pool. */
static void test_lft_cow(void)
{
	enum { NSW = 64, LEN = 4096 };
	uint64_t base = pool_used();
	struct snap *a = cow_fabric(NSW, LEN), *keep = a ? cow_fabric(NSW, LEN) : NULL;
	uint64_t made = pool_used();
	struct snap *b = keep ? snap_dup(a) : NULL;
	int shared = !!b;
	for (uint32_t i = 0; b && i < NSW; i++)
		shared &= b->nodes[i].lft == a->nodes[i].lft;
	CHECK(shared && snap_lft_held(b) == (uint64_t)NSW * LEN && pool_used() == made,
	      "a copy shares every table and copies no chunk (%llu bytes held)",
	      b ? (unsigned long long)snap_lft_held(b) : 0ull);
	CHECK(made - base == 2ull * NSW * LEN, "two fabrics' tables take their bytes in chunks (%llu)",
	      (unsigned long long)(made - base));
	uint8_t *t = b ? snap_lft_own(b, 3, 7, 1) : NULL;
	if (t)
		*t = (uint8_t)(*t + 1);
	int rest = b && t && b->nodes[3].lft != a->nodes[3].lft && b->nodes[3].lft->chunk[0] != a->nodes[3].lft->chunk[0];
	for (uint32_t k = 1; rest && k < LEN / SNAP_LFT_CHUNK; k++)
		rest = b->nodes[3].lft->chunk[k] == a->nodes[3].lft->chunk[k];
	CHECK(rest && tables_equal(a, keep) && snap_diff(a, b, 0, NULL, NULL) == 1 &&
		      b->nodes[4].lft == a->nodes[4].lft && pool_used() == made + SNAP_LFT_CHUNK,
	      "writing an entry copies its chunk alone; the original is untouched, the rest still shared");
	CHECK(b && snap_lft_own(b, 3, 7, 1) == t && snap_lft_own(b, 3, 64, 64) && pool_used() == made + SNAP_LFT_CHUNK,
	      "the copy's own chunk is written in place");
	CHECK(b && !snap_lft_own(b, 3, SNAP_LFT_CHUNK - 2, 4) && !snap_lft_own(b, 3, LEN - 1, 2) &&
		      !snap_lft_own(b, 0, LEN, 1) && !snap_lft_own(b, 3, 0, 0),
	      "a write across chunks, past the table or of nothing is refused");
	snap_free(a);
	CHECK(pool_used() == made, "the original freed, its replaced chunk goes back to the pool");
	if (t)
		*t = (uint8_t)(*t - 1);
	CHECK(b && tables_equal(b, keep), "the copy outlives the original, its tables intact");

	/* Shorter tables hold fewer chunks; the longer ones' go back. */
	uint8_t row[LEN / 4];
	memset(row, 2, sizeof(row));
	int ok = !!b;
	for (uint32_t i = 0; ok && i < NSW; i++)
		ok = !snap_set_lft(b, i, row, sizeof(row));
	CHECK(ok && snap_lft_held(b) == b->nlft && snap_lft_get(&b->nodes[NSW - 1], LEN / 4 - 1) == 2 &&
		      snap_lft_get(&b->nodes[NSW - 1], LEN / 4) == SNAP_LFT_NONE &&
		      pool_used() == made - (uint64_t)NSW * LEN + (uint64_t)NSW * LEN / 4,
	      "replaced tables: the copy holds its tables' bytes (%llu held, tables %llu)",
	      b ? (unsigned long long)snap_lft_held(b) : 0ull, b ? (unsigned long long)b->nlft : 0ull);
	snap_free(b);
	snap_free(keep);
	CHECK(pool_used() == base, "every chunk back in the pool (%llu bytes still used, %llu before)",
	      (unsigned long long)pool_used(), (unsigned long long)base);
}

/* The tables of a fabric replaced whole go back to the system, not to
 * the pool: one wholly free slab is kept, the others are unmapped. */
static void test_lft_release(void)
{
	enum { NSW = 128, LEN = 49152 }; /* 6.3 MB: four 2 MiB slabs */
	uint64_t used0, spare0, used1, spare1;
	snap_lft_pool(&used0, &spare0);
	struct snap *a = cow_fabric(NSW, LEN);
	snap_lft_pool(&used1, &spare1);
	CHECK(a && used1 - used0 == (uint64_t)NSW * LEN, "a fabric's tables in the pool (%llu bytes)",
	      (unsigned long long)(used1 - used0));
	snap_free(a);
	snap_lft_pool(&used1, &spare1);
	CHECK(used1 == used0 && spare1 <= spare0 + ((uint64_t)2 << 20),
	      "freed, its slabs are unmapped but one (%llu bytes spare, %llu before)", (unsigned long long)spare1,
	      (unsigned long long)spare0);
}

/* A decoded snapshot keeps nothing of the received bytes: its tables are
 * copied out, so the caller may write or free them at once. */
static void test_decode_copies(void)
{
	struct snap *s = small_fabric(), *d = NULL;
	uint8_t *buf = NULL, *bad;
	size_t len = 0;
	char err[SNAP_ERR_LEN];
	if (!s || snap_encode(s, &buf, &len, err)) {
		CHECK(0, "encode: %s", err);
		snap_free(s);
		return;
	}
	bad = malloc(len);
	memcpy(bad, buf, len);
	bad[len - 1] ^= 1;
	CHECK(snap_decode(bad, len, &d, err) && !d, "a damaged buffer is refused");
	free(bad);
	CHECK(!snap_decode(buf, len, &d, err) && d, "decoded");
	memset(buf, 0xA5, len);
	free(buf);
	CHECK(d && tables_equal(d, s) && !snap_validate(d, err), "the received bytes overwritten and freed, its tables intact");
	snap_free(d);
	snap_free(s);
}

/* The reserve maps and touches the slabs a decode will fill; what it
 * left unused, lft_trim() gives back but the one slab the pool keeps. */
static void test_lft_reserve(void)
{
	uint64_t used0, spare0, used1, spare1;
	lft_trim();
	snap_lft_pool(&used0, &spare0);
	uint64_t want = 5 * (((uint64_t)2 << 20) / SNAP_LFT_CHUNK);
	CHECK(!lft_reserve(want), "5 slabs' chunks reserved");
	snap_lft_pool(&used1, &spare1);
	CHECK(used1 == used0 && spare1 >= spare0 + (want - 200) * SNAP_LFT_CHUNK,
	      "they are spare (%llu bytes, %llu before)", (unsigned long long)spare1, (unsigned long long)spare0);
	CHECK(!lft_reserve(want / 2), "a smaller reserve maps nothing more");
	uint64_t spare2;
	snap_lft_pool(&used1, &spare2);
	CHECK(spare2 == spare1, "the pool is unchanged (%llu, %llu)", (unsigned long long)spare2,
	      (unsigned long long)spare1);
	lft_trim();
	snap_lft_pool(&used1, &spare1);
	CHECK(used1 == used0 && spare1 <= spare0 + ((uint64_t)2 << 20), "trimmed: %llu bytes spare, %llu before",
	      (unsigned long long)spare1, (unsigned long long)spare0);
}

/* CRC-32C one bit at a time, the definition the fast paths must match. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

/* The checksum is computed by the CPU's instruction where it has one
 * (issue 22): every length, alignment and chaining must equal the
 * definition, or every snapshot written before would be refused. */
static void test_crc32c(void)
{
	CHECK(snap_crc32c(0, "123456789", 9) == 0xE3069283u, "CRC-32C of \"123456789\" is e3069283");
	uint8_t buf[300];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	int bad = 0;
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; off + len <= sizeof(buf); len++)
			bad += snap_crc32c(0, buf + off, len) != crc_bitwise(0, buf + off, len);
	for (size_t cut = 0; cut <= sizeof(buf); cut++)
		bad += snap_crc32c(snap_crc32c(0, buf, cut), buf + cut, sizeof(buf) - cut) !=
		       crc_bitwise(0, buf, sizeof(buf));
	CHECK(!bad, "CRC-32C equals the bitwise definition at 9 alignments, 0-300 bytes, and chained (%d differ)",
	      bad);
}

/* The received bytes kept for the next delta (snap_bytes_keep): taken
 * back when they hold the bytes asked for, once; replaced by the next
 * kept (the old freed: the sanitised build reports a leak otherwise);
 * never a full snapshot's size. */
static void test_bytes_kept(void)
{
	uint8_t *a = snap_bytes_realloc(NULL, (size_t)3 << 20);
	memset(a, 7, (size_t)3 << 20);
	snap_bytes_keep(a);
	CHECK(snap_bytes_touch_kept() >= ((uint64_t)3 << 20), "the kept buffer is read one byte a page");
	CHECK(snap_bytes_take((size_t)4 << 20) == NULL, "a delta larger than it: not given");
	uint8_t *t = snap_bytes_take((size_t)1 << 20);
	CHECK(t == a && t[(3 << 20) - 1] == 7, "a smaller one: the same buffer, bytes and all");
	CHECK(snap_bytes_take(1) == NULL && snap_bytes_touch_kept() == 0, "taken once: nothing kept");
	snap_bytes_keep(t);
	uint8_t *b = malloc(4096);
	snap_bytes_keep(b);
	CHECK(snap_bytes_take(4096) == b, "the last kept replaces the one before");
	free(b);
	uint8_t *big = snap_bytes_realloc(NULL, SNAP_BYTES_KEEP_MAX + 1);
	snap_bytes_keep(big);
	CHECK(snap_bytes_take(1) == NULL, "a full snapshot's bytes go back, not kept");
	snap_bytes_keep(NULL);
	CHECK(snap_bytes_take(1) == NULL, "NULL kept is nothing");
}

/* LFT entries are checked 64 at a time (issue 22): a bad entry anywhere,
 * in a whole chunk or the tail, is still found and named exactly. */
static void test_lft_check(void)
{
	enum { LEN = 1000 };
	uint8_t row[LEN];
	int bad = 0;
	const uint32_t at[] = { 0, 1, 63, 64, 500, 959, 960, 999 };
	for (unsigned nports = 1; nports < 255; nports += 36) {
		for (uint32_t l = 0; l < LEN; l++)
			row[l] = l % 3 ? (uint8_t)(l % (nports + 1)) : SNAP_LFT_NONE;
		struct snap *s = snap_new();
		int64_t n = s ? snap_add_node(s, SNAP_NODE_SWITCH, 0x100, 0x100, (uint8_t)nports, "sw", 2) : -1;
		char err[SNAP_ERR_LEN];
		struct snap_port *p0 = n < 0 ? NULL : snap_port_of(s, (uint32_t)n, 0);
		if (p0) {
			p0->present = 1;
			p0->lid = 1;
			p0->guid = 0x100;
			p0->state = SNAP_PORT_ACTIVE;
		}
		if (!p0 || snap_set_lft(s, (uint32_t)n, row, LEN) || snap_validate(s, err)) {
			bad++;
			snap_free(s);
			continue;
		}
		for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
			uint8_t *e = snap_lft_own(s, (uint32_t)n, at[k], 1);
			uint8_t was = *e;
			char want[64];
			*e = (uint8_t)(nports + 1 + k % 2 * (253 - nports)); /* the first bad port, or 254 */
			snprintf(want, sizeof(want), "LID %u to port %u,", at[k], *e);
			bad += !snap_validate(s, err) || !strstr(err, want);
			*e = was;
		}
		bad += snap_validate(s, err) != 0;
		snap_free(s);
	}
	CHECK(!bad, "an LFT entry beyond the switch's ports is refused at every position, every port count (%d wrong)",
	      bad);
}

int main(void)
{
	test_lft_check();
	test_bytes_kept();
	test_crc32c();
	test_lft_cow();
	test_decode_copies();
	test_lft_reserve();
	test_lft_release();
	test_diff();
	test_roundtrip();
	test_truncated();
	test_bitflips();
	test_oversized();
	test_structure();
	test_sink_options();
	test_textdump();
	return TAP_DONE();
}
