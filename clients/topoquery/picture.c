/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * picture.c - topoquery's pictures (picture.h): what they show, and how
 * they stay readable from 8 hosts to 50,000.
 *
 * tree: nested boxes as lstopo draws a machine (graphviz's osage layout
 * packs clusters in rows, in topod's order): a box per switch cluster
 * holding its child clusters, leaf switches holding their hosts, hosts
 * collapsed into hostlist ranges where there are many.
 *
 * load: the hierarchy's levels as rows (hosts at the bottom), hosts in
 * hierarchy order along x (one column per leaf when many), switches at the
 * mean position of what they connect below, spread so that none overlap,
 * cables coloured by the bytes of their busier direction on a scale.
 *
 * The tools run as child processes on a temporary script; their own
 * warnings reach stderr unchanged, so that a test can demand none.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostlist.h"
#include "picture.h"

/* ---- formats, tools, temporary files ----------------------------------------- */

enum pic_fmt { PIC_BAD, PIC_SVG, PIC_PNG, PIC_PDF, PIC_DOT };

static enum pic_fmt pic_format(const char *path)
{
	const char *e = strrchr(path, '.');
	if (!e || strchr(e, '/'))
		return PIC_BAD;
	if (!strcasecmp(e, ".svg"))
		return PIC_SVG;
	if (!strcasecmp(e, ".png"))
		return PIC_PNG;
	if (!strcasecmp(e, ".pdf"))
		return PIC_PDF;
	if (!strcasecmp(e, ".dot") || !strcasecmp(e, ".gv"))
		return PIC_DOT;
	return PIC_BAD;
}

/* An executable tool in one of $PATH's directories: checked before running,
 * so that the message names the tool instead of a shell's status 127. */
static int on_path(const char *tool)
{
	const char *p = getenv("PATH");
	char buf[4096];
	if (!p || !*p)
		p = "/usr/bin:/bin";
	for (;;) {
		size_t n = strcspn(p, ":");
		if (n + strlen(tool) + 3 <= sizeof(buf)) {
			snprintf(buf, sizeof(buf), "%.*s/%s", (int)(n ? n : 1), n ? p : ".", tool);
			if (!access(buf, X_OK))
				return 1;
		}
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

/* EXIT_OK when tool is there, else a message naming it and EXIT_ERROR. */
static int need_tool(const char *what, const char *tool, const char *package)
{
	if (on_path(tool))
		return EXIT_OK;
	fprintf(stderr, "topoquery: %s: needs %s: '%s' is not on PATH (install the %s package)\n", what, package,
		tool, package);
	return EXIT_ERROR;
}

/* Runs argv[0] with argv, stdout to /dev/null's place (inherited); an exit status. */
static int run_tool(const char *what, char *const argv[])
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "topoquery: %s: fork: %s\n", what, strerror(errno));
		return EXIT_ERROR;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "topoquery: %s: cannot run %s: %s\n", what, argv[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "topoquery: %s: waiting for %s: %s\n", what, argv[0], strerror(errno));
			return EXIT_ERROR;
		}
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return EXIT_OK;
	if (WIFEXITED(st))
		fprintf(stderr, "topoquery: %s: %s failed (exit %d; its message is above)\n", what, argv[0],
			WEXITSTATUS(st));
	else
		fprintf(stderr, "topoquery: %s: %s was killed by signal %d\n", what, argv[0],
			WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return EXIT_ERROR;
}

static FILE *tmp_open(char *path, size_t n)
{
	const char *d = getenv("TMPDIR");
	snprintf(path, n, "%s/topoquery-XXXXXX", d && *d ? d : "/tmp");
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "topoquery: temporary file %s: %s\n", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
	}
	return f;
}

/* ---- text in DOT and gnuplot strings -------------------------------------------- */

/* Inside a DOT "..." string: '"' and '\' escaped, bytes outside printable ASCII as '?'. */
static void dot_str(FILE *o, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', o);
		fputc(*p >= 0x20 && *p < 0x7f ? *p : '?', o);
	}
}

/* Inside a gnuplot '...' string: a quote doubled, a newline joined in as
 * "\n" (single quotes take no escapes), no other control bytes. */
static void gp_str(FILE *o, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\n') {
			fputs("' . \"\\n\" . '", o);
			continue;
		}
		if (*p == '\'')
			fputc('\'', o);
		fputc(*p >= 0x20 && *p < 0x7f ? *p : '?', o);
	}
}

/* ---- tree ---------------------------------------------------------------------- */

struct tctx {
	FILE *o;
	const tii_tree_t *tr;
	const struct kids *k;
	int cut;      /* clusters at this level are drawn as one box; INT32_MAX: none */
	int detail;   /* small leaves show each host */
};

/* A cluster's name: topod's (its switch's NodeDescription, libtii 1.3) or its ID. */
static void cluster_name(const tii_tree_t *tr, size_t c, char *buf, size_t n)
{
#if TII_VERSION_MINOR >= 3
	if (tr->names && tr->names[c][0]) {
		snprintf(buf, n, "%s", tr->names[c]);
		return;
	}
#endif
	snprintf(buf, n, "0x%016" PRIx64, tr->clusters[c].id);
}

