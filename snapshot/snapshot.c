/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * snapshot.c - fabric snapshot model, binary codec and validation.
 *
 * Wire format, all integers little-endian:
 *
 *   header (SNAP_HEADER_LEN = 64 bytes)
 *     0  magic "TOPOSNAP"        8
 *     8  u32 version             (SNAP_VERSION)
 *    12  u32 header length       (64; lets a later version grow the header)
 *    16  u64 generation
 *    24  u64 payload length
 *    32  u32 CRC-32C of the payload
 *    36  u32 CRC-32C of the header with this field zeroed
 *    40  u64 SM port GUID
 *    48  u64 sweep counter
 *    56  u64 timestamp (Unix microseconds)
 *
 *   payload
 *     u32 node count, u32 flags (0)
 *     u8 engine length, engine bytes
 *     per node:
 *       u8 type, u8 nports, u64 node GUID, u64 system image GUID,
 *       u8 description length (<= 64), description bytes
 *       per port 0..nports:
 *         u8 present; if present:
 *           u64 port GUID, u16 LID, u8 LMC, u8 state, u8 width, u8 speed,
 *           u8 ext speed, u32 peer node index (0xFFFFFFFF none), u8 peer port
 *       if a switch: u32 LFT length, LFT bytes
 *
 * The decoder trusts nothing: every count is checked against the bytes that
 * remain before anything is allocated, and snap_validate() runs before the
 * snapshot is handed out.
 */
#include "snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lft_impl.h"
#include "util.h"
#include "wire.h"

static int fail(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char *err, const char *fmt, ...)
{
	va_list ap;
	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err, SNAP_ERR_LEN, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- CRC-32C (Castagnoli) ---------------------------------------------- */

/* Slicing-by-8 everywhere, the SSE 4.2 instruction where the CPU has it:
 * every snapshot is checked whole on decode and summed on encode, and at
 * k=56 (185 MB) the tables take ~100 ms where the instruction takes ~25. */
static uint32_t crc_tab[8][256];
static int crc_hw_ok;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xFF];
#if defined(__x86_64__) && defined(__GNUC__) && !defined(SNAP_CRC_NO_HW)
	__builtin_cpu_init();
	crc_hw_ok = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_soft(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		crc = crc_tab[7][lo & 0xFF] ^ crc_tab[6][(lo >> 8) & 0xFF] ^
		      crc_tab[5][(lo >> 16) & 0xFF] ^ crc_tab[4][lo >> 24] ^ crc_tab[3][p[4]] ^
		      crc_tab[2][p[5]] ^ crc_tab[1][p[6]] ^ crc_tab[0][p[7]];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xFF];
	return crc;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(SNAP_CRC_NO_HW)
/* x86 is little-endian: a loaded word's low byte is the first one, the
 * order in which the instruction (like the tables) consumes them. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#else
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	return crc_soft(crc, p, len);
}
#endif

uint32_t snap_crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* The table is filled once; a racing second fill writes the same values,
	 * but pthread_once keeps the sanitizers and reviewers calm. */
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, crc_init);
	return ~(crc_hw_ok ? crc_hw(~crc, buf, len) : crc_soft(~crc, buf, len));
}

/* ---- model -------------------------------------------------------------- */

struct snap *snap_new(void)
{
	return calloc(1, sizeof(struct snap));
}

/* Capacities are not stored in the model: arrays grow to the next power of
 * two, so the capacity is derived from the count. */
static size_t cap_for(size_t n)
{
	size_t c = 16;
	while (c < n)
		c <<= 1;
	return c;
}

static int grow(void **arr, size_t elem, size_t have, size_t need)
{
	if (need <= cap_for(have) && have)
		return 0;
	size_t c = cap_for(need);
	if (c > SIZE_MAX / elem)
		return -1;
	void *p = realloc(*arr, c * elem);
	if (!p)
		return -1;
	*arr = p;
	return 0;
}

void snap_free(struct snap *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->nnodes; i++)
		lft_unref(s->nodes[i].lft);
	free(s->nodes);
	free(s->ports);
	free(s);
}

struct snap *snap_dup(const struct snap *s)
{
	struct snap *d = snap_new();
	if (!d)
		return NULL;
	*d = *s;
	d->nnodes = 0;
	d->nodes = NULL;
	d->ports = NULL;
	/* Capacities follow cap_for(), as if built, so a copy can grow. */
	d->nodes = util_alloc_big(cap_for(s->nnodes) * sizeof(*d->nodes), s->nnodes * sizeof(*d->nodes));
	d->ports = util_alloc_big(cap_for(s->nports) * sizeof(*d->ports), s->nports * sizeof(*d->ports));
	if (!d->nodes || !d->ports) {
		snap_free(d);
		return NULL;
	}
	if (s->nnodes)
		memcpy(d->nodes, s->nodes, s->nnodes * sizeof(*d->nodes));
	if (s->nports)
		memcpy(d->ports, s->ports, s->nports * sizeof(*d->ports));
	for (uint32_t i = 0; i < s->nnodes; i++)
		if (s->nodes[i].lft)
			lft_ref(s->nodes[i].lft);
	d->nnodes = s->nnodes;
	return d;
}

int64_t snap_add_node(struct snap *s, uint8_t type, uint64_t guid, uint64_t sysimg_guid,
		      uint8_t nports, const char *desc, size_t desc_len)
{
	if (s->nnodes >= SNAP_MAX_NODES)
		return -1;
	if (grow((void **)&s->nodes, sizeof(*s->nodes), s->nnodes, (size_t)s->nnodes + 1) ||
	    grow((void **)&s->ports, sizeof(*s->ports), s->nports, (size_t)s->nports + nports + 1))
		return -1;
	struct snap_node *n = &s->nodes[s->nnodes];
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->guid = guid;
	n->sysimg_guid = sysimg_guid;
	n->nports = nports;
	n->port0 = s->nports;
	/* A NodeDescription is 64 raw bytes, often not NUL-terminated. */
	if (desc) {
		size_t l = strnlen(desc, desc_len < SNAP_DESC_LEN ? desc_len : SNAP_DESC_LEN);
		memcpy(n->desc, desc, l);
		n->desc[l] = '\0';
	}
	for (unsigned p = 0; p <= nports; p++) {
		struct snap_port *pt = &s->ports[s->nports + p];
		memset(pt, 0, sizeof(*pt));
		pt->peer_node = SNAP_NONE;
	}
	s->nports += (uint32_t)nports + 1;
	return s->nnodes++;
}

struct snap_port *snap_port_of(struct snap *s, uint32_t node, unsigned port)
{
	if (node >= s->nnodes || port > s->nodes[node].nports)
		return NULL;
	return &s->ports[s->nodes[node].port0 + port];
}

int snap_link(struct snap *s, uint32_t a, unsigned pa, uint32_t b, unsigned pb)
{
	struct snap_port *x = snap_port_of(s, a, pa), *y = snap_port_of(s, b, pb);
	if (!x || !y || pa == 0 || pb == 0)
		return -1;
	x->peer_node = b;
	x->peer_port = (uint8_t)pb;
	y->peer_node = a;
	y->peer_port = (uint8_t)pa;
	return 0;
}

int snap_set_lft(struct snap *s, uint32_t node, const uint8_t *lft, uint32_t len)
{
	if (node >= s->nnodes || s->nodes[node].type != SNAP_NODE_SWITCH || len > SNAP_MAX_LID + 1)
		return -1;
	struct snap_node *n = &s->nodes[node];
	struct snap_lft *t = NULL;
	if (len && !(t = lft_new_from(lft, len)))
		return -1;
	lft_unref(n->lft);
	s->nlft += (uint64_t)len - n->lft_len;
	n->lft = t;
	n->lft_len = len;
	return 0;
}

