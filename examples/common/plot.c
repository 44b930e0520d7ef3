/* The loss curve as a self-contained SVG (no plotting library): train loss per step as a
 * polyline, validation points as dots, and a dashed reference line (unigram entropy). */
#include <math.h>
#include <stdio.h>

#include "metrics.h"
#include "util.h"

#define W 720
#define H 420
#define ML 60 /* margins: left, right, top, bottom */
#define MR 20
#define MT 40
#define MB 50

/* Pixel coordinates of (step, loss). */
static double px(double step, int n) {
  return ML + (W - ML - MR) * (n > 1 ? step / n : 0.5);
}
static double py(double loss, double lo, double hi) {
  return MT + (H - MT - MB) * (1.0 - (loss - lo) / (hi - lo));
}

/* Axis frame, tick labels and legend. */
static void axes(FILE *f, int n, double lo, double hi, const char *title) {
  fprintf(f, "<rect x='%d' y='%d' width='%d' height='%d' fill='none' stroke='#444'/>\n", ML, MT,
          W - ML - MR, H - MT - MB);
  fprintf(f, "<text x='%d' y='24' font-size='16' font-family='sans-serif'>%s</text>\n", ML, title);
  for (int i = 0; i <= 5; i++) {
    double v = lo + (hi - lo) * i / 5.0, y = py(v, lo, hi);
    fprintf(f,
            "<text x='%d' y='%.1f' font-size='11' text-anchor='end' "
            "font-family='sans-serif'>%.2f</text>\n",
            ML - 6, y + 4, v);
    fprintf(f, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#ddd'/>\n", ML, W - MR, y, y);
    double s = n * i / 5.0;
    fprintf(f,
            "<text x='%.1f' y='%d' font-size='11' text-anchor='middle' "
            "font-family='sans-serif'>%.0f</text>\n",
            px(s, n), H - MB + 16, s);
  }
  fprintf(f,
          "<text x='%d' y='%d' font-size='12' text-anchor='middle' font-family='sans-serif'>"
          "step</text>\n",
          (ML + W - MR) / 2, H - 12);
  fprintf(f,
          "<text x='16' y='%d' font-size='12' font-family='sans-serif' "
          "transform='rotate(-90 16 %d)'>loss (nats)</text>\n",
          H / 2, H / 2);
}

int gpt2_plot_svg(const gpt2_metrics *m, const char *path, const char *title, double ref_nats) {
  if (m->n == 0) return 0;
  double lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < m->n; i++)
    if (isfinite(m->loss[i])) lo = fmin(lo, m->loss[i]), hi = fmax(hi, m->loss[i]);
  for (int i = 0; i < m->nval; i++)
    lo = fmin(lo, m->val_loss[i]), hi = fmax(hi, m->val_loss[i]);
  if (isfinite(ref_nats)) lo = fmin(lo, ref_nats), hi = fmax(hi, ref_nats);
  if (!(hi > lo)) hi = lo + 1.0;
  lo = floor(lo * 2) / 2, hi = ceil(hi * 2) / 2;
  FILE *f = fopen(path, "w");
  if (!f) return gpt2_fail("cannot write the plot %s", path);
  fprintf(f,
          "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d'>\n"
          "<rect width='100%%' height='100%%' fill='white'/>\n",
          W, H);
  axes(f, m->n, lo, hi, title);
  fprintf(f, "<polyline fill='none' stroke='#1f77b4' stroke-width='1.5' points='");
  for (int i = 0; i < m->n; i++)
    if (isfinite(m->loss[i])) fprintf(f, "%.1f,%.1f ", px(i + 1, m->n), py(m->loss[i], lo, hi));
  fprintf(f, "'/>\n");
  for (int i = 0; i < m->nval; i++)
    fprintf(f, "<circle cx='%.1f' cy='%.1f' r='3.5' fill='#d62728'/>\n", px(m->val_step[i], m->n),
            py(m->val_loss[i], lo, hi));
  if (isfinite(ref_nats))
    fprintf(f,
            "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#2ca02c' "
            "stroke-dasharray='6 4'/>\n",
            ML, W - MR, py(ref_nats, lo, hi), py(ref_nats, lo, hi));
  fprintf(f,
          "<text x='%d' y='%d' font-size='12' font-family='sans-serif' fill='#1f77b4'>train"
          "</text><text x='%d' y='%d' font-size='12' font-family='sans-serif' fill='#d62728'>"
          "val</text><text x='%d' y='%d' font-size='12' font-family='sans-serif' "
          "fill='#2ca02c'>unigram entropy</text>\n",
          W - 250, MT - 8, W - 200, MT - 8, W - 160, MT - 8);
  fprintf(f, "</svg>\n");
  return fclose(f) == 0 ? 0 : gpt2_fail("cannot write the plot %s", path);
}