static void below(const struct tctx *x, size_t c, const char **v, size_t *n)
{
	const struct kids *k = x->k;
	for (size_t i = k->cfirst[c]; i < k->cfirst[c + 1]; i++)
		below(x, k->cidx[i], v, n);
	for (size_t i = k->hfirst[c]; i < k->hfirst[c + 1]; i++)
		v[(*n)++] = x->tr->hosts[k->hidx[i]].name;
}

/* The hosts under cluster c (own = 1: only those hanging off c itself) as
 * a hostlist, at most 44 characters ("..." past that). */
static void host_range(const struct tctx *x, size_t c, int own, char *buf, size_t n)
{
	const struct kids *k = x->k;
	const char **v = malloc((x->tr->nhosts ? x->tr->nhosts : 1) * sizeof(*v));
	size_t m = 0;
	char *hl = NULL;
	if (v) {
		if (own)
			for (size_t i = k->hfirst[c]; i < k->hfirst[c + 1]; i++)
				v[m++] = x->tr->hosts[k->hidx[i]].name;
		else
			below(x, c, v, &m);
		hl = hostlist_compress((char *const *)v, m);
	}
	if (!hl)
		snprintf(buf, n, "%zu hosts", m);
	else if (strlen(hl) > 44)
		snprintf(buf, n, "%.41s...", hl);
	else
		snprintf(buf, n, "%s", hl);
	free(hl);
	free(v);
}

static int columns(size_t items)
{
	int c = 1;   /* ceil(0.8 sqrt(items)): boxes are wider than high */
	while ((size_t)(25 * c * c) < 16 * items)
		c++;
	return c;
}

/* Drawn as one box: a leaf switch with many hosts, or a cluster at the cut. */
static int as_node(const struct tctx *x, size_t c)
{
	const struct kids *k = x->k;
	size_t nh = k->hfirst[c + 1] - k->hfirst[c];
	if (x->tr->clusters[c].level >= x->cut)
		return 1;
	return k->cfirst[c + 1] == k->cfirst[c] && !(x->detail && nh <= PIC_HOSTS_EACH);
}

static void tree_node(const struct tctx *x, size_t c, int sortv)
{
	const struct tii_tree_cluster *cl = &x->tr->clusters[c];
	int leaf = x->k->cfirst[c + 1] == x->k->cfirst[c];
	char name[TII_NAME_MAX + 24], hl[64];
	cluster_name(x->tr, c, name, sizeof(name));
	host_range(x, c, 0, hl, sizeof(hl));
	fprintf(x->o, "\t\"c%zu\" [label=\"", c);
	dot_str(x->o, name);
	fputs("\\n", x->o);
	dot_str(x->o, hl);
	fprintf(x->o, "\\n%" PRIu32 " host%s%s\", fillcolor=\"%s\", sortv=%d];\n", cl->nhosts, cl->nhosts == 1 ? "" : "s",
		leaf ? "" : " (switches below collapsed)", leaf ? "#fff3c4" : "#fbd9b5", sortv);
}

/* Cluster c as a box of its children, recursively (depth <= topod's levels). */
static void tree_box(const struct tctx *x, size_t c, int sortv)
{
	const struct kids *k = x->k;
	const struct tii_tree_cluster *cl = &x->tr->clusters[c];
	if (as_node(x, c)) {
		tree_node(x, c, sortv);
		return;
	}
	size_t nc = k->cfirst[c + 1] - k->cfirst[c], nh = k->hfirst[c + 1] - k->hfirst[c];
	int each = x->detail && !nc;   /* a small leaf: its hosts one by one */
	char name[TII_NAME_MAX + 24];
	cluster_name(x->tr, c, name, sizeof(name));
	fprintf(x->o, "subgraph \"cluster_c%zu\" {\n\tgraph [label=\"", c);
	dot_str(x->o, name);
	fprintf(x->o, "\\n%" PRIu32 " host%s\", bgcolor=\"%s\", packmode=\"array_u%d\", sortv=%d];\n", cl->nhosts,
		cl->nhosts == 1 ? "" : "s", !nc ? "#fff3c4" : cl->level % 2 ? "#e3ecf7" : "#f2f2f2",
		columns(nc + (each ? nh : nh > 0)), sortv);
	int s = 0;
	for (size_t i = k->cfirst[c]; i < k->cfirst[c + 1]; i++)
		tree_box(x, k->cidx[i], s++);
	if (each) {
		for (size_t i = k->hfirst[c]; i < k->hfirst[c + 1]; i++) {
			fprintf(x->o, "\t\"h%zu\" [label=\"", k->hidx[i]);
			dot_str(x->o, x->tr->hosts[k->hidx[i]].name);
			fprintf(x->o, "\", sortv=%d];\n", s++);
		}
	} else if (nh) {   /* hosts straight under a cluster with switches below */
		char hl[64];
		host_range(x, c, 1, hl, sizeof(hl));
		fprintf(x->o, "\t\"o%zu\" [label=\"", c);
		dot_str(x->o, hl);
		fprintf(x->o, "\", sortv=%d];\n", s);
	}
	fputs("}\n", x->o);
}

/* Boxes drawn with the cut at level cut (INT32_MAX: none). */
static size_t tree_boxes(const struct tctx *x)
{
	size_t n = 0;
	for (size_t c = 0; c < x->tr->nclusters; c++) {
		if (x->tr->clusters[c].level > x->cut)
			continue;
		n++;
		size_t nh = x->k->hfirst[c + 1] - x->k->hfirst[c];
		if (!as_node(x, c) && nh)
			n += x->detail && x->k->cfirst[c + 1] == x->k->cfirst[c] ? nh : 1;
	}
	return n;
}