void snap_count_live(const struct snap *s, struct snap_live *out)
{
	out->cas = out->switches = 0;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		int up = 0;
		for (unsigned p = 1; p <= n->nports && !up; p++) {
			const struct snap_port *pt = &s->ports[n->port0 + p];
			up = pt->present && pt->peer_node != SNAP_NONE && pt->state >= SNAP_PORT_INIT;
		}
		out->cas += up && n->type == SNAP_NODE_CA;
		out->switches += up && n->type == SNAP_NODE_SWITCH;
	}
}

int snap_check_hosts(const struct snap *s, char err[SNAP_ERR_LEN])
{
	struct snap_live l;
	snap_count_live(s, &l);
	if (l.cas)
		return 0;
	uint32_t cas = 0, sw = 0;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		cas += s->nodes[i].type == SNAP_NODE_CA;
		sw += s->nodes[i].type == SNAP_NODE_SWITCH;
	}
	snprintf(err, SNAP_ERR_LEN, "an empty fabric: no host's HCA has a link up (%u nodes: %u CAs, %u switches); "
		 "never served", s->nnodes, cas, sw);
	return -1;
}

int snap_port_equal(const struct snap_port *u, const struct snap_port *v)
{
	if (u->present != v->present)
		return 0;
	return !u->present ||
	       (u->guid == v->guid && u->lid == v->lid && u->lmc == v->lmc && u->state == v->state &&
		u->width == v->width && u->speed == v->speed && u->espeed == v->espeed &&
		u->peer_node == v->peer_node && u->peer_port == v->peer_port);
}

const char *snap_node_type_str(uint8_t type)
{
	switch (type) {
	case SNAP_NODE_CA: return "ca";
	case SNAP_NODE_SWITCH: return "switch";
	case SNAP_NODE_ROUTER: return "router";
	default: return "unknown";
	}
}

int64_t snap_find_node(const struct snap *s, uint64_t guid)
{
	uint32_t lo = 0, hi = s->nnodes;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->nodes[mid].guid < guid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nnodes && s->nodes[lo].guid == guid ? (int64_t)lo : -1;
}

uint32_t snap_max_lid(const struct snap *s)
{
	uint32_t max = 0;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *nd = &s->nodes[i];
		for (unsigned p = 0; p <= nd->nports; p++) {
			uint32_t top = snap_port_top_lid(&s->ports[nd->port0 + p]);
			if (top > max && snap_is_endport(nd->type, p))
				max = top;
		}
	}
	return max > SNAP_MAX_LID ? SNAP_MAX_LID : max;
}

uint32_t snap_count_links(const struct snap *s)
{
	uint32_t links = 0;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		for (unsigned p = 1; p <= n->nports; p++) {
			const struct snap_port *pt = &s->ports[n->port0 + p];
			if (pt->peer_node != SNAP_NONE &&
			    (pt->peer_node > i || (pt->peer_node == i && pt->peer_port > p)))
				links++;
		}
	}
	return links;
}

int snap_find_lid(const struct snap *s, uint16_t lid, uint32_t *node, unsigned *port)
{
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *n = &s->nodes[i];
		for (unsigned p = 0; p <= n->nports; p++) {
			const struct snap_port *pt = &s->ports[n->port0 + p];
			if (!pt->present || !pt->lid || !snap_is_endport(n->type, p))
				continue;
			if (lid >= pt->lid && lid < pt->lid + (1u << pt->lmc)) {
				*node = i;
				*port = p;
				return 0;
			}
		}
	}
	return -1;
}

void snap_escape(const char *desc, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	if (!outlen)
		return;
	for (const unsigned char *p = (const unsigned char *)desc; *p; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') {
			if (o + 1 >= outlen)
				break;
			out[o++] = (char)*p;
		} else {
			if (o + 4 >= outlen)
				break;
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = '\0';
}

/* ---- canonical order ------------------------------------------------------ */

static const struct snap *sort_ctx;

static int cmp_node_idx(const void *a, const void *b)
{
	uint64_t x = sort_ctx->nodes[*(const uint32_t *)a].guid;
	uint64_t y = sort_ctx->nodes[*(const uint32_t *)b].guid;
	return x < y ? -1 : x > y;
}

static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

int snap_canonicalize(struct snap *s)
{
	uint32_t n = s->nnodes;
	uint32_t *order = malloc((size_t)(n ? n : 1) * sizeof(*order));
	uint32_t *rank = malloc((size_t)(n ? n : 1) * sizeof(*rank));
	struct snap_node *nodes = malloc((size_t)(n ? n : 1) * sizeof(*nodes));
	struct snap_port *ports = malloc((size_t)(s->nports ? s->nports : 1) * sizeof(*ports));
	if (!order || !rank || !nodes || !ports) {
		free(order), free(rank), free(nodes), free(ports);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	/* qsort has no context argument in C11; the lock keeps two threads that
	 * canonicalize at once (plugin and tests) from sharing sort_ctx. */
	pthread_mutex_lock(&sort_lock);
	sort_ctx = s;
	qsort(order, n, sizeof(*order), cmp_node_idx);
	sort_ctx = NULL;
	pthread_mutex_unlock(&sort_lock);
	for (uint32_t i = 0; i < n; i++)
		rank[order[i]] = i;

	uint32_t np = 0;
	uint64_t nl = 0;
	uint32_t max_lid = 0;
	/* Tables stay where they are: a node's pointer moves with it. */
	for (uint32_t i = 0; i < n; i++) {
		const struct snap_node *old = &s->nodes[order[i]];
		struct snap_node *nw = &nodes[i];
		*nw = *old;
		nw->port0 = np;
		for (unsigned p = 0; p <= old->nports; p++) {
			struct snap_port pt = s->ports[old->port0 + p];
			if (pt.peer_node != SNAP_NONE && pt.peer_node < n)
				pt.peer_node = rank[pt.peer_node];
			else {
				pt.peer_node = SNAP_NONE;
				pt.peer_port = 0;
			}
			if (!pt.present) {
				memset(&pt, 0, sizeof(pt));
				pt.peer_node = SNAP_NONE;
			} else if (!snap_is_endport(old->type, p)) {
				/* External switch ports carry no LID of their own;
				 * producers disagree on what to put there. */
				pt.lid = 0;
				pt.lmc = 0;
			}
			if (pt.present && pt.lid) {
				uint32_t top = (uint32_t)pt.lid + (1u << (pt.lmc & 7)) - 1;
				if (top > max_lid)
					max_lid = top;
			}
			ports[np++] = pt;
		}
		if (old->type == SNAP_NODE_SWITCH && old->lft_len) {
			nl += old->lft_len;
		} else {
			lft_unref(nw->lft);
			nw->lft = NULL;
			nw->lft_len = 0;
		}
	}
	free(order);
	free(rank);
	free(s->nodes);
	free(s->ports);
	s->nodes = nodes;
	s->ports = ports;
	s->nports = np;
	s->nlft = nl;
	s->max_lid = max_lid;
	return 0;
}

int snap_normalize_lfts(struct snap *s)
{
	uint32_t len = s->max_lid ? s->max_lid + 1 : 0;
	uint8_t *t = malloc(len ? len : 1);
	if (!t)
		return -1;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		struct snap_node *n = &s->nodes[i];
		if (n->type != SNAP_NODE_SWITCH)
			continue;
		/* LID 0 is reserved: whatever a switch holds there routes nothing. */
		if (n->lft_len == len && (!len || snap_lft_get(n, 0) == SNAP_LFT_NONE))
			continue;
		snap_lft_read(n, 0, len, t);
		if (len)
			t[0] = SNAP_LFT_NONE;
		if (snap_set_lft(s, i, t, len)) {
			free(t);
			return -1;
		}
	}
	free(t);
	return 0;
}

/* ---- validation ----------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The node table: types, GUID order, port slices laid end to end, LFT
 * bounds. Everything after indexes through it. */
static int validate_nodes(const struct snap *s, char err[SNAP_ERR_LEN])
{
	uint32_t n = s->nnodes;
	if (n > SNAP_MAX_NODES)
		return fail(err, "%u nodes exceeds the limit of %u", n, SNAP_MAX_NODES);
	uint32_t expect_ports = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct snap_node *nd = &s->nodes[i];
		if (nd->type < SNAP_NODE_CA || nd->type > SNAP_NODE_ROUTER)
			return fail(err, "node %u (guid 0x%016llx): unknown node type %u", i,
				    (unsigned long long)nd->guid, nd->type);
		if (!nd->guid)
			return fail(err, "node %u: node GUID is zero", i);
		if (i && s->nodes[i - 1].guid >= nd->guid)
			return fail(err, "node %u (guid 0x%016llx): nodes not in GUID order or GUID duplicated",
				    i, (unsigned long long)nd->guid);
		if (nd->port0 != expect_ports || (uint64_t)nd->port0 + nd->nports >= s->nports)
			return fail(err, "node 0x%016llx: port table out of range", (unsigned long long)nd->guid);
		expect_ports += (uint32_t)nd->nports + 1;
		if (nd->type == SNAP_NODE_SWITCH) {
			if (!s->ports[nd->port0].present)
				return fail(err, "switch 0x%016llx: port 0 missing", (unsigned long long)nd->guid);
			if (nd->lft_len > SNAP_MAX_LID + 1 || !nd->lft != !nd->lft_len ||
			    (nd->lft && nd->lft->nchunks != (nd->lft_len + SNAP_LFT_CHUNK - 1) / SNAP_LFT_CHUNK))
				return fail(err, "switch 0x%016llx: LFT out of range", (unsigned long long)nd->guid);
		} else if (nd->lft_len) {
			return fail(err, "node 0x%016llx: a %s has no LFT", (unsigned long long)nd->guid,
				    snap_node_type_str(nd->type));
		}
	}
	if (expect_ports != s->nports)
		return fail(err, "port table has %u slots, nodes account for %u", s->nports, expect_ports);
	return 0;
}

