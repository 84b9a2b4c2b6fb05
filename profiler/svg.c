/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * svg.c - the report's pictures, written as SVG directly (no plotting
 * library at the end of an MPI job): the hop histogram (seed Figures 5.3,
 * 5.6, 7.2(b)), the rank-by-rank heatmap coloured by hops (Figure 7.2(e,f))
 * and the most loaded links. Colours follow the seed (7.3): red intra-host,
 * green 1 hop, blue 3 hops, pink 5, cyan 7.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "prof.h"

const char *prof_class_colour(int cls)
{
	static const char *const c[PROF_HOPS_MAX] = {
		"#d62728", "#2ca02c", "#bcbd22", "#1f77b4", "#8c564b", "#e377c2", "#9467bd", "#17becf",
		"#ff7f0e", "#7f7f7f", "#aec7e8", "#98df8a", "#ffbb78", "#c5b0d5", "#c49c94", "#dbdb8d",
	};
	return cls >= 0 && cls < PROF_HOPS_MAX ? c[cls] : "#555555";   /* unknown: dark grey */
}

static void human(uint64_t v, char *buf, size_t n)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = (double)v;
	int i = 0;
	while (d >= 1024 && i < 5) {
		d /= 1024;
		i++;
	}
	snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", d, u[i]);
}

static FILE *open_svg(const char *path, int w, int h, const char *title)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return NULL;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		   "font-family=\"sans-serif\" font-size=\"12\">\n"
		   "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		   "<text x=\"%d\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">%s</text>\n",
		w, h, w, h, w / 2, title);
	return f;
}

static int close_svg(FILE *f)
{
	fprintf(f, "</svg>\n");
	return fclose(f) ? -1 : 0;
}

/* a name for SVG text: no markup characters */
static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		default: fputc((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f ? *s : '?', f);
		}
}

int svg_hops(const struct prof_rep *R, const char *path)
{
	int cls[PROF_NCLASS], nc = 0;
	uint64_t max = 1;
	for (int c = 0; c < PROF_NCLASS; c++)
		if (R->byhop[c][0] || R->byhop[c][2]) {
			cls[nc++] = c;
			if (R->byhop[c][0] > max)
				max = R->byhop[c][0];
			if (R->byhop[c][2] > max)
				max = R->byhop[c][2];
		}
	int W = 160 + (nc ? nc : 1) * 110;
	const int H = 420, X0 = 90, Y0 = 50, PH = 280;
	if (W < 700)   /* room for the legend */
		W = 700;
	FILE *f = open_svg(path, W, H,
			   R->fab.ok ? "Bytes by switch hops" : "Bytes by switch hops (no fabric part: inter-host hops unknown)");
	if (!f)
		return -1;
	char lab[48];
	/* y axis, 5 ticks */
	for (int i = 0; i <= 4; i++) {
		double y = Y0 + PH - PH * i / 4.0;
		human((uint64_t)((double)max * i / 4.0), lab, sizeof(lab));
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
			   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			X0, y, W - 20, y, X0 - 6, y + 4, lab);
	}
	for (int i = 0; i < nc; i++) {
		int c = cls[i], x = X0 + 20 + i * 110;
		for (int k = 0; k < 2; k++) {
			uint64_t v = R->byhop[c][2 * k];
			double h = PH * (double)v / (double)max;
			fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"40\" height=\"%.1f\" fill=\"%s\" %s stroke=\"#333\"/>\n",
				x + k * 44, Y0 + PH - h, h, prof_class_colour(c), k ? "fill-opacity=\"0.45\"" : "");
		}
		prof_class_name(c, lab, sizeof(lab));
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x + 42, Y0 + PH + 18, lab);
	}
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", X0, Y0 + PH, W - 20, Y0 + PH);
	/* the legend in the first bar's colour, full and faded as the bars are */
	const char *lc = prof_class_colour(nc ? cls[0] : 0);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\" stroke=\"#333\"/>"
		   "<text x=\"%d\" y=\"%d\">left bar: point-to-point (measured)</text>\n"
		   "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\" fill-opacity=\"0.45\" stroke=\"#333\"/>"
		   "<text x=\"%d\" y=\"%d\">right bar, faded: collective (logical)</text>\n",
		X0, H - 50, lc, X0 + 20, H - 38, X0 + 260, H - 50, lc, X0 + 280, H - 38);
	char a[32], b[32];
	human(R->total[0], a, sizeof(a));
	human(R->total[2], b, sizeof(b));
	fprintf(f, "<text x=\"%d\" y=\"%d\">%d ranks on %d hosts; point-to-point %s, collective %s</text>\n", X0,
		H - 14, R->n, R->nh, a, b);
	return close_svg(f);
}

