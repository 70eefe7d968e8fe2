/* BM25 retrieval's best chunks for a query in one call (see bm25.py, which calls it, and whose `Bm25Index.scores`
 * with retrievers.py's `_bm25_top` and `_bm25_hits` give the same in numpy).
 *
 * A chunk's raw score is the sum, term after term in the query's order, of the term's precomputed score for the
 * chunk, added in single precision to +0.0: numpy's float32 additions in the same order (where numpy adds a frequent
 * term's whole row, zeros included, adding +0.0 leaves a sum as it is: a sum from +0.0 is never -0.0). The chunks
 * kept are those with a positive raw score whose normalised score (raw / the top raw score, divided in single
 * precision) is at least the threshold rounded to single precision (as numpy compares a float32 array with a Python
 * float); the best `k` by (-normalised score, row). Each comes back with its normalised score, and its raw and normalised scores rounded to 6 decimals as
 * Python's round() gives them: rint(value * 10^6) / 10^6 in double precision (a single precision value times 10^6
 * is exact in double precision, rint rounds half to even).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The largest of n > 0 scores, over eight running maxima (one would wait on each comparison before the next). */
static float largest(const float *scores, int64_t n) {
    float top[8];
    for (int j = 0; j < 8; j++) top[j] = scores[0];
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) top[j] = scores[i + j] > top[j] ? scores[i + j] : top[j];
    for (; i < n; i++) top[0] = scores[i] > top[0] ? scores[i] : top[0];
    for (int j = 1; j < 8; j++) top[0] = top[j] > top[0] ? top[j] : top[0];
    return top[0];
}

/* The best chunks for the `nterms` term ids `terms` (columns of the compressed sparse column arrays data, indices,
 * indptr, `columns` of them, over num_docs chunks; an id that is no column's matches nothing): their rows into
 * found_rows, best first, their normalised scores into norms, their raw and normalised scores rounded into
 * raws_rounded and norms_rounded (each with room for k); their number is returned, or -1 when memory runs out. */
int64_t evalcore_bm25_best(const float *data, const int32_t *indices, const int64_t *indptr, int64_t columns,
                           int64_t num_docs, const int64_t *terms, int64_t nterms, double threshold, int64_t k, int64_t *found_rows,
                           double *norms, double *raws_rounded, double *norms_rounded) {
    if (num_docs <= 0 || k <= 0) return 0;
    float *scores = calloc((size_t)num_docs, sizeof(float));
    if (!scores) return -1;
    for (int64_t t = 0; t < nterms; t++) {
        if (terms[t] < 0 || terms[t] >= columns) continue;
        const int64_t end = indptr[terms[t] + 1];
        for (int64_t j = indptr[terms[t]]; j < end; j++) scores[indices[j]] += data[j];
    }
    const float top = largest(scores, num_docs);
    int64_t found = 0;
    if (top > 0) {
        const float least = (float)threshold;
        /* Under `cut` no raw score can make the list once divided (the division's rounding is far inside the margin):
         * at least the threshold, and once k are kept, over the k-th; the rows under it are not divided. It is
         * compared in single precision, rounded down. */
        const double margin = (double)top * (1.0 - 0x1p-20);
        double cut = margin * (double)least;
        float low = (float)cut;
        if ((double)low > cut) low = nextafterf(low, -INFINITY);
        for (int64_t i = 0; i < num_docs; i++) {
            const float raw = scores[i];
            if (raw < low || !(raw > 0)) continue;
            const float norm = raw / top;
            if (!(norm >= least) || (found == k && !(norm > norms[k - 1]))) continue;
            /* A later row ranks after an equal score: it is placed after every score not under its own. */
            int64_t at = found < k ? found++ : k - 1;
            for (; at > 0 && norms[at - 1] < norm; at--) {
                found_rows[at] = found_rows[at - 1], norms[at] = norms[at - 1];
                raws_rounded[at] = raws_rounded[at - 1];
            }
            found_rows[at] = i, norms[at] = norm, raws_rounded[at] = raw;
            if (found == k && margin * norms[k - 1] > cut) {
                cut = margin * norms[k - 1];
                low = (float)cut;
                if ((double)low > cut) low = nextafterf(low, -INFINITY);
            }
        }
    }
    for (int64_t i = 0; i < found; i++) {
        raws_rounded[i] = rint(raws_rounded[i] * 1e6) / 1e6;
        norms_rounded[i] = rint(norms[i] * 1e6) / 1e6;
    }
    free(scores);
    return found;
}
