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
 * The texts are short (the caller sends at most a few hundred tokens each): every pair of positions is compared,
 * each comparison reading at most four tokens. Returns 0, or -1 when memory runs out.
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
    /* in_answer[n][i]: how many times the n-gram at i is in the answer; later[n][i]: it is also at an earlier
     * place (only its first place counts it); in_reference[(n * na + i) * nrefs + k]: how many times in
     * reference k. */
    size_t cells = (size_t)ORDERS * (size_t)(na > 0 ? na : 1);
    int32_t *in_answer = calloc(cells, sizeof(int32_t));
    char *later = calloc(cells, 1);
    int32_t *in_reference = calloc(cells * (size_t)(nrefs > 0 ? nrefs : 1), sizeof(int32_t));
    int32_t *row = malloc((size_t)(longest + 1) * sizeof(int32_t));
    if (!in_answer || !later || !in_reference || !row) {
        free(in_answer); free(later); free(in_reference); free(row);
        return -1;
    }
    for (int32_t i = 0; i < na; i++) {
        int most = smaller(ORDERS, na - i);
        for (int n = 0; n < most; n++) in_answer[n * na + i] += 1;  /* itself */
        for (int32_t j = i + 1; j < na; j++) {
            int same = run_length(a + i, a + j, smaller(most, na - j));
            for (int n = 0; n < same; n++) {
                in_answer[n * na + i] += 1;
                in_answer[n * na + j] += 1;
                later[n * na + j] = 1;
            }
        }
        if (a[i] == 0) continue;  /* no reference holds it */
        for (int32_t k = 0; k < nrefs; k++) {
            for (int32_t j = starts[k]; j < starts[k + 1]; j++) {
                int same = run_length(a + i, r + j, smaller(most, starts[k + 1] - j));
                for (int n = 0; n < same; n++) in_reference[((size_t)n * na + i) * nrefs + k] += 1;
            }
        }
    }
    memset(out, 0, (size_t)(ORDERS + 3 * nrefs) * sizeof(int32_t));
    for (int n = 0; n < ORDERS; n++) {
        for (int32_t i = 0; i < na; i++) {
            if (later[n * na + i]) continue;
            int32_t mine = in_answer[n * na + i], largest = 0;
            const int32_t *theirs = in_reference + ((size_t)n * na + i) * nrefs;
            for (int32_t k = 0; k < nrefs; k++) {
                if (theirs[k] > largest) largest = theirs[k];
                if (n < 2) out[ORDERS + 3 * k + n] += smaller(mine, theirs[k]);
            }
            out[n] += smaller(mine, largest);
        }
    }
    for (int32_t k = 0; k < nrefs; k++)
        out[ORDERS + 3 * k + 2] = common_subsequence(a, na, r + starts[k], starts[k + 1] - starts[k], row);
    free(in_answer); free(later); free(in_reference); free(row);
    return 0;
}