static void tree_legend(const struct tctx *x)
{
	FILE *o = x->o;
	const tii_tree_t *tr = x->tr;
	size_t nroots = 0;
	for (size_t c = 0; c < tr->nclusters; c++)
		nroots += tr->clusters[c].parent < 0;
	fprintf(o, "\tlabel=<<table border=\"0\" cellspacing=\"3\" cellpadding=\"2\"><tr><td colspan=\"8\">"
		   "<font point-size=\"16\">InfiniBand fabric: %zu hosts, %zu switch clusters in %d levels",
		tr->nhosts, tr->nclusters, tr->depth);
	fprintf(o, "%s (topod generation %" PRIu64 ")</font></td></tr>\n\t<tr>", nroots > 1 ? ", in parts" : "",
		tr->generation);
	static const char *const key[][2] = {
		{ "#f2f2f2", "switch cluster (even level)" }, { "#e3ecf7", "switch cluster (odd level)" },
		{ "#fff3c4", "leaf switch: its hosts" }, { "#fbd9b5", "cluster drawn as one box" },
	};
	for (size_t i = 0; i < sizeof(key) / sizeof(key[0]); i++)
		fprintf(o, "<td bgcolor=\"%s\" border=\"1\" width=\"16\"> </td><td align=\"left\">%s</td>", key[i][0],
			key[i][1]);
	fprintf(o, "</tr>\n\t<tr><td colspan=\"8\"><font point-size=\"10\">boxes nest as the switches do: "
		   "a level's clusters inside the one above, in topod's order; hosts as ranges where a leaf has "
		   "more than %d", PIC_HOSTS_EACH);
	if (x->cut != INT32_MAX)
		fprintf(o, "; below level %d collapsed", x->cut);
	fputs("</font></td></tr></table>>;\n", o);
}

static void tree_write(FILE *o, const tii_tree_t *tr, const struct kids *k)
{
	struct tctx x = { o, tr, k, INT32_MAX, tr->nhosts <= PIC_HOSTS_DETAIL };
	int maxl = 0;
	size_t nroots = 0;
	for (size_t c = 0; c < tr->nclusters; c++) {
		if (tr->clusters[c].level > maxl)
			maxl = tr->clusters[c].level;
		nroots += tr->clusters[c].parent < 0;
	}
	while (tree_boxes(&x) > PIC_BOXES_MAX && x.cut > 0)
		x.cut = x.cut == INT32_MAX ? maxl : x.cut - 1;
	fprintf(o, "graph topology {\n\tgraph [layout=osage, packmode=\"array_u%d\", pack=6, fontname=\"Helvetica\", "
		   "fontsize=14, labelloc=t, style=rounded, size=\"%.2f,%.2f\"];\n"
		   "\tnode [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", fontname=\"Helvetica\", "
		   "fontsize=10, margin=\"0.06,0.03\", height=0.3];\n",
		columns(nroots), PIC_MAX_PT / 72.0, PIC_MAX_PT / 72.0);
	tree_legend(&x);
	int s = 0;
	for (size_t c = 0; c < tr->nclusters; c++)
		if (tr->clusters[c].parent < 0)
			tree_box(&x, c, s++);
	fputs("}\n", o);
}

int pic_tree(struct tq *q, const tii_tree_t *tr, const struct kids *k)
{
	const char *out = q->output;
	enum pic_fmt f = out ? pic_format(out) : PIC_DOT;
	if (f == PIC_BAD)
		return tq_usage_error("tree -o %s: FILE.svg, .png or .pdf (a picture) or .dot (graphviz text)", out);
	int status = f == PIC_DOT ? EXIT_OK : need_tool("tree -o", "dot", "graphviz");
	if (status)
		return status;
	char tmp[4096];
	FILE *o = f != PIC_DOT ? tmp_open(tmp, sizeof(tmp)) : out ? fopen(out, "w") : q->out;
	if (!o) {
		if (f == PIC_DOT)
			fprintf(stderr, "topoquery: %s: %s\n", out, strerror(errno));
		return EXIT_FAIL;
	}
	tree_write(o, tr, k);
	if (o == q->out)
		return EXIT_OK;
	if (fclose(o)) {
		fprintf(stderr, "topoquery: %s: %s\n", f == PIC_DOT ? out : tmp, strerror(errno));
		status = EXIT_ERROR;
	} else if (f != PIC_DOT) {
		char fmt[8];
		snprintf(fmt, sizeof(fmt), "-T%s", f == PIC_SVG ? "svg" : f == PIC_PNG ? "png" : "pdf");
		char *argv[] = { "dot", fmt, "-o", (char *)out, tmp, NULL };
		status = run_tool("tree -o", argv);
	}
	if (f != PIC_DOT)
		unlink(tmp);
	return status;
}

/* ---- load --dot: the graph of the loaded cables, the heaviest PIC_DOT_LINKS_MAX ---- */

static const char *load_host(const tii_load_t *l, uint64_t guid)
{
	for (size_t i = 0; i < l->nhostnames; i++)
		if (l->hostnames[i].guid == guid)
			return l->hostnames[i].name;
	return NULL;
}

/* The DOT picture: switches ranked by level (top level at the top), hosts
 * at the bottom grouped with their leaf switch, one edge per cabled pair
 * of nodes whose width and colour follow the heavier direction's bytes
 * (green = light, red = the maximum). Only loaded links are drawn. */