int svg_heatmap(const struct prof_rep *R, const char *path)
{
	const int G = R->grid, cs = G >= 256 ? 2 : G >= 128 ? 4 : G >= 32 ? 16 : 32;
	const int X0 = 70, Y0 = 50, S = G * cs, H = Y0 + S + 60;
	int W = X0 + S + 200;
	uint64_t max = 0;
	for (size_t i = 0; i < (size_t)G * G; i++) {
		uint64_t t = 0;
		for (int c = 0; c < PROF_NCLASS; c++)
			t += R->cell[i * PROF_NCLASS + c];
		if (t > max)
			max = t;
	}
	char title[160];
	snprintf(title, sizeof(title), "Bytes from sender to receiver rank, coloured by hops%s",
		 R->block > 1 ? " (blocks of ranks)" : "");
	/* wide enough for the title (15 px sans: under 9 px a character) */
	if (W < 40 + 9 * (int)strlen(title))
		W = 40 + 9 * (int)strlen(title);
	FILE *f = open_svg(path, W, H, title);
	if (!f)
		return -1;
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\" stroke=\"#999\"/>\n", X0, Y0, S, S);
	int seen[PROF_NCLASS] = { 0 };
	for (int a = 0; a < G; a++)
		for (int b = 0; b < G; b++) {
			const uint64_t *cl = R->cell + ((size_t)a * G + b) * PROF_NCLASS;
			uint64_t t = 0, best = 0;
			int bc = 0;
			for (int c = 0; c < PROF_NCLASS; c++) {
				t += cl[c];
				if (cl[c] > best)
					best = cl[c], bc = c;
			}
			if (!t)
				continue;
			seen[bc] = 1;
			/* intensity relative to the busiest pair (seed 7.3), on a log
			 * scale so that a stencil's halo next to a bulk transfer shows */
			double v = 0.35 + 0.65 * log1p((double)t) / log1p((double)max);
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" fill-opacity=\"%.2f\"/>\n",
				X0 + b * cs, Y0 + a * cs, cs, cs, prof_class_colour(bc), v);
		}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">receiver rank (0 .. %d)</text>\n", X0 + S / 2,
		Y0 + S + 20, R->n - 1);
	fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" text-anchor=\"middle\">sender rank (0 .. %d)</text>\n",
		X0 - 12, Y0 + S / 2, R->n - 1);
	int ly = Y0;
	char lab[32];
	/* each class as the cells show it: its faintest, middle and darkest shade */
	for (int c = 0; c < PROF_NCLASS; c++) {
		if (!seen[c])
			continue;
		for (int k = 0; k < 3; k++)
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"14\" fill=\"%s\" fill-opacity=\"%.2f\"/>",
				X0 + S + 16 + 10 * k, ly, prof_class_colour(c), 0.35 + 0.325 * k);
		fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", X0 + S + 52, ly + 12,
			prof_class_name(c, lab, sizeof(lab)));
		ly += 20;
	}
	human(max, lab, sizeof(lab));
	fprintf(f, "<text x=\"%d\" y=\"%d\">faint to dark: log bytes,</text>\n", X0 + S + 16, ly + 14);
	fprintf(f, "<text x=\"%d\" y=\"%d\">darkest: %s</text>\n", X0 + S + 16, ly + 30, lab);
	ly += 16;
	if (R->block > 1)
		fprintf(f, "<text x=\"%d\" y=\"%d\">%d ranks per cell</text>\n", X0 + S + 16, ly + 32, R->block);
	return close_svg(f);
}

