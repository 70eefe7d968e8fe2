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

/* Scores are passed over a block at a time, most blocks having none at the cut: one comparison of them all (compiled
 * without a branch per score) tells. */
#define BLOCK 16

/* Whether any of the BLOCK scores is at least `low`. */
static int reaches(const float *scores, float low) {
    int any = 0;
    for (int j = 0; j < BLOCK; j++) any |= scores[j] >= low;
    return any;
}

/* The best chunks for a query. `index`: the addresses of the compressed sparse column arrays data, indices and
 * indptr, then their number of columns and the number of chunks (num_docs). `io` holds on entry the query's `nterms`
 * term ids (an id that is no column's matches nothing), and has room for k rows after them; on return the best
 * chunks' rows follow the ids, best first, and `scores` (room for 3 * k) holds their normalised scores from
 * scores[0], their raw scores rounded from scores[k] and their normalised scores rounded from scores[2 * k]. Their
 * number is returned, or -1 when memory runs out. */
int64_t evalcore_bm25_best(const int64_t *index, int64_t *io, int64_t nterms, double threshold, int64_t k,
                           double *scores) {
    const float *data = (const float *)index[0];
    const int32_t *indices = (const int32_t *)index[1];
    const int64_t *indptr = (const int64_t *)index[2];
    const int64_t columns = index[3], num_docs = index[4], *terms = io;
    int64_t *found_rows = io + nterms;
    double *norms = scores, *raws_rounded = scores + k, *norms_rounded = scores + 2 * k;
    if (num_docs <= 0 || k <= 0) return 0;
    float *sums = calloc((size_t)num_docs, sizeof(float));
    if (!sums) return -1;
    for (int64_t t = 0; t < nterms; t++) {
        if (terms[t] < 0 || terms[t] >= columns) continue;
        const int64_t end = indptr[terms[t] + 1];
        for (int64_t j = indptr[terms[t]]; j < end; j++) sums[indices[j]] += data[j];
    }
    const float top = largest(sums, num_docs);
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
            if (i % BLOCK == 0 && i + BLOCK <= num_docs && !reaches(sums + i, low)) {
                i += BLOCK - 1;
                continue;
            }
            const float raw = sums[i];
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
    free(sums);
    return found;
}