/* End-port LIDs and GUIDs gathered for the uniqueness checks. */
struct endport_ids {
	uint64_t *lids, *guids;
	size_t nlids, nguids;
};

/* A link must name a real port that links back to exactly this one. */
static int validate_link(const struct snap *s, uint32_t i, unsigned p, char err[SNAP_ERR_LEN])
{
	const struct snap_node *nd = &s->nodes[i];
	const struct snap_port *pt = &s->ports[nd->port0 + p];
	uint32_t n = s->nnodes;
	if (p == 0)
		return fail(err, "switch 0x%016llx: port 0 cannot have a link", (unsigned long long)nd->guid);
	if (pt->peer_node >= n)
		return fail(err, "node 0x%016llx port %u: link to node index %u of %u",
			    (unsigned long long)nd->guid, p, pt->peer_node, n);
	const struct snap_node *pn = &s->nodes[pt->peer_node];
	if (pt->peer_port == 0 || pt->peer_port > pn->nports)
		return fail(err, "node 0x%016llx port %u: link to port %u of 0x%016llx, which has %u ports",
			    (unsigned long long)nd->guid, p, pt->peer_port, (unsigned long long)pn->guid,
			    pn->nports);
	const struct snap_port *back = &s->ports[pn->port0 + pt->peer_port];
	if (!back->present || back->peer_node != i || back->peer_port != p)
		return fail(err, "link 0x%016llx/%u -> 0x%016llx/%u is not symmetric",
			    (unsigned long long)nd->guid, p, (unsigned long long)pn->guid, pt->peer_port);
	if (pt->peer_node == i && pt->peer_port == p)
		return fail(err, "node 0x%016llx port %u: linked to itself", (unsigned long long)nd->guid, p);
	return 0;
}

/* One port of node i: presence, state, its end-port LID and GUID, its link. */
static int validate_port(const struct snap *s, uint32_t i, unsigned p, struct endport_ids *ids,
			 char err[SNAP_ERR_LEN])
{
	const struct snap_node *nd = &s->nodes[i];
	const struct snap_port *pt = &s->ports[nd->port0 + p];
	if (!pt->present) {
		if (pt->peer_node != SNAP_NONE)
			return fail(err, "node 0x%016llx port %u: absent port has a link",
				    (unsigned long long)nd->guid, p);
		return 0;
	}
	if (nd->type != SNAP_NODE_SWITCH && p == 0)
		return fail(err, "node 0x%016llx: a %s has no port 0", (unsigned long long)nd->guid,
			    snap_node_type_str(nd->type));
	if (pt->state > SNAP_PORT_ACTIVE || pt->lmc > 7)
		return fail(err, "node 0x%016llx port %u: bad state %u or LMC %u",
			    (unsigned long long)nd->guid, p, pt->state, pt->lmc);
	if (snap_is_endport(nd->type, p)) {
		if (pt->lid) {
			uint32_t top = (uint32_t)pt->lid + (1u << pt->lmc) - 1;
			if (top > SNAP_MAX_LID)
				return fail(err, "node 0x%016llx port %u: LID %u LMC %u out of range",
					    (unsigned long long)nd->guid, p, pt->lid, pt->lmc);
			ids->lids[ids->nlids++] = pt->lid;
		}
		if (pt->guid)
			ids->guids[ids->nguids++] = pt->guid;
	}
	if (pt->peer_node == SNAP_NONE)
		return 0;
	return validate_link(s, i, p, err);
}

/* Every LFT entry names a port the switch has (or none). With e + 1 taken
 * modulo 256, SNAP_LFT_NONE becomes 0 and port p becomes p + 1, so 64
 * entries are checked with four 16-byte vector compares (GCC's vector
 * extension, any target) before a bad one is looked for byte by byte:
 * 187 MB at k=56, once per full snapshot. */
typedef uint8_t lft_vec __attribute__((vector_size(16)));
typedef int8_t lft_mask __attribute__((vector_size(16)));

static int validate_lft(const struct snap *s, const struct snap_node *nd, char err[SNAP_ERR_LEN])
{
	if (nd->type != SNAP_NODE_SWITCH || !nd->lft_len || nd->nports >= SNAP_LFT_NONE)
		return 0;
	const uint8_t lim = (uint8_t)(nd->nports + 1);
	uint32_t l = 0, run;
	/* Chunk by chunk; a chunk holds whole 64-entry rows. */
	for (const uint8_t *c; (c = snap_lft_span(nd, l, &run)); l += run) {
		uint32_t k = 0;
		for (; k + 64 <= run; k += 64) {
			lft_mask bad = { 0 };
			for (uint32_t j = 0; j < 64; j += 16) {
				lft_vec v;
				memcpy(&v, c + k + j, sizeof(v));
				bad |= (v + 1) > lim;
			}
			uint64_t w[2];
			memcpy(w, &bad, sizeof(w));
			if (w[0] | w[1])
				break;
		}
		for (; k < run; k++)
			if (c[k] != SNAP_LFT_NONE && c[k] > nd->nports)
				return fail(err, "switch 0x%016llx: LFT sends LID %u to port %u, but it has %u ports",
					    (unsigned long long)nd->guid, l + k, c[k], nd->nports);
	}
	return 0;
}

