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
 * some reference holds is compared with the places of the answer and of the references holding the same token, each
 * comparison reading at most four tokens; the LCS is bit-parallel. Returns 0, or -1 when memory runs out.
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

/* The length of the longest common subsequence of x[0..nx) and y[0..ny) (ny > 0), bit-parallel (Hyyro 2004, as
 * bleu_rouge.py's `lcs_length`): bit j of `state` (ny bits, in 64-bit words) is cleared as y[j] joins the
 * subsequence. masks has room for `numbers` match masks of y (y's tokens are below `numbers`; a token of x at or
 * above it, or 0, matches nothing). */
static int32_t common_subsequence(const int32_t *x, int32_t nx, const int32_t *y, int32_t ny, int32_t numbers,
                                  uint64_t *masks, uint64_t *state) {
    int32_t words = (ny + 63) / 64;
    uint64_t top = ny % 64 ? (UINT64_C(1) << (ny % 64)) - 1 : ~UINT64_C(0);
    memset(masks, 0, (size_t)numbers * (size_t)words * sizeof(uint64_t));
    for (int32_t j = 0; j < ny; j++) masks[(size_t)y[j] * words + j / 64] |= UINT64_C(1) << (j % 64);
    for (int32_t w = 0; w < words; w++) state[w] = ~UINT64_C(0);
    state[words - 1] = top;
    for (int32_t i = 0; i < nx; i++) {
        if (x[i] <= 0 || x[i] >= numbers) continue;
        const uint64_t *match = masks + (size_t)x[i] * words;
        uint64_t carry = 0;
        for (int32_t w = 0; w < words; w++) {
            uint64_t old = state[w], low = old & match[w];
            uint64_t sum = old + low, with_carry = sum + carry;
            carry = (sum < old) | (with_carry < sum);
            state[w] = with_carry | (old & ~low);  /* old - low: low's bits are old's, so nothing borrows */
        }
        state[words - 1] &= top;
    }
    int32_t left = 0;
    for (int32_t w = 0; w < words; w++)
        for (uint64_t bits = state[w]; bits; bits &= bits - 1) left++;
    return ny - left;
}

int32_t evalcore_overlaps(const int32_t *a, int32_t na, const int32_t *r, const int32_t *starts, int32_t nrefs,
                          int32_t *out) {
    int32_t longest = 0, numbers = 1;
    for (int32_t k = 0; k < nrefs; k++)
        if (starts[k + 1] - starts[k] > longest) longest = starts[k + 1] - starts[k];
    for (int32_t j = 0; j < starts[nrefs]; j++)
        if (r[j] >= numbers) numbers = r[j] + 1;
    int32_t words = (longest + 63) / 64 + 1;  /* one more than the longest needs: never 0 */
    /* theirs[n * nrefs + k]: how many times the answer's n-gram at i is in reference k */
    int32_t *theirs = malloc((size_t)ORDERS * (size_t)(nrefs > 0 ? nrefs : 1) * sizeof(int32_t));
    uint64_t *masks = malloc((size_t)numbers * (size_t)words * sizeof(uint64_t));
    uint64_t *state = malloc((size_t)words * sizeof(uint64_t));
    if (!theirs || !masks || !state) {
        free(theirs); free(masks); free(state);
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
        if (starts[k + 1] > starts[k])
            out[ORDERS + 3 * k + 2] = common_subsequence(a, na, r + starts[k], starts[k + 1] - starts[k], numbers,
                                                         masks, state);
    free(theirs); free(masks); free(state);
    return 0;
}