static void load_dot_draw(FILE *o, const tii_load_t *l, const char *title, size_t all)
{
	int maxl = 0;
	for (size_t i = 0; i < l->nlinks; i++) {
		const struct tii_load_link *k = &l->links[i];
		if (k->from != TII_LOAD_LEVEL_NONE && k->from > maxl)
			maxl = k->from;
		if (k->to != TII_LOAD_LEVEL_NONE && k->to > maxl)
			maxl = k->to;
	}
	fprintf(o, "digraph load {\n  graph [rankdir=TB, splines=line, nodesep=0.08, ranksep=1.2, "
		   "fontname=\"Helvetica\", labelloc=t, label=\"");
	for (const char *p = title; *p; p++)
		if (*p != '"' && *p != '\\')
			fputc(*p, o);
	if (all > l->nlinks)
		fprintf(o, "\\nthe %zu heaviest of %zu loaded links drawn", l->nlinks, all);
	fprintf(o, "\\nmax link %" PRIu64 " bytes (%" PRIu64 " msgs); width and colour: bytes / max\"];\n"
		   "  node [fontname=\"Helvetica\", fontsize=9, style=filled, fillcolor=\"#eeeeee\"];\n"
		   "  edge [dir=none, arrowhead=none];\n",
		l->max_bytes, l->max_msgs);
	/* nodes per level: level L switches in one rank; the top level first */
	for (int L = maxl; L >= 0; L--) {
		fprintf(o, "  { rank=same;");
		for (size_t i = 0; i < l->nlinks; i++) {
			const struct tii_load_link *k = &l->links[i];
			if (k->from != L)
				continue;
			/* each node once: the first link leaving it */
			size_t j = 0;
			while (j < i && l->links[j].guid != k->guid)
				j++;
			if (j < i)
				continue;
			const char *h = load_host(l, k->guid);
			if (h) {
				fprintf(o, " \"n%016" PRIx64 "\" [shape=box, label=\"", k->guid);
				dot_str(o, h);   /* the server's word: untrusted */
				fprintf(o, "\", fillcolor=\"#ddeeff\"];");
			} else
				fprintf(o, " \"n%016" PRIx64 "\" [shape=ellipse, label=\"L%d\\n%04" PRIx64 "\"];",
					k->guid, L, k->guid & 0xffff);
		}
		fprintf(o, " }\n");
	}
	/* one edge per node pair, drawn from the upper to the lower end */
	for (size_t i = 0; i < l->nlinks; i++) {
		const struct tii_load_link *k = &l->links[i];
		if (!k->head)
			continue;
		uint64_t b = k->bytes;
		size_t rev = l->nlinks;
		for (size_t j = 0; j < l->nlinks; j++)
			if (l->links[j].guid == k->head && l->links[j].head == k->guid) {
				rev = j;
				break;
			}
		if (rev < l->nlinks) {
			/* draw the pair once, at the lower index */
			if (rev < i)
				continue;
			if (l->links[rev].bytes > b)
				b = l->links[rev].bytes;
		}
		double f = l->max_bytes ? (double)b / (double)l->max_bytes : 0;
		uint64_t up = k->guid, down = k->head;
		if (k->to > k->from && k->to != TII_LOAD_LEVEL_NONE) {
			up = k->head;
			down = k->guid;
		}
		fprintf(o, "  \"n%016" PRIx64 "\" -> \"n%016" PRIx64 "\" [penwidth=%.2f, color=\"%.3f 0.9 0.85\"%s];\n",
			up, down, 0.6 + 7.0 * f, 0.33 * (1.0 - f), f >= 0.999 ? ", style=bold" : "");
	}
	fprintf(o, "}\n");
}


struct heavy {
	uint64_t bytes;
	size_t i;
};