/* Sorts v; returns the index of the first value seen twice, or 0 if none. */
static size_t first_duplicate(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 1; i < n; i++)
		if (v[i] == v[i - 1])
			return i;
	return 0;
}

/* No LID and no GUID twice in ids (sorted meanwhile). */
static int ids_distinct(struct endport_ids *ids, char err[SNAP_ERR_LEN])
{
	size_t dup;
	if ((dup = first_duplicate(ids->lids, ids->nlids)))
		return fail(err, "LID %llu is assigned to two ports", (unsigned long long)ids->lids[dup]);
	if ((dup = first_duplicate(ids->guids, ids->nguids)))
		return fail(err, "port GUID 0x%016llx appears twice", (unsigned long long)ids->guids[dup]);
	return 0;
}

static int validate(const struct snap *s, int lfts, char err[SNAP_ERR_LEN])
{
	if (validate_nodes(s, err))
		return -1;
	/* Per-port checks; collect end-port LIDs and GUIDs for uniqueness. */
	struct endport_ids ids = { 0 };
	ids.lids = malloc(((size_t)s->nports + 1) * sizeof(*ids.lids));
	ids.guids = malloc(((size_t)s->nports + 1) * sizeof(*ids.guids));
	int rc = -1;
	if (!ids.lids || !ids.guids) {
		fail(err, "out of memory validating %u ports", s->nports);
		goto out;
	}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *nd = &s->nodes[i];
		for (unsigned p = 0; p <= nd->nports; p++)
			if (validate_port(s, i, p, &ids, err))
				goto out;
		if (lfts && validate_lft(s, nd, err))
			goto out;
	}
	if (ids_distinct(&ids, err))
		goto out;
	rc = 0;
out:
	free(ids.lids);
	free(ids.guids);
	return rc;
}

int snap_validate(const struct snap *s, char err[SNAP_ERR_LEN])
{
	return validate(s, 1, err);
}

int snap_validate_records(const struct snap *s, char err[SNAP_ERR_LEN])
{
	return validate(s, 0, err);
}

/* The link of port (i, p) of s, when it has one. */
static int validate_link_of(const struct snap *s, uint32_t i, unsigned p, char err[SNAP_ERR_LEN])
{
	const struct snap_port *pt = &s->ports[s->nodes[i].port0 + p];
	return pt->present && pt->peer_node != SNAP_NONE ? validate_link(s, i, p, err) : 0;
}

/* Each value of v (sorted, distinct, n of them) must be held by one end
 * port of s at most: guid 0 looks at LIDs, 1 at GUIDs. */
static int unique_among_endports(const struct snap *s, const uint64_t *v, size_t n, int guid,
				 char err[SNAP_ERR_LEN])
{
	if (!n)
		return 0;
	uint8_t *seen = calloc(n, 1);
	if (!seen)
		return fail(err, "out of memory validating %zu ports", n);
	int rc = 0;
	for (uint32_t i = 0; i < s->nnodes && !rc; i++) {
		const struct snap_node *nd = &s->nodes[i];
		for (unsigned p = 0; p <= nd->nports; p++) {
			const struct snap_port *pt = &s->ports[nd->port0 + p];
			uint64_t x = guid ? pt->guid : pt->lid;
			if (!pt->present || !x || !snap_is_endport(nd->type, p))
				continue;
			const uint64_t *f = bsearch(&x, v, n, sizeof(*v), cmp_u64);
			if (f && seen[f - v]++) {
				rc = guid ? fail(err, "port GUID 0x%016llx appears twice", (unsigned long long)x)
					  : fail(err, "LID %llu is assigned to two ports", (unsigned long long)x);
				break;
			}
		}
	}
	free(seen);
	return rc;
}

int snap_validate_ports(const struct snap *s, const struct snap *base, const uint64_t *key, uint32_t n,
			char err[SNAP_ERR_LEN])
{
	/* Each listed port adds one LID and one GUID at most. */
	struct endport_ids ids = { 0 };
	ids.lids = malloc(((size_t)n + 1) * sizeof(*ids.lids));
	ids.guids = malloc(((size_t)n + 1) * sizeof(*ids.guids));
	int rc = -1;
	if (!ids.lids || !ids.guids) {
		fail(err, "out of memory validating %u ports", n);
		goto out;
	}
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (uint32_t)(key[k] >> 8);
		unsigned p = (unsigned)(key[k] & 0xff);
		const struct snap_node *nd = &s->nodes[i];
		const struct snap_port *pt = &s->ports[nd->port0 + p], *was = &base->ports[nd->port0 + p];
		if (nd->type == SNAP_NODE_SWITCH && p == 0 && !pt->present) {
			fail(err, "switch 0x%016llx: port 0 missing", (unsigned long long)nd->guid);
			goto out;
		}
		size_t nl = ids.nlids, ng = ids.nguids;
		if (validate_port(s, i, p, &ids, err))
			goto out;
		/* An end port that keeps its base's LID or GUID keeps it unique. */
		int same = was->present && snap_is_endport(nd->type, p);
		if (same && ids.nlids > nl && was->lid == pt->lid)
			ids.nlids = nl;
		if (same && ids.nguids > ng && was->guid == pt->guid)
			ids.nguids = ng;
		/* The port it linked to in the base must not still link here. */
		if (was->present && was->peer_node != SNAP_NONE &&
		    (was->peer_node != pt->peer_node || was->peer_port != pt->peer_port || !pt->present) &&
		    validate_link_of(s, was->peer_node, was->peer_port, err))
			goto out;
	}
	if (ids_distinct(&ids, err))
		goto out;
	rc = unique_among_endports(s, ids.lids, ids.nlids, 0, err) ||
	     unique_among_endports(s, ids.guids, ids.nguids, 1, err) ? -1 : 0;
out:
	free(ids.lids);
	free(ids.guids);
	return rc;
}

/* ---- encoding ------------------------------------------------------------- */

#define NODE_FIXED 19   /* type, nports, two GUIDs, desc length */
#define PORT_FIXED 21   /* present + the port record */