int svg_links(const struct prof_rep *R, const char *path)
{
	const struct prof_fabric *F = &R->fab;
	size_t n = F->links_ok ? F->nlinks : 0;
	const int X0 = 360, W = X0 + 470, H = 80 + (int)(n ? n : 1) * 24 + 30;
	FILE *f = open_svg(path, W, H, "Most loaded links (point-to-point + logical collective bytes)");
	if (!f)
		return -1;
	if (!n) {
		fprintf(f, "<text x=\"20\" y=\"70\">no link loads: ");
		xml_text(f, F->links_ok ? "no inter-host traffic" : F->links_why);
		fprintf(f, "</text>\n");
		return close_svg(f);
	}
	uint64_t max = F->links[0].bytes ? F->links[0].bytes : 1;
	char lab[32];
	for (size_t i = 0; i < n; i++) {
		const struct prof_link *L = &F->links[i];
		int y = 50 + (int)i * 24;
		double w = 300.0 * (double)L->bytes / (double)max;
		/* host cables (first or last hop) in the leaf colour, switch-to-switch links darker */
		const char *col = (L->from_host >= 0 || L->to_host >= 0) ? "#2ca02c" : "#1f77b4";
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-family=\"monospace\" font-size=\"11\">", X0 - 8,
			y + 14);
		xml_text(f, L->from);
		fputs(" -&gt; ", f);
		xml_text(f, L->to);
		human(L->bytes, lab, sizeof(lab));
		fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"18\" fill=\"%s\"/>"
			   "<text x=\"%.1f\" y=\"%d\">%s, %" PRIu64 " pairs</text>\n",
			X0, y, w, col, X0 + w + 6, y + 14, lab, L->pairs);
	}
	fprintf(f, "<text x=\"20\" y=\"%d\">%zu of %zu loaded links; green: a host's cable, blue: between switches</text>\n",
		H - 12, n, F->links_total);
	return close_svg(f);
}

int svg_hosts(const struct prof_rep *R, const char *path)
{
	/* up to 128 bars, one per host; beyond that one per block of hosts */
	const int nb_max = 128, blk = (R->nh + nb_max - 1) / nb_max, nb = (R->nh + blk - 1) / blk;
	const int bw = nb <= 16 ? 36 : nb <= 64 ? 12 : 6, X0 = 90, Y0 = 50, PH = 280;
	int W = X0 + nb * bw + 190;
	if (W < 620)
		W = 620;
	const int H = Y0 + PH + 90;
	uint64_t max = 1;
	int seen[PROF_NCLASS] = { 0 };
	for (int b = 0; b < nb; b++) {
		uint64_t t = 0;
		for (int h = b * blk; h < (b + 1) * blk && h < R->nh; h++)
			for (int c = 0; c < PROF_NCLASS; c++) {
				t += R->hostcls[(size_t)h * PROF_NCLASS + c];
				seen[c] |= R->hostcls[(size_t)h * PROF_NCLASS + c] != 0;
			}
		if (t > max)
			max = t;
	}
	char title[128], lab[48];
	snprintf(title, sizeof(title), "Bytes each host sent, by switch hops%s", blk > 1 ? " (blocks of hosts)" : "");
	FILE *f = open_svg(path, W, H, title);
	if (!f)
		return -1;
	for (int i = 0; i <= 4; i++) {
		double y = Y0 + PH - PH * i / 4.0;
		human((uint64_t)((double)max * i / 4.0), lab, sizeof(lab));
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
			   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			X0, y, X0 + nb * bw, y, X0 - 6, y + 4, lab);
	}
	for (int b = 0; b < nb; b++) {
		double y = Y0 + PH;
		for (int c = 0; c < PROF_NCLASS; c++) {
			uint64_t v = 0;
			for (int h = b * blk; h < (b + 1) * blk && h < R->nh; h++)
				v += R->hostcls[(size_t)h * PROF_NCLASS + c];
			if (!v)
				continue;
			double hgt = PH * (double)v / (double)max;
			y -= hgt;
			fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"/>\n", X0 + b * bw + 1, y,
				bw - 2, hgt, prof_class_colour(c));
		}
		if (nb <= 16) {   /* names fit under the bars, turned */
			fprintf(f, "<text transform=\"translate(%d,%d) rotate(-45)\" text-anchor=\"end\" font-size=\"10\">",
				X0 + b * bw + bw / 2, Y0 + PH + 12);
			xml_text(f, R->hostname[b]);
			fputs("</text>\n", f);
		}
	}
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", X0, Y0 + PH, X0 + nb * bw,
		Y0 + PH);
	int ly = Y0;
	for (int c = 0; c < PROF_NCLASS; c++) {
		if (!seen[c])
			continue;
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
			X0 + nb * bw + 20, ly, prof_class_colour(c), X0 + nb * bw + 40, ly + 12,
			prof_class_name(c, lab, sizeof(lab)));
		ly += 20;
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\">point-to-point + logical collective bytes; hosts in order of their first rank%s</text>\n",
		20, H - 10, blk > 1 ? "" : "");
	return close_svg(f);
}