static int cmp_heavier(const void *a, const void *b)
{
	const struct heavy *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int cmp_index(const void *a, const void *b)
{
	const struct heavy *x = a, *y = b;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Drawn in the server's order: every link when they are few, else the
 * heaviest PIC_DOT_LINKS_MAX (the drawing pairs links, so it is quadratic
 * in them, and graphviz cannot lay out more anyway). */
int pic_load_dot(FILE *o, const tii_load_t *l, const char *title, size_t *dropped)
{
	*dropped = 0;
	if (l->nlinks <= PIC_DOT_LINKS_MAX) {
		load_dot_draw(o, l, title, l->nlinks);
		return 0;
	}
	struct heavy *h = malloc(l->nlinks * sizeof(*h));
	tii_load_t sub = *l;
	sub.links = malloc(PIC_DOT_LINKS_MAX * sizeof(*sub.links));
	if (!h || !sub.links) {
		free(h);
		free(sub.links);
		return -1;
	}
	for (size_t i = 0; i < l->nlinks; i++)
		h[i] = (struct heavy){ l->links[i].bytes, i };
	qsort(h, l->nlinks, sizeof(*h), cmp_heavier);
	qsort(h, PIC_DOT_LINKS_MAX, sizeof(*h), cmp_index);
	for (size_t i = 0; i < PIC_DOT_LINKS_MAX; i++)
		sub.links[i] = l->links[h[i].i];
	sub.nlinks = PIC_DOT_LINKS_MAX;
	load_dot_draw(o, &sub, title, l->nlinks);
	*dropped = l->nlinks - PIC_DOT_LINKS_MAX;
	free(h);
	free(sub.links);
	return 0;
}

/* ---- load --plot ------------------------------------------------------------------ */

struct lnode {
	uint64_t guid;
	int level;
	double x, sum;   /* position; sum and n of what it connects below */
	size_t n;
	long order;      /* hosts: place in the hierarchy (-1 unknown) */
	const char *name;
	struct lnode *leaf;   /* hosts: the switch they are cabled to */
};

struct lseg {
	double x1, y1, x2, y2;
	uint64_t bytes;
};

static int by_guid(const void *a, const void *b)
{
	const struct lnode *p = a, *q = b;
	return p->guid < q->guid ? -1 : p->guid > q->guid;
}

static int by_level_x(const void *a, const void *b)
{
	const struct lnode *p = *(const struct lnode *const *)a, *q = *(const struct lnode *const *)b;
	if (p->level != q->level)
		return p->level - q->level;
	if (p->order != q->order)
		return p->order < q->order ? -1 : 1;
	if (p->x != q->x)
		return p->x < q->x ? -1 : 1;
	return p->guid < q->guid ? -1 : p->guid > q->guid;
}

static int by_place(const void *a, const void *b)
{
	const struct lseg *p = a, *q = b;
	if (p->x1 != q->x1)
		return p->x1 < q->x1 ? -1 : 1;
	if (p->y1 != q->y1)
		return p->y1 < q->y1 ? -1 : 1;
	if (p->x2 != q->x2)
		return p->x2 < q->x2 ? -1 : 1;
	if (p->y2 != q->y2)
		return p->y2 < q->y2 ? -1 : 1;
	return p->bytes < q->bytes ? -1 : p->bytes > q->bytes;
}

static int by_bytes(const void *a, const void *b)
{
	const struct lseg *p = a, *q = b;
	return p->bytes < q->bytes ? -1 : p->bytes > q->bytes;
}

static struct lnode *node_of(struct lnode *v, size_t n, uint64_t g)
{
	struct lnode key = { .guid = g };
	return bsearch(&key, v, n, sizeof(*v), by_guid);
}

struct hord {
	const char *name;
	long order;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct hord *)a)->name, ((const struct hord *)b)->name);
}

/* Every host's place in the hierarchy: depth-first through topod's tree
 * (sorted by name for lookups); NULL if the tree cannot be had. */
static struct hord *host_order(struct tq *q, size_t *n)
{
	tii_tree_t *tr = NULL;
	struct kids k;
	if (tii_get_tree(q->t, &tr) || kids_build(tr, &k)) {
		tii_tree_free(tr);
		return NULL;
	}
	struct hord *v = malloc((tr->nhosts ? tr->nhosts : 1) * sizeof(*v));
	size_t *stack = malloc((tr->nclusters + 1) * sizeof(*stack)), top = 0, m = 0;
	char **names = malloc((tr->nhosts ? tr->nhosts : 1) * sizeof(*names));
	for (size_t c = tr->nclusters; v && stack && names && c-- > 0;)
		if (tr->clusters[c].parent < 0)
			stack[top++] = c;
	while (v && stack && names && top) {
		size_t c = stack[--top];
		for (size_t i = k.hfirst[c]; i < k.hfirst[c + 1]; i++)
			if ((names[m] = strdup(tr->hosts[k.hidx[i]].name)) != NULL)
				v[m].name = names[m], v[m].order = (long)m, m++;
		for (size_t i = k.cfirst[c + 1]; i-- > k.cfirst[c];)   /* the first child on top */
			stack[top++] = k.cidx[i];
	}
	free(stack);
	kids_free(&k);
	tii_tree_free(tr);
	if (!v || !names) {
		for (size_t i = 0; names && i < m; i++)
			free(names[i]);
		free(v);
		free(names);
		return NULL;
	}
	free(names);   /* v[i].name owns the strings now */
	qsort(v, m, sizeof(*v), by_name);
	*n = m;
	return v;
}

struct lplot {
	struct lnode *v;   /* every end of a loaded cable, by GUID */
	size_t nv;
	struct lseg *s;    /* one per cable (per column pair when hosts are grouped) */
	size_t ns;
	int maxl, ncols, perleaf;
	size_t nhosts;
};

/* The nodes: both ends of every loaded cable whose levels are known. */
static int load_nodes(const tii_load_t *l, struct lplot *p)
{
	p->v = calloc(2 * l->nlinks + 1, sizeof(*p->v));
	if (!p->v)
		return -1;
	for (size_t i = 0; i < l->nlinks; i++) {
		const struct tii_load_link *k = &l->links[i];
		if (k->from == TII_LOAD_LEVEL_NONE || k->to == TII_LOAD_LEVEL_NONE || !k->head)
			continue;
		p->v[p->nv++] = (struct lnode){ .guid = k->guid, .level = k->from };
		p->v[p->nv++] = (struct lnode){ .guid = k->head, .level = k->to };
	}
	qsort(p->v, p->nv, sizeof(*p->v), by_guid);
	size_t m = 0;
	for (size_t i = 0; i < p->nv; i++)
		if (!m || p->v[m - 1].guid != p->v[i].guid)
			p->v[m++] = p->v[i];
	p->nv = m;
	for (size_t i = 0; i < m; i++) {
		if (p->v[i].level > p->maxl)
			p->maxl = p->v[i].level;
		p->v[i].order = -1;
		p->v[i].n = 0;
	}
	return 0;
}