int snap_encode(const struct snap *s, uint8_t **out, size_t *outlen, char err[SNAP_ERR_LEN])
{
	size_t elen = strnlen(s->engine, SNAP_ENGINE_LEN);
	uint64_t size = SNAP_HEADER_LEN + 8 + 1 + elen;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *nd = &s->nodes[i];
		size += NODE_FIXED + strnlen(nd->desc, SNAP_DESC_LEN);
		for (unsigned p = 0; p <= nd->nports; p++)
			size += s->ports[nd->port0 + p].present ? PORT_FIXED : 1;
		if (nd->type == SNAP_NODE_SWITCH)
			size += 4 + nd->lft_len;
	}
	if (size - SNAP_HEADER_LEN > SNAP_MAX_PAYLOAD)
		return fail(err, "snapshot of %llu bytes exceeds the limit", (unsigned long long)size);
	uint8_t *buf = malloc(size), *p = buf;
	if (!buf)
		return fail(err, "out of memory encoding %llu bytes", (unsigned long long)size);

	p += SNAP_HEADER_LEN;
	put32(&p, s->nnodes);
	put32(&p, 0);
	put8(&p, (uint8_t)elen);
	memcpy(p, s->engine, elen);
	p += elen;
	for (uint32_t i = 0; i < s->nnodes; i++) {
		const struct snap_node *nd = &s->nodes[i];
		size_t dl = strnlen(nd->desc, SNAP_DESC_LEN);
		put8(&p, nd->type);
		put8(&p, nd->nports);
		put64(&p, nd->guid);
		put64(&p, nd->sysimg_guid);
		put8(&p, (uint8_t)dl);
		memcpy(p, nd->desc, dl);
		p += dl;
		for (unsigned q = 0; q <= nd->nports; q++) {
			const struct snap_port *pt = &s->ports[nd->port0 + q];
			put8(&p, pt->present);
			if (!pt->present)
				continue;
			put64(&p, pt->guid);
			put16(&p, pt->lid);
			put8(&p, pt->lmc);
			put8(&p, pt->state);
			put8(&p, pt->width);
			put8(&p, pt->speed);
			put8(&p, pt->espeed);
			put32(&p, pt->peer_node);
			put8(&p, pt->peer_port);
		}
		if (nd->type == SNAP_NODE_SWITCH) {
			put32(&p, nd->lft_len);
			snap_lft_read(nd, 0, nd->lft_len, p);
			p += nd->lft_len;
		}
	}

	uint64_t plen = (uint64_t)(p - buf) - SNAP_HEADER_LEN;
	uint8_t *h = buf;
	memcpy(h, SNAP_MAGIC, SNAP_MAGIC_LEN);
	h += SNAP_MAGIC_LEN;
	put32(&h, SNAP_VERSION);
	put32(&h, SNAP_HEADER_LEN);
	put64(&h, s->generation);
	put64(&h, plen);
	put32(&h, snap_crc32c(0, buf + SNAP_HEADER_LEN, plen));
	put32(&h, 0);
	put64(&h, s->sm_guid);
	put64(&h, s->sweep);
	put64(&h, s->timestamp);
	uint8_t *hc = buf + 36;
	put32(&hc, snap_crc32c(0, buf, SNAP_HEADER_LEN));
	*out = buf;
	*outlen = (size_t)(p - buf);
	return 0;
}

/* ---- decoding ------------------------------------------------------------- */

int snap_peek_header(const uint8_t *buf, size_t len, uint64_t *payload, char err[SNAP_ERR_LEN])
{
	if (len < SNAP_HEADER_LEN)
		return fail(err, "truncated header: %zu of %d bytes", len, SNAP_HEADER_LEN);
	if (memcmp(buf, SNAP_MAGIC, SNAP_MAGIC_LEN))
		return fail(err, "not a topod snapshot (bad magic)");
	uint32_t ver = rd32(buf + 8), hlen = rd32(buf + 12);
	if (ver != SNAP_VERSION)
		return fail(err, "unsupported snapshot version %u (this build reads %d)", ver, SNAP_VERSION);
	if (hlen != SNAP_HEADER_LEN)
		return fail(err, "bad header length %u", hlen);
	uint8_t h[SNAP_HEADER_LEN];
	memcpy(h, buf, sizeof(h));
	memset(h + 36, 0, 4);
	if (snap_crc32c(0, h, sizeof(h)) != rd32(buf + 36))
		return fail(err, "header checksum mismatch");
	uint64_t plen = rd64(buf + 24);
	if (plen > SNAP_MAX_PAYLOAD)
		return fail(err, "payload of %llu bytes exceeds the limit of %llu", (unsigned long long)plen,
			    (unsigned long long)SNAP_MAX_PAYLOAD);
	*payload = plen;
	return 0;
}

struct rd {
	const uint8_t *p, *end;
	const uint8_t **lft_src; /* [nnodes] where each switch's table starts */
	uint64_t lft_chunks;
	const uint8_t *buf;       /* the snapshot's first byte */
	struct snap_early *early; /* tables made while it arrived, or NULL */
};

/* A table snap_early_feed() made: node's, whose len entries were at
 * buf + off; t NULL once a decode took it. */
struct early_table {
	uint32_t node, len;
	size_t off;
	struct snap_lft *t;
};

/* The tables made, in record order. */
struct snap_early {
	size_t at;          /* the next record's offset; 0 before the counts are in */
	uint32_t i, nnodes; /* the next record's node index, and how many there are */
	int stopped;
	uint32_t n, cap;
	struct early_table *tab;
	uint64_t entries, taken; /* entries made; entries a decode took */
	uint64_t chunk_bytes;    /* what the tables made hold in chunks */
};

static int need(struct rd *r, size_t n)
{
	return (size_t)(r->end - r->p) >= n;
}

/* Port slots 0..nports of node i: a presence byte each, then the fixed
 * fields of a present port. */
static int decode_ports(struct rd *r, struct snap *s, struct snap_node *nd, uint32_t i, size_t *pcap,
			char err[SNAP_ERR_LEN])
{
	/* Each port slot takes at least one byte, so this cannot run past
	 * what the payload could describe. */
	size_t want = (size_t)s->nports + nd->nports + 1;
	if (!need(r, (size_t)nd->nports + 1))
		return fail(err, "node %u: truncated port table", i);
	if (want > *pcap) {
		size_t c = *pcap ? *pcap * 2 : 1024;
		while (c < want)
			c *= 2;
		void *np = realloc(s->ports, c * sizeof(*s->ports));
		if (!np)
			return fail(err, "out of memory");
		s->ports = np;
		*pcap = c;
	}
	nd->port0 = s->nports;
	for (unsigned p = 0; p <= nd->nports; p++) {
		struct snap_port *pt = &s->ports[s->nports++];
		memset(pt, 0, sizeof(*pt));
		pt->peer_node = SNAP_NONE;
		if (!need(r, 1))
			return fail(err, "node %u: truncated at port %u", i, p);
		uint8_t present = *r->p++;
		if (present > 1)
			return fail(err, "node %u port %u: bad presence byte %u", i, p, present);
		if (!present)
			continue;
		if (!need(r, PORT_FIXED - 1))
			return fail(err, "node %u: truncated at port %u", i, p);
		pt->present = 1;
		pt->guid = rd64(r->p);
		pt->lid = rd16(r->p + 8);
		pt->lmc = r->p[10];
		pt->state = r->p[11];
		pt->width = r->p[12];
		pt->speed = r->p[13];
		pt->espeed = r->p[14];
		pt->peer_node = rd32(r->p + 15);
		pt->peer_port = r->p[19];
		r->p += PORT_FIXED - 1;
		if (pt->lid && pt->lid <= SNAP_MAX_LID && pt->lmc <= 7 && (nd->type != SNAP_NODE_SWITCH || p == 0)) {
			uint32_t top = snap_port_top_lid(pt);
			if (top > s->max_lid)
				s->max_lid = top;
		}
	}
	return 0;
}

/* A switch's LFT: u32 length, then one out port per LID; where it starts
 * is noted, and copy_lfts() copies it into chunks once every record has
 * parsed. */
static int decode_lft(struct rd *r, struct snap *s, struct snap_node *nd, uint32_t i, char err[SNAP_ERR_LEN])
{
	if (!need(r, 4))
		return fail(err, "switch %u: truncated LFT length", i);
	uint32_t ll = rd32(r->p);
	r->p += 4;
	if (ll > SNAP_MAX_LID + 1 || !need(r, ll))
		return fail(err, "switch 0x%016llx: LFT length %u is out of range", (unsigned long long)nd->guid, ll);
	nd->lft_len = ll;
	r->lft_src[i] = r->p;
	r->lft_chunks += (ll + SNAP_LFT_CHUNK - 1) >> SNAP_LFT_CHUNK_SHIFT;
	s->nlft += ll;
	r->p += ll;
	return 0;
}

