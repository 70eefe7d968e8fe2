/* The bootstrap's resamples counted straight from the generator's words (see stats.py, which
 * holds the same draws in numpy, `bounded_draws`, and says how numpy draws them).
 *
 * A draw below n takes the stream's next 32-bit half word w (a 64-bit word's low half first):
 * w is rejected when the low half of w * n falls below 2^32 mod n, else the draw is the high
 * half. Draw d of a block counts once in counts[d]'s row (d / n) at its value's column: the
 * numbers numpy's integers(0, n) hands out, counted as bincount counts them.
 */
#include <stdint.h>

enum { HALF, DONE };

/* Count draws into counts (rows of n) until `draws` are done or the words run out; `state`
 * holds the next half word to take and the draws done so far, and is left where it stopped. */
void evalcore_count_draws(const uint64_t *words, int64_t halves, uint64_t n, uint64_t threshold, double *counts,
                          int64_t draws, int64_t *state) {
    int64_t half = state[HALF], done = state[DONE];
    int64_t column = done % (int64_t)n;
    double *row = counts + (done - column);
    while (done < draws && half < halves) {
        uint64_t word = words[half >> 1];
        uint64_t product = (half & 1 ? word >> 32 : word & 0xFFFFFFFFULL) * n;
        half++;
        if ((uint32_t)product < threshold) continue;
        row[product >> 32] += 1.0;
        done++;
        if (++column == (int64_t)n) {
            column = 0;
            row += n;
        }
    }
    state[HALF] = half;
    state[DONE] = done;
}