/* Hosts in hierarchy order along x: one column each, or one per leaf. */
static void load_columns(const tii_load_t *l, struct lplot *p, struct lnode **byx, const struct hord *ho, size_t nho)
{
	for (size_t i = 0; i < p->nv; i++) {
		struct lnode *h = &p->v[i];
		if (h->level)
			continue;
		h->name = load_host(l, h->guid);
		struct hord key = { h->name ? h->name : "", 0 }, *f = ho ? bsearch(&key, ho, nho, sizeof(*ho), by_name) : NULL;
		h->order = f ? f->order : LONG_MAX;   /* unknown to the tree: last */
		p->nhosts++;
	}
	for (size_t i = 0; i < l->nlinks; i++)
		if (l->links[i].from == 0 && l->links[i].to == 1) {
			struct lnode *h = node_of(p->v, p->nv, l->links[i].guid);
			if (h)
				h->leaf = node_of(p->v, p->nv, l->links[i].head);
		}
	for (size_t i = 0; i < p->nv; i++)
		byx[i] = &p->v[i];
	qsort(byx, p->nv, sizeof(*byx), by_level_x);
	p->perleaf = p->nhosts > PIC_COLUMNS_EACH;
	for (size_t i = 0; i < p->nhosts; i++) {
		struct lnode *h = byx[i], *leaf = p->perleaf ? h->leaf : NULL;
		if (leaf && leaf->n) {
			h->x = leaf->x;   /* the leaf's column, given by its first host */
			continue;
		}
		h->x = p->ncols++;
		if (leaf)
			leaf->x = h->x, leaf->n = 1;
	}
}

/* Switches above the mean position of what they connect below, then
 * spread: halfway between that and even spacing, so no two coincide and
 * the order along x stays the hierarchy's. */
static void load_place(const tii_load_t *l, struct lplot *p, struct lnode **byx)
{
	for (int L = 1; L <= p->maxl; L++) {
		for (size_t i = 0; i < p->nv; i++)
			if (p->v[i].level == L)
				p->v[i].sum = 0, p->v[i].n = 0;
		for (size_t i = 0; i < l->nlinks; i++) {
			const struct tii_load_link *k = &l->links[i];
			int up = k->to == L && k->from == L - 1, down = k->from == L && k->to == L - 1;
			if (!k->head || (!up && !down))
				continue;
			struct lnode *a = node_of(p->v, p->nv, up ? k->head : k->guid);
			struct lnode *b = node_of(p->v, p->nv, up ? k->guid : k->head);
			if (a && b)
				a->sum += b->x, a->n++;
		}
		size_t first = p->nv, n = 0;
		for (size_t i = 0; i < p->nv; i++) {
			struct lnode *s = byx[i];
			if (s->level != L)
				continue;
			first = first < i ? first : i;
			n++;
			s->order = 0;
			s->x = s->n ? s->sum / (double)s->n : (p->ncols - 1) / 2.0;
		}
		if (!n)
			continue;
		qsort(byx + first, n, sizeof(*byx), by_level_x);
		for (size_t i = 0; i < n; i++)
			byx[first + i]->x = 0.5 * byx[first + i]->x + 0.5 * ((i + 0.5) * p->ncols / (double)n - 0.5);
	}
}

/* One segment per cable, drawn from its lower end; the busier direction's
 * bytes; cables that meet in the same columns merged (their maximum). */
static int load_segments(const tii_load_t *l, struct lplot *p)
{
	p->s = malloc((l->nlinks + 1) * sizeof(*p->s));
	if (!p->s)
		return -1;
	for (size_t i = 0; i < l->nlinks; i++) {
		const struct tii_load_link *k = &l->links[i];
		struct lnode *a = k->head ? node_of(p->v, p->nv, k->guid) : NULL;
		struct lnode *b = a ? node_of(p->v, p->nv, k->head) : NULL;
		if (!b)
			continue;
		if (a->level > b->level || (a->level == b->level && a->x > b->x)) {
			struct lnode *t = a;
			a = b;
			b = t;
		}
		p->s[p->ns++] = (struct lseg){ a->x, a->level, b->x, b->level, k->bytes };
	}
	qsort(p->s, p->ns, sizeof(*p->s), by_place);
	size_t m = 0;
	for (size_t i = 0; i < p->ns; i++) {
		if (m && !memcmp(&p->s[m - 1], &p->s[i], 4 * sizeof(double)))
			m--;   /* sorted by bytes within a place: the last is the busiest */
		p->s[m++] = p->s[i];
	}
	p->ns = m;
	qsort(p->s, p->ns, sizeof(*p->s), by_bytes);   /* the busiest drawn last, on top */
	return 0;
}

static const char *gp_terminal(enum pic_fmt f)
{
	return f == PIC_PNG ? "pngcairo" : f == PIC_PDF ? "pdfcairo" : "svg";
}

/* "set terminal ..." for w x h pixels (PDF: the same size in points). */
static void gp_head(FILE *g, enum pic_fmt f, int w, int h, const char *out)
{
	if (f == PIC_PDF)
		fprintf(g, "set terminal pdfcairo size %.2fin,%.2fin font 'Helvetica,9'\n", w / 72.0, h / 72.0);
	else
		fprintf(g, "set terminal %s size %d,%d font 'Helvetica,%d' background rgb 'white'\n", gp_terminal(f), w,
			h, f == PIC_PNG ? 10 : 11);
	fputs("set output '", g);
	gp_str(g, out);
	fputs("'\nset encoding utf8\n", g);
}