/* The tables the early feed made for the very records the decode parsed
 * (same node, same place, same length): theirs are the same bytes. Returns
 * the chunks they spare the copy. */
static uint64_t take_early(const struct rd *r, struct snap *s)
{
	struct snap_early *e = r->early;
	uint64_t spared = 0;
	if (!e)
		return 0;
	for (uint32_t k = 0; k < e->n; k++) {
		struct early_table *et = &e->tab[k];
		struct snap_node *nd = et->node < s->nnodes ? &s->nodes[et->node] : NULL;
		if (!et->t || !nd || nd->lft || !nd->lft_len || r->lft_src[et->node] != r->buf + et->off ||
		    et->len != nd->lft_len)
			continue;
		nd->lft = et->t;
		et->t = NULL;
		spared += nd->lft->nchunks;
		e->taken += nd->lft_len;
	}
	return spared;
}

/* The noted tables into chunks, their slabs reserved first: the page
 * faults of fresh memory are most of a large decode, and the reserve
 * takes them on several cores (lft.c). Those made early are taken. */
static int copy_lfts(const struct rd *r, struct snap *s, char err[SNAP_ERR_LEN])
{
	uint64_t spared = take_early(r, s);
	int rc = lft_reserve(r->lft_chunks - spared);
	for (uint32_t i = 0; !rc && i < s->nnodes; i++) {
		struct snap_node *nd = &s->nodes[i];
		if (nd->lft_len && !nd->lft && !(nd->lft = lft_new_from(r->lft_src[i], nd->lft_len)))
			rc = -1;
	}
	lft_trim();
	return rc ? fail(err, "out of memory for the forwarding tables") : 0;
}

int snap_make_room(uint64_t bytes)
{
	return lft_reserve(bytes >> SNAP_LFT_CHUNK_SHIFT);
}

void snap_release_room(void)
{
	lft_trim();
}

struct snap_early *snap_early_new(void)
{
	return calloc(1, sizeof(struct snap_early));
}

uint64_t snap_early_entries(const struct snap_early *e)
{
	return e ? e->entries : 0;
}

uint64_t snap_early_taken(const struct snap_early *e)
{
	return e ? e->taken : 0;
}

void snap_early_free(struct snap_early *e)
{
	if (!e)
		return;
	for (uint32_t k = 0; k < e->n; k++)
		lft_unref(e->tab[k].t);
	free(e->tab);
	free(e);
}

/* The record at offset at, if it lies wholly in buf[0..have): its end, and
 * where a switch's table starts and its length (*ll 0 for none). Framed
 * as decode_node() reads it, checking only what the framing needs. 1:
 * more bytes needed; -1: no record decode_node() would accept. */
static int early_record(const uint8_t *buf, size_t have, size_t at, size_t *end, size_t *tab, uint32_t *ll)
{
	const uint8_t *p = buf + at, *lim = buf + have;
	if (lim - p < NODE_FIXED)
		return 1;
	uint8_t type = p[0], np = p[1], dl = p[18];
	if (dl > SNAP_DESC_LEN)
		return -1;
	p += NODE_FIXED;
	if (lim - p < dl)
		return 1;
	p += dl;
	for (unsigned q = 0; q <= np; q++) {
		if (lim - p < 1)
			return 1;
		uint8_t present = *p++;
		if (present > 1)
			return -1;
		if (present && lim - p < PORT_FIXED - 1)
			return 1;
		p += present ? PORT_FIXED - 1 : 0;
	}
	*ll = 0;
	if (type == SNAP_NODE_SWITCH) {
		if (lim - p < 4)
			return 1;
		uint32_t l = rd32(p);
		p += 4;
		if (l > SNAP_MAX_LID + 1)
			return -1;
		if ((size_t)(lim - p) < l)
			return 1;
		*tab = (size_t)(p - buf);
		*ll = l;
		p += l;
	}
	*end = (size_t)(p - buf);
	return 0;
}

/* The counts and engine name: where node 0's record starts. 1: more bytes
 * needed; -1: not a full snapshot's payload. */
static int early_start(struct snap_early *e, const uint8_t *buf, size_t have)
{
	uint64_t plen;
	char err[SNAP_ERR_LEN];
	if (have < SNAP_HEADER_LEN + 9)
		return 1;
	if (snap_peek_header(buf, have, &plen, err))
		return -1;
	const uint8_t *p = buf + SNAP_HEADER_LEN;
	e->nnodes = rd32(p);
	if (e->nnodes > SNAP_MAX_NODES || p[8] > SNAP_ENGINE_LEN)
		return -1;
	if (have < SNAP_HEADER_LEN + 9 + (size_t)p[8])
		return 1;
	e->at = SNAP_HEADER_LEN + 9 + (size_t)p[8];
	return 0;
}

/* The table of node's record, its entries at buf + off: copied and kept.
 * -1 on ENOMEM. */
static int early_keep(struct snap_early *e, const uint8_t *buf, uint32_t node, size_t off, uint32_t len)
{
	if (e->n == e->cap) {
		uint32_t c = e->cap ? e->cap * 2 : 256;
		struct early_table *nt = realloc(e->tab, c * sizeof(*nt));
		if (!nt)
			return -1;
		e->tab = nt;
		e->cap = c;
	}
	struct snap_lft *t = lft_new_from(buf + off, len);
	if (!t)
		return -1;
	e->tab[e->n++] = (struct early_table){ node, len, off, t };
	e->entries += len;
	e->chunk_bytes += (uint64_t)t->nchunks << SNAP_LFT_CHUNK_SHIFT;
	return 0;
}

/* Tables this short are left to the decode: a chunk holds 512 entries,
 * and bytes nobody has checked yet (the checksum, a TCP producer's proof
 * come after the last byte) must not buy much more memory than they are.
 * Real tables hold every LID of the subnet. */
#define EARLY_TABLE_MIN (SNAP_LFT_CHUNK / 4)

int snap_early_feed(struct snap_early *e, const uint8_t *buf, size_t have)
{
	if (e->stopped)
		return 0;
	int rc = e->at ? 0 : early_start(e, buf, have);
	while (!rc && e->i < e->nnodes) {
		size_t end, tab = 0;
		uint32_t ll;
		if ((rc = early_record(buf, have, e->at, &end, &tab, &ll)))
			break;
		if (ll >= EARLY_TABLE_MIN) {
			/* at most twice the bytes in, whatever the records say */
			if (e->chunk_bytes + ll + SNAP_LFT_CHUNK > 2 * (uint64_t)have) {
				e->stopped = 1;
				return 0;
			}
			if (early_keep(e, buf, e->i, tab, ll)) {
				e->stopped = 1;
				return -1;
			}
		}
		e->at = end;
		e->i++;
	}
	if (rc < 0)
		e->stopped = 1;
	return 0;
}

/* Node record i: fixed fields, description, ports, and a switch's LFT. */
static int decode_node(struct rd *r, struct snap *s, uint32_t i, uint32_t nnodes, size_t *pcap,
		       char err[SNAP_ERR_LEN])
{
	if (!need(r, NODE_FIXED))
		return fail(err, "truncated at node %u of %u", i, nnodes);
	struct snap_node *nd = &s->nodes[i];
	nd->type = r->p[0];
	nd->nports = r->p[1];
	nd->guid = rd64(r->p + 2);
	nd->sysimg_guid = rd64(r->p + 10);
	uint8_t dl = r->p[18];
	r->p += NODE_FIXED;
	if (dl > SNAP_DESC_LEN || !need(r, dl))
		return fail(err, "node %u: bad description length %u", i, dl);
	memcpy(nd->desc, r->p, dl);
	nd->desc[dl] = '\0';
	r->p += dl;
	if (strlen(nd->desc) != dl)
		return fail(err, "node %u (guid 0x%016llx): NUL byte inside description", i,
			    (unsigned long long)nd->guid);
	if (decode_ports(r, s, nd, i, pcap, err))
		return -1;
	if (nd->type == SNAP_NODE_SWITCH && decode_lft(r, s, nd, i, err))
		return -1;
	s->nnodes++;
	return 0;
}

