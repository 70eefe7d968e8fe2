/* The whole counts BLEU and ROUGE take from an answer and its references, in one call (see bleu_rouge.py, which
 * calls it, and whose `answer_scores` works out the same counts in Python where there is no compiled loop).
 *
 * Every token is a number: equal tokens, equal numbers; a reference's tokens are numbered from 1 and an answer's
 * token that no reference holds is 0 (it matches nothing). The answer is a[0..na), reference k is
 * r[starts[k]..starts[k + 1]) for k < nrefs. Into out (4 + 3 * nrefs integers):
 *   out[n - 1], n = 1..4: BLEU's clipped matches of order n: over the answer's distinct n-grams, the smaller of
 *                         its count in the answer and its largest count in one reference (sacreBLEU);
 *   out[4 + 3k]:          ROUGE-1's clipped overlap with reference k: over the answer's distinct unigrams, the
 *                         smaller of its counts in the two (rouge-score);
 *   out[5 + 3k]:          the same for bigrams (ROUGE-2);
 *   out[6 + 3k]:          the length of the longest common subsequence of the answer and reference k (ROUGE-L).
 * The texts are short (the caller sends at most a few hundred tokens each): each place of the answer whose token
 * some reference holds is compared with every other place of the answer and of the references, each comparison
 * reading at most four tokens. Returns 0, or -1 when memory runs out.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ORDERS 4

/* How many tokens from x and y are the same, at most `most`. */
static int run_length(const int32_t *x, const int32_t *y, int most) {
    int n = 0;
    while (n < most && x[n] == y[n]) n++;
    return n;
}

static int smaller(int x, int y) { return x < y ? x : y; }

/* The longest common subsequence of x[0..nx) and y[0..ny), one row of the table at a time. */
static int32_t common_subsequence(const int32_t *x, int32_t nx, const int32_t *y, int32_t ny, int32_t *row) {
    memset(row, 0, (size_t)(ny + 1) * sizeof(int32_t));
    for (int32_t i = 0; i < nx; i++) {
        int32_t diagonal = 0;  /* the previous row's value at j */
        for (int32_t j = 0; j < ny; j++) {
            int32_t above = row[j + 1];
            row[j + 1] = x[i] == y[j] ? diagonal + 1 : (above > row[j] ? above : row[j]);
            diagonal = above;
        }
    }
    return row[ny];
}

int32_t evalcore_overlaps(const int32_t *a, int32_t na, const int32_t *r, const int32_t *starts, int32_t nrefs,
                          int32_t *out) {
    int32_t longest = 0;
    for (int32_t k = 0; k < nrefs; k++)
        if (starts[k + 1] - starts[k] > longest) longest = starts[k + 1] - starts[k];
    /* theirs[n * nrefs + k]: how many times the answer's n-gram at i is in reference k */
    int32_t *theirs = malloc((size_t)ORDERS * (size_t)(nrefs > 0 ? nrefs : 1) * sizeof(int32_t));
    int32_t *row = malloc((size_t)(longest + 1) * sizeof(int32_t));
    if (!theirs || !row) {
        free(theirs); free(row);
        return -1;
    }
    memset(out, 0, (size_t)(ORDERS + 3 * nrefs) * sizeof(int32_t));
    for (int32_t i = 0; i < na; i++) {
        if (a[i] == 0) continue;  /* no reference holds it, nor any n-gram starting with it */
        int most = smaller(ORDERS, na - i);
        /* mine[n]: how many times the n-gram at i is in the answer; earlier[n]: it is also at an earlier place
         * (only its first place counts it) */
        int32_t mine[ORDERS] = {1, 1, 1, 1};
        int earlier[ORDERS] = {0, 0, 0, 0};
        for (int32_t j = 0; j < na; j++) {
            if (a[j] != a[i] || j == i) continue;
            int same = run_length(a + i, a + j, smaller(most, na - j));
            for (int n = 0; n < same; n++) {
                mine[n] += 1;
                earlier[n] |= j < i;
            }
        }
        if (earlier[most - 1]) continue;  /* so were the shorter ones: every n-gram at i was counted earlier */
        memset(theirs, 0, (size_t)ORDERS * (size_t)nrefs * sizeof(int32_t));
        for (int32_t k = 0; k < nrefs; k++) {
            for (int32_t j = starts[k]; j < starts[k + 1]; j++) {
                if (r[j] != a[i]) continue;
                int same = run_length(a + i, r + j, smaller(most, starts[k + 1] - j));
                for (int n = 0; n < same; n++) theirs[n * nrefs + k] += 1;
            }
        }
        for (int n = 0; n < most; n++) {
            if (earlier[n]) continue;
            int32_t largest = 0;
            for (int32_t k = 0; k < nrefs; k++) {
                int32_t held = theirs[n * nrefs + k];
                if (held > largest) largest = held;
                if (n < 2) out[ORDERS + 3 * k + n] += smaller(mine[n], held);
            }
            out[n] += smaller(mine[n], largest);
        }
    }
    for (int32_t k = 0; k < nrefs; k++)
        out[ORDERS + 3 * k + 2] = common_subsequence(a, na, r + starts[k], starts[k + 1] - starts[k], row);
    free(theirs); free(row);
    return 0;
}