/* The name a switch is labelled with: topod's (libtii 1.3), else L<level>:<GUID's last 4 hex>. */
static void switch_label(char *buf, size_t n, const struct lnode *s, const void *names, size_t nnames)
{
#if TII_VERSION_MINOR >= 3
	const char *nm = tii_switch_name_of(names, nnames, s->guid);
	if (nm) {
		snprintf(buf, n, "%s", nm);
		return;
	}
#else
	(void)names;
	(void)nnames;
#endif
	snprintf(buf, n, "L%d:%04" PRIx64, s->level, s->guid & 0xffff);
}

static void load_script(FILE *g, const struct lplot *p, struct lnode *const *byx, const tii_load_t *l,
			const char *title, const void *names, size_t nnames)
{
	/* x tics: every host, or every step-th leaf column by its first host */
	int step = p->ncols <= 64 ? 1 : (p->ncols + 31) / 32;
	fputs("set xtics (", g);
	for (size_t i = 0, last = (size_t)-1, nt = 0; i < p->nhosts; i++) {
		size_t c = (size_t)byx[i]->x;
		if (c == last || c % (size_t)step)
			continue;
		last = c;
		fprintf(g, "%s'", nt++ ? ", " : "");
		gp_str(g, byx[i]->name ? byx[i]->name : "?");
		fprintf(g, "%s' %zu", p->perleaf ? "..." : "", c);
	}
	fputs(") rotate by 50 right font ',8' noenhanced\nset ytics (", g);
	for (int L = 0; L <= p->maxl; L++)
		fprintf(g, "%s'%s' %d", L ? ", " : "", !L ? (p->perleaf ? "hosts (per leaf)" : "hosts")
						      : L == 1 ? "leaf switches" : L == p->maxl ? "top switches" : "switches", L);
	fprintf(g, ")\nset xrange [%.2f:%.2f]\nset yrange [-0.4:%.2f]\nunset mxtics\nunset mytics\n", -1.0,
		(double)p->ncols, p->maxl + 0.6);
	fputs("set title '", g);
	gp_str(g, title);
	fputs("' noenhanced\n", g);
	fprintf(g, "set palette defined (0 '#fdd49e', 0.35 '#fc8d59', 0.7 '#d7301f', 1 '#7f0000')\n"
		   "set cbrange [0:%" PRIu64 "]\nset format cb '%%.1s %%cB'\n"
		   "set cblabel 'bytes on the busier direction of a cable'\n"
		   "set key outside below horizontal noenhanced\nset border 3\nset tics nomirror\n",
		l->max_bytes ? l->max_bytes : 1);
	fputs("$seg << EOD\n", g);
	for (size_t i = 0; i < p->ns; i++)
		fprintf(g, "%.3f %.0f %.3f %.0f %" PRIu64 "\n", p->s[i].x1, p->s[i].y1, p->s[i].x2 - p->s[i].x1,
			p->s[i].y2 - p->s[i].y1, p->s[i].bytes);
	fputs("EOD\n$sw << EOD\n", g);
	size_t per[64] = { 0 };
	for (size_t i = 0; i < p->nv; i++)
		per[p->v[i].level < 64 ? p->v[i].level : 63]++;
	for (size_t i = p->nhosts; i < p->nv; i++) {
		char nm[TII_NAME_MAX + 16] = "";
		if (per[byx[i]->level < 64 ? byx[i]->level : 63] <= 24)
			switch_label(nm, sizeof(nm), byx[i], names, nnames);
		fprintf(g, "%.3f %d \"", byx[i]->x, byx[i]->level);
		gp_str(g, nm);   /* names are [A-Za-z0-9._-] or GUIDs: no '"' to escape */
		fputs("\"\n", g);
	}
	fputs("EOD\n$host << EOD\n", g);
	for (size_t i = 0; i < p->nhosts; i++)
		fprintf(g, "%.0f 0\n", byx[i]->x);
	double lw = p->ncols > 150 ? 0.7 : p->ncols > 40 ? 1.2 : 2.0, ps = p->ncols > 150 ? 0.5 : 1.0;
	fprintf(g, "EOD\nplot $seg using 1:2:3:4:5 with vectors nohead lw %.1f lc palette title 'cable carrying the job (colour: bytes)', \\\n"
		   "  $host using 1:2 with points pt 7 ps %.1f lc rgb '#444444' title '%s', \\\n"
		   "  $sw using 1:2 with points pt 5 ps %.1f lc rgb '#2b4c7e' title 'switch', \\\n"
		   "  $sw using 1:2:3 with labels rotate by 30 left offset 0.6,0.6 font ',8' noenhanced notitle\n",
		lw, ps, p->perleaf ? "hosts of the job on one leaf (a column)" : "host", ps);
}