/* Header fields, the counts and the engine name, then every node. */
static int decode_payload(struct rd *r, struct snap *s, uint64_t plen, char err[SNAP_ERR_LEN])
{
	if (!need(r, 9))
		return fail(err, "payload too short for its counts");
	uint32_t nnodes = rd32(r->p);
	r->p += 8;
	/* Every node takes at least NODE_FIXED + 1 bytes: bound the count by
	 * the bytes we actually have before allocating for it. */
	if (nnodes > SNAP_MAX_NODES || (uint64_t)nnodes * (NODE_FIXED + 1) > plen)
		return fail(err, "node count %u does not fit in %llu payload bytes", nnodes, (unsigned long long)plen);
	uint8_t elen = *r->p++;
	if (elen > SNAP_ENGINE_LEN || !need(r, elen))
		return fail(err, "bad routing engine name length");
	memcpy(s->engine, r->p, elen);
	s->engine[elen] = '\0';
	if (strlen(s->engine) != elen)
		return fail(err, "NUL byte in routing engine name");
	r->p += elen;
	s->nodes = calloc(nnodes ? nnodes : 1, sizeof(*s->nodes));
	r->lft_src = malloc(((size_t)nnodes + 1) * sizeof(*r->lft_src));
	if (!s->nodes || !r->lft_src)
		return fail(err, "out of memory");
	size_t pcap = 0;
	for (uint32_t i = 0; i < nnodes; i++)
		if (decode_node(r, s, i, nnodes, &pcap, err))
			return -1;
	if (r->p != r->end)
		return fail(err, "%zu unparsed bytes at the end of the payload", (size_t)(r->end - r->p));
	return copy_lfts(r, s, err);
}

int snap_decode(const uint8_t *buf, size_t len, struct snap **out, char err[SNAP_ERR_LEN])
{
	return snap_decode_early(buf, len, NULL, out, err);
}

