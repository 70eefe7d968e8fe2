/* The bootstrap's resamples counted straight from the generator (see stats.py, which holds the
 * same draws in numpy, `bounded_draws`, and says how numpy draws them).
 *
 * A draw below n takes the stream's next 32-bit half word w (a 64-bit word's low half first):
 * w is rejected when the low half of w * n falls below 2^32 mod n, else the draw is the high
 * half. Draw d of a block counts once in row d / n at its value's column: the numbers numpy's
 * integers(0, n) hands out, counted as bincount counts them, with no array of them in between.
 */
#include <stdint.h>

/* numpy's PCG64 (O'Neill's PCG XSL RR 128/64): a 128-bit LCG whose next word is the high and low
 * halves of the advanced state xor-ed, rotated right by its top 6 bits. `generator` holds the
 * state and the increment as (high, low) pairs, then whether a word's high half waits for the
 * next draw and that half; it is left advanced past the words taken. */
enum { STATE_HIGH, STATE_LOW, INCREMENT_HIGH, INCREMENT_LOW, WAITING, WAITING_HALF };
#define PCG_MULTIPLIER (((__uint128_t)0x2360ED051FC65DA4ULL << 64) | 0x4385DF649FCCF645ULL)

static inline uint64_t next_word(__uint128_t *state, __uint128_t increment) {
    *state = *state * PCG_MULTIPLIER + increment;
    uint64_t value = (uint64_t)(*state >> 64) ^ (uint64_t)*state;
    unsigned rotation = (unsigned)(*state >> 122);
    return (value >> rotation) | (value << ((64 - rotation) & 63));
}

/* `draws` draws below n from the generator's own stream (the words numpy's random_raw would give),
 * each counted in its row of counts (rows of n). */
void evalcore_count_pcg64(uint64_t *generator, uint64_t n, uint64_t threshold, double *counts, int64_t draws) {
    __uint128_t state = ((__uint128_t)generator[STATE_HIGH] << 64) | generator[STATE_LOW];
    __uint128_t increment = ((__uint128_t)generator[INCREMENT_HIGH] << 64) | generator[INCREMENT_LOW];
    int waiting = (int)generator[WAITING];
    uint64_t waiting_half = generator[WAITING_HALF];
    int64_t done = 0, column = 0;
    double *row = counts;
    while (done < draws) {
        uint64_t half;
        if (waiting) {
            half = waiting_half;
            waiting = 0;
        } else {
            uint64_t word = next_word(&state, increment);
            half = word & 0xFFFFFFFFULL;
            waiting_half = word >> 32;
            waiting = 1;
        }
        uint64_t product = half * n;
        if ((uint32_t)product < threshold) continue;
        row[product >> 32] += 1.0;
        done++;
        if (++column == (int64_t)n) {
            column = 0;
            row += n;
        }
    }
    generator[STATE_HIGH] = (uint64_t)(state >> 64);
    generator[STATE_LOW] = (uint64_t)state;
    generator[WAITING] = (uint64_t)waiting;
    generator[WAITING_HALF] = waiting_half;
}