int pic_load_plot(struct tq *q, const tii_load_t *l, const char *title)
{
	enum pic_fmt f = pic_format(q->plot);
	if (f == PIC_BAD || f == PIC_DOT)
		return tq_usage_error("load --plot %s: FILE.svg, .png or .pdf (--dot FILE for graphviz text)", q->plot);
	int status = need_tool("load --plot", "gnuplot", "gnuplot");
	if (status)
		return status;
	struct lplot p = { 0 };
	size_t nho = 0;
	struct hord *ho = host_order(q, &nho);
	struct lnode **byx = NULL;
	if (load_nodes(l, &p) || !(byx = malloc((p.nv + 1) * sizeof(*byx)))) {
		status = tq_nomem();
		goto out;
	}
	load_columns(l, &p, byx, ho, nho);
	load_place(l, &p, byx);
	if (load_segments(l, &p)) {
		status = tq_nomem();
		goto out;
	}
	void *names = NULL;
	size_t nnames = 0;
#if TII_VERSION_MINOR >= 3
	struct tii_switch_name *sn = NULL;
	if (!tii_get_switch_names(q->t, &sn, &nnames))
		names = sn;
#endif
	char tmp[4096], full[400];
	FILE *g = tmp_open(tmp, sizeof(tmp));
	if (!g) {
		status = EXIT_ERROR;
	} else {
		snprintf(full, sizeof(full), "%s\nbusiest cable %" PRIu64 " bytes%s", title, l->max_bytes,
			 l->time_s >= 0 ? "; predicted time " : "");
		if (l->time_s >= 0)
			snprintf(full + strlen(full), sizeof(full) - strlen(full), "%.1f us (cost model)", l->time_s * 1e6);
		int w = 300 + 10 * p.ncols;
		gp_head(g, f, w < 900 ? 900 : w > 1800 ? 1800 : w, 640, q->plot);
		load_script(g, &p, byx, l, full, names, nnames);
		if (fclose(g)) {
			fprintf(stderr, "topoquery: %s: %s\n", tmp, strerror(errno));
			status = EXIT_ERROR;
		} else {
			char *argv[] = { "gnuplot", tmp, NULL };
			status = run_tool("load --plot", argv);
		}
		unlink(tmp);
	}
#if TII_VERSION_MINOR >= 3
	tii_switch_names_free(sn, nnames);
#endif
out:
	for (size_t i = 0; ho && i < nho; i++)
		free((char *)ho[i].name);
	free(ho);
	free(byx);
	free(p.v);
	free(p.s);
	return status;
}

/* ---- schedule --plot ---------------------------------------------------------------- */

static double mean_conflicts(const tii_schedule_t *s)
{
	double t = 0;
	for (int i = 0; i < s->nsteps; i++)
		t += s->steps[i].fabric_conflicts;
	return s->nsteps ? t / s->nsteps : 0;
}

int pic_schedule_plot(struct tq *q, tii_schedule_t *const *s, const char *const *label, int n)
{
	enum pic_fmt f = pic_format(q->plot);
	if (f == PIC_BAD || f == PIC_DOT)
		return tq_usage_error("schedule --plot %s: FILE.svg, .png or .pdf", q->plot);
	int status = need_tool("schedule --plot", "gnuplot", "gnuplot");
	if (status)
		return status;
	char tmp[4096];
	FILE *g = tmp_open(tmp, sizeof(tmp));
	if (!g)
		return EXIT_ERROR;
	int steps = 1, ymax = 1, nranks = 0;
	for (int a = 0; a < n; a++)
		for (int i = 0; s[a] && i < s[a]->nsteps; i++) {
			steps = s[a]->nsteps > steps ? s[a]->nsteps : steps;
			ymax = s[a]->steps[i].fabric_conflicts > ymax ? s[a]->steps[i].fabric_conflicts : ymax;
			nranks = s[a]->nranks;
		}
	gp_head(g, f, 960, 520, q->plot);
	fprintf(g, "set title 'All-to-all of %d ranks: switch-to-switch cables shared by two or more host pairs, "
		   "per step' noenhanced\n"
		   "set xlabel 'step'\nset ylabel 'cables shared (Subramoni 2013, Fig. 6.5)'\n"
		   "set key outside top center horizontal noenhanced\nset grid\nset border 3\nset tics nomirror\n",
		nranks);
	/* the lines clear of the frame: half a step either side, 8% above the highest */
	fprintf(g, "set xrange [-0.5:%.1f]\nset yrange [%.2f:%.2f]\n", steps - 0.5, -0.04 * ymax - 0.3,
		ymax * 1.08 + 0.3);
	for (int a = 0; a < n; a++) {
		if (!s[a])
			continue;
		fprintf(g, "$d%d << EOD\n", a);
		for (int i = 0; i < s[a]->nsteps; i++)
			fprintf(g, "%d %d\n", i, s[a]->steps[i].fabric_conflicts);
		fprintf(g, "EOD\n");
	}
	fputs("plot ", g);
	for (int a = 0, first = 1; a < n; a++) {
		if (!s[a])
			continue;
		/* dash and width differ: equal schedules draw over each other */
		fprintf(g, "%s$d%d with steps lw %d dt %d title '", first ? "" : ", ", a, 4 - a % 3, a % 3 + 1);
		gp_str(g, label[a]);
		fprintf(g, ": %d steps, mean %.2f'", s[a]->nsteps, mean_conflicts(s[a]));
		first = 0;
	}
	fputc('\n', g);
	if (fclose(g)) {
		fprintf(stderr, "topoquery: %s: %s\n", tmp, strerror(errno));
		status = EXIT_ERROR;
	} else {
		char *argv[] = { "gnuplot", tmp, NULL };
		status = run_tool("schedule --plot", argv);
	}
	unlink(tmp);
	return status;
}