int snap_decode_early(const uint8_t *buf, size_t len, struct snap_early *e, struct snap **out,
		      char err[SNAP_ERR_LEN])
{
	uint64_t plen;
	if (snap_peek_header(buf, len, &plen, err))
		return -1;
	if (len - SNAP_HEADER_LEN < plen)
		return fail(err, "truncated snapshot: %llu of %llu payload bytes",
			    (unsigned long long)(len - SNAP_HEADER_LEN), (unsigned long long)plen);
	if (len - SNAP_HEADER_LEN > plen)
		return fail(err, "%llu bytes of trailing garbage after the payload",
			    (unsigned long long)(len - SNAP_HEADER_LEN - plen));
	if (snap_crc32c(0, buf + SNAP_HEADER_LEN, plen) != rd32(buf + 32))
		return fail(err, "payload checksum mismatch (corrupted in transit or on disk)");

	struct snap *s = snap_new();
	if (!s)
		return fail(err, "out of memory");
	s->generation = rd64(buf + 16);
	s->sm_guid = rd64(buf + 40);
	s->sweep = rd64(buf + 48);
	s->timestamp = rd64(buf + 56);
	struct rd r = { buf + SNAP_HEADER_LEN, buf + SNAP_HEADER_LEN + plen, NULL, 0, buf, e };
	int rc = decode_payload(&r, s, plen, err);
	free(r.lft_src);
	if (rc || snap_validate(s, err)) {
		snap_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

/* ---- files ---------------------------------------------------------------- */

int snap_write_atomic_mode(const char *path, const void *buf, size_t len, mode_t mode, char err[SNAP_ERR_LEN])
{
	/* mkostemp: an unpredictable name created with O_EXCL and mode 0600,
	 * so a symlink planted in the directory can never redirect the write
	 * (topod may run as root), and two writers of one path (the plugin's
	 * sink workers) never share a temporary file. */
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s" SNAP_TMP_SUFFIX "XXXXXX", path) >= (int)sizeof(tmp))
		return fail(err, "%s: path too long", path);
	/* rename() would replace a device or FIFO (e.g. -o /dev/null as root)
	 * with a regular file. */
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		return fail(err, "%s: exists and is not a regular file", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return fail(err, "%s: %s", tmp, strerror(errno));
	if (mode != 0600 && fchmod(fd, mode)) {
		fail(err, "%s: chmod: %s", tmp, strerror(errno));
		goto bad;
	}
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, (const uint8_t *)buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fail(err, "%s: write: %s", tmp, strerror(errno));
			goto bad;
		}
		off += (size_t)w;
	}
	/* fsync before rename: after a crash the name points at either the
	 * old file or the complete new one, never a torn one. */
	if (fsync(fd)) {
		fail(err, "%s: fsync: %s", tmp, strerror(errno));
		goto bad;
	}
	close(fd);
	/* rename() replaces a symlink at path, never its target. */
	if (rename(tmp, path)) {
		fail(err, "rename %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		strcpy(dir, ".");
	/* The rename itself is only durable once the directory is synced: an
	 * acknowledgement sent before that could be undone by a crash. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd)) {
		fail(err, "%s: fsync of the directory: %s", dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	close(dfd);
	return 0;
bad:
	close(fd);
	unlink(tmp);
	return -1;
}

int snap_write_atomic(const char *path, const void *buf, size_t len, char err[SNAP_ERR_LEN])
{
	return snap_write_atomic_mode(path, buf, len, 0644, err);
}

int snap_remove_stale_tmp(const char *path, char err[SNAP_ERR_LEN])
{
	char dir[4096], base[512];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	const char *name = slash ? slash + 1 : path;
	if (snprintf(base, sizeof(base), "%s" SNAP_TMP_SUFFIX, name) >= (int)sizeof(base))
		return fail(err, "%s: name too long", path);
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		strcpy(dir, ".");
	DIR *d = opendir(dir);
	if (!d)
		return fail(err, "%s: %s", dir, strerror(errno));
	int removed = 0;
	size_t bl = strlen(base);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, base, bl))
			continue;
		/* unlinkat removes a symlink itself, never what it points at. */
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

int snap_write_file(const struct snap *s, const char *path, char err[SNAP_ERR_LEN])
{
	uint8_t *buf;
	size_t len;
	if (snap_encode(s, &buf, &len, err))
		return -1;
	int rc = snap_write_atomic(path, buf, len, err);
	free(buf);
	return rc;
}

/* Why: on the lab's VM (PVM, shadow page tables) the first read from user
 * space of a 4 KiB page that the kernel filled (a socket receive, a file
 * read) costs about 5 us, so the checksum of a received k=56 snapshot
 * (195 MB) took 266 ms where the same bytes in 2 MiB pages take 23 ms.
 * The kernel backs the buffer's aligned 2 MiB ranges in huge pages when
 * they are first written; each growth asks again, as realloc may move
 * the buffer.
 *
 * The advice covers malloc's whole mapping (from the page holding its
 * chunk header to the end of the usable size): advice on part of it split
 * the mapping, and realloc's mremap, which moves one mapping only, then
 * failed (EFAULT), so every doubling copied the buffer into fresh memory
 * (1 s of a k=56 snapshot's receive in topod). */
void *snap_bytes_realloc(void *p, size_t n)
{
	const uintptr_t page = 4096, huge = (uintptr_t)2 << 20;
	uint8_t *q = realloc(p, n ? n : 1);
#ifdef MADV_HUGEPAGE
	if (q && n >= 2 * huge) {
		uintptr_t a = (uintptr_t)q & ~(page - 1), e = ((uintptr_t)q + malloc_usable_size(q)) & ~(page - 1);
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
	}
#endif
	return q;
}

/* One buffer kept for the next delta: the received bytes, or the list of
 * blocks its apply makes. */
struct kept_slot {
	pthread_mutex_t mu;
	void *buf;
	size_t cap, max;
};
static struct kept_slot kept_bytes = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, SNAP_BYTES_KEEP_MAX };
static struct kept_slot kept_list = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, SNAP_LIST_KEEP_MAX };

static void slot_keep(struct kept_slot *k, void *p)
{
	size_t cap = p ? malloc_usable_size(p) : 0;
	if (cap > k->max) {
		free(p);
		return;
	}
	if (!p)
		return;
	pthread_mutex_lock(&k->mu);
	void *old = k->buf;
	k->buf = p;
	k->cap = cap;
	pthread_mutex_unlock(&k->mu);
	free(old);
}

/* Received bytes kept more than KEPT_SLACK times what is asked for,
 * past KEPT_SMALL bytes, are not given: the taker's own buffer replaces
 * them when kept (slot_keep frees them there), so that a large delta's
 * bytes do not stay through every small one after it. The list is
 * trimmed by its owner instead (snap_list_trim), as it is made ready. */
#define KEPT_SLACK 4
#define KEPT_SMALL ((size_t)1 << 20)

static int oversize(size_t cap, size_t n)
{
	return cap > KEPT_SMALL && cap / KEPT_SLACK > n;
}

static void *slot_take(struct kept_slot *k, size_t n, int slack)
{
	void *p = NULL;
	pthread_mutex_lock(&k->mu);
	if (k->buf && k->cap >= n && !(slack && oversize(k->cap, n))) {
		p = k->buf;
		k->buf = NULL;
		k->cap = 0;
	}
	pthread_mutex_unlock(&k->mu);
	return p;
}

static uint64_t slot_touch(struct kept_slot *k)
{
	/* Read outside the lock, which the event loop takes for the next
	 * delta: taken, read, and kept again unless another was meanwhile. */
	pthread_mutex_lock(&k->mu);
	void *p = k->buf;
	size_t cap = k->cap;
	k->buf = NULL;
	k->cap = 0;
	pthread_mutex_unlock(&k->mu);
	util_touch(p, cap);
	pthread_mutex_lock(&k->mu);
	if (!k->buf) {
		k->buf = p;
		k->cap = cap;
		p = NULL;
	}
	pthread_mutex_unlock(&k->mu);
	free(p);
	return cap;
}

void snap_bytes_keep(void *p)
{
	slot_keep(&kept_bytes, p);
}

void *snap_bytes_take(size_t n)
{
	return slot_take(&kept_bytes, n, 1);
}

void snap_list_keep(void *p)
{
	slot_keep(&kept_list, p);
}

void *snap_list_take(size_t n)
{
	return slot_take(&kept_list, n, 0);
}

void snap_list_trim(size_t most)
{
	void *p = NULL;
	pthread_mutex_lock(&kept_list.mu);
	if (kept_list.buf && oversize(kept_list.cap, most)) {
		p = kept_list.buf;
		kept_list.buf = NULL;
		kept_list.cap = 0;
	}
	pthread_mutex_unlock(&kept_list.mu);
	free(p);
}

uint64_t snap_bytes_touch_kept(void)
{
	return slot_touch(&kept_bytes) + slot_touch(&kept_list);
}

int snap_read_bytes(const char *path, uint8_t **buf_out, size_t *len_out, char err[SNAP_ERR_LEN])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(err, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(err, "%s: not a regular file", path);
	}
	if ((uint64_t)st.st_size > SNAP_MAX_PAYLOAD + SNAP_HEADER_LEN) {
		close(fd);
		return fail(err, "%s: %lld bytes is larger than any valid snapshot", path, (long long)st.st_size);
	}
	size_t len = (size_t)st.st_size;
	uint8_t *buf = snap_bytes_realloc(NULL, len);
	if (!buf) {
		close(fd);
		return fail(err, "%s: out of memory", path);
	}
	size_t off = 0;
	while (off < len) {
		ssize_t r = read(fd, buf + off, len - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	close(fd);
	*buf_out = buf;
	*len_out = off;
	return 0;
}

int snap_read_file(const char *path, struct snap **out, char err[SNAP_ERR_LEN])
{
	uint8_t *buf;
	size_t len;
	if (snap_read_bytes(path, &buf, &len, err))
		return -1;
	int rc = snap_decode(buf, len, out, err);
	free(buf);
	if (rc) {
		char e2[SNAP_ERR_LEN];
		snprintf(e2, sizeof(e2), "%.80s: %.170s", path, err);
		memcpy(err, e2, SNAP_ERR_LEN);
	}
	return rc;
}

static int port_differs(const struct snap_port *u, const struct snap_port *v, unsigned flags)
{
	/* Field by field: struct padding is not guaranteed equal. A port
	 * that is absent on both sides has nothing to compare. */
	if (u->present != v->present)
		return 1;
	if (!u->present)
		return 0;
	if (u->guid != v->guid || u->lid != v->lid || u->lmc != v->lmc || u->peer_node != v->peer_node ||
	    u->peer_port != v->peer_port)
		return 1;
	return (flags & SNAP_DIFF_STATE) &&
	       (u->state != v->state || u->width != v->width || u->speed != v->speed || u->espeed != v->espeed);
}

uint64_t snap_diff(const struct snap *a, const struct snap *b, unsigned flags,
		   int (*fn)(void *ctx, const struct snap_diff_item *d), void *ctx)
{
	uint64_t n = 0;
	struct snap_diff_item d = { 0 };
#define REPORT(...)                                             \
	do {                                                    \
		d = (struct snap_diff_item){ __VA_ARGS__ };     \
		n++;                                            \
		if (fn && fn(ctx, &d))                          \
			return n;                               \
	} while (0)
	if ((flags & SNAP_DIFF_STATE) && strcmp(a->engine, b->engine))
		REPORT(.kind = SNAP_DIFF_ENGINE);
	if (a->nnodes != b->nnodes)
		REPORT(.kind = SNAP_DIFF_NODES);
	for (uint32_t i = 0; i < a->nnodes && i < b->nnodes; i++) {
		const struct snap_node *x = &a->nodes[i], *y = &b->nodes[i];
		if (x->guid != y->guid || x->type != y->type || x->nports != y->nports ||
		    x->sysimg_guid != y->sysimg_guid || strcmp(x->desc, y->desc)) {
			REPORT(.kind = SNAP_DIFF_NODE, .node = i);
			continue;
		}
		for (unsigned p = 0; p <= x->nports; p++)
			if (port_differs(&a->ports[x->port0 + p], &b->ports[y->port0 + p], flags))
				REPORT(.kind = SNAP_DIFF_PORT, .node = i, .port = p);
		if (x->type != SNAP_NODE_SWITCH)
			continue;
		uint32_t len = x->lft_len > y->lft_len ? x->lft_len : y->lft_len;
		for (uint32_t l = 0; l < len; l++) {
			if (snap_lft_get(x, l) != snap_lft_get(y, l))
				REPORT(.kind = SNAP_DIFF_LFT, .node = i, .lid = l);
		}
	}
#undef REPORT
	return n;
}
