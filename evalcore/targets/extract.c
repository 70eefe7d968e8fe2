/* The extractive generator's choice of sentences from the sentence table (see generators.py, whose `_chosen` holds
 * the same choice in Python, and sentences.py, which calls this one).
 *
 * The context's sentences with words, chunk by chunk; those in the question's language when there are any, else
 * all (the kept ones). A kept sentence's weight is the sum of log(1 + kept / holding) over the distinct question
 * words it holds (holding: the kept sentences holding the word), exactly rounded as Python's math.fsum rounds it,
 * divided by log2(rank + 1) of its chunk; the best `count` by (-weight, position), then the first unweighed ones.
 * The logarithms are the C library's, which Python's math.log and math.log2 call.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The exactly rounded sum of `count` finite doubles, as CPython's math.fsum makes it (Shewchuk's partials, then
 * the round-half-even correction across them). `partials` has room for count doubles. */
static double exact_sum(const double *values, int64_t count, double *partials) {
    int64_t n = 0;
    for (int64_t v = 0; v < count; v++) {
        double x = values[v];
        int64_t i = 0;
        for (int64_t j = 0; j < n; j++) {
            double y = partials[j];
            if (fabs(x) < fabs(y)) {
                double swap = x;
                x = y, y = swap;
            }
            double hi = x + y, lo = y - (hi - x);
            if (lo != 0.0) partials[i++] = lo;
            x = hi;
        }
        n = i;
        if (x != 0.0) partials[n++] = x;
    }
    double hi = 0.0, lo = 0.0;
    if (n > 0) {
        hi = partials[--n];
        while (n > 0) {
            double x = hi, y = partials[--n];
            hi = x + y;
            lo = y - (hi - x);
            if (lo != 0.0) break;
        }
        if (n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0))) {
            double y = lo * 2.0, x = hi + y;
            if (y == x - hi) hi = x;
        }
    }
    return hi;
}

/* The question's words are found among a sentence's through a filter of this many bits first (a word's bit: its
 * number's low bits): most words are none of the question's, and their bit tells so without a search. */
#define FILTER_BITS 4096

/* Whether `word` is among the `size` rising numbers of `words`; its place there into *at. */
static int find(const int64_t *words, int64_t size, int64_t word, int64_t *at) {
    int64_t low = 0, high = size;
    while (low < high) {
        int64_t middle = (low + high) / 2;
        if (words[middle] < word) low = middle + 1;
        else high = middle;
    }
    *at = low;
    return low < size && words[low] == word;
}

/* The chosen sentences of the context chunks, best first, at most `count`, and what the answer made of them needs.
 * `table`: the addresses of the table's sentence_starts, word_starts, languages, words and spans (see sentences.py's
 * _LAYOUT). `io` (room for `room` numbers) holds on entry the chunks' rows (nrows, best first), then the question's
 * distinct word numbers (asked_words, rising, at most 64); on return, for the chosen ones: their table numbers from
 * io[0], their chunk's rank (1 = best) from io[count], their span's start from io[2 * count] and end from
 * io[3 * count]; at io[4 * count] the number of their words, which follow it, sentence after sentence. Their number
 * is returned (0: no context sentence has a word), or -1 when memory runs out, or -2 when `io` has no room for the
 * words (the room needed is then at io[0]). */
int64_t evalcore_extract(const int64_t *table, int64_t *io, int64_t room, int64_t nrows, int64_t asked_words,
                         int64_t asked, int64_t count) {
    const int64_t *sentence_starts = (const int64_t *)table[0], *word_starts = (const int64_t *)table[1];
    const uint8_t *languages = (const uint8_t *)table[2];
    const int32_t *words = (const int32_t *)table[3];
    const int64_t *spans = (const int64_t *)table[4];
    int64_t question[64], *numbers = io, *ranks = io + count;
    const int64_t *rows = io;
    for (int64_t q = 0; q < asked_words; q++) question[q] = io[nrows + q];
    int64_t sentences = 0;
    for (int64_t r = 0; r < nrows; r++) sentences += sentence_starts[rows[r] + 1] - sentence_starts[rows[r]];
    if (sentences == 0) return 0;
    /* Per kept sentence: its table number, its rank, the question words it holds (a bit each), its weight. The
     * answer is written over the rows once they are read. */
    int64_t *kept = malloc((size_t)sentences * sizeof(int64_t)), *kept_ranks = malloc((size_t)sentences * sizeof(int64_t));
    uint64_t *held = malloc((size_t)sentences * sizeof(uint64_t));
    double *weights = malloc((size_t)sentences * sizeof(double));
    int64_t *order = malloc((size_t)sentences * sizeof(int64_t));
    int64_t total = 0, chosen = -1;
    if (!kept || !kept_ranks || !held || !weights || !order) goto done;
    for (int pass = 0; pass < 2 && total == 0; pass++) {  /* the question's language first, then any */
        for (int64_t r = 0; r < nrows; r++)
            for (int64_t s = sentence_starts[rows[r]]; s < sentence_starts[rows[r] + 1]; s++) {
                if (word_starts[s + 1] == word_starts[s]) continue;
                if (pass == 0 && languages[s] != asked) continue;
                kept[total] = s, kept_ranks[total++] = r + 1;
            }
    }
    if (total == 0) {
        chosen = 0;
        goto done;
    }
    int64_t holding[64] = {0};
    uint64_t filter[FILTER_BITS / 64] = {0};
    for (int64_t q = 0; q < asked_words; q++) {
        const uint64_t slot = (uint64_t)question[q] % FILTER_BITS;
        filter[slot / 64] |= (uint64_t)1 << slot % 64;
    }
    for (int64_t p = 0; p < total; p++) {
        uint64_t bits = 0;
        int64_t at;
        for (int64_t w = word_starts[kept[p]]; w < word_starts[kept[p] + 1]; w++) {
            const uint64_t slot = (uint64_t)(uint32_t)words[w] % FILTER_BITS;
            if (filter[slot / 64] >> slot % 64 & 1 && find(question, asked_words, words[w], &at))
                bits |= (uint64_t)1 << at;
        }
        held[p] = bits;
        for (uint64_t rest = bits; rest; rest &= rest - 1) holding[__builtin_ctzll(rest)]++;
    }
    double logs[64], terms[64], partials[64];
    for (int64_t q = 0; q < asked_words; q++)
        logs[q] = holding[q] ? log(1.0 + (double)total / (double)holding[q]) : 0.0;
    int64_t weighed = 0;
    for (int64_t p = 0; p < total; p++) {
        if (!held[p]) continue;
        int64_t size = 0;
        for (uint64_t rest = held[p]; rest; rest &= rest - 1) terms[size++] = logs[__builtin_ctzll(rest)];
        weights[p] = exact_sum(terms, size, partials) / log2((double)(kept_ranks[p] + 1));
        /* Insertion into the weighed ones, best first (by weight, then position): a context has a few dozen. */
        int64_t at = weighed++;
        while (at > 0 && weights[order[at - 1]] < weights[p]) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = p;
    }
    chosen = 0;
    for (int64_t i = 0; i < weighed && chosen < count; i++) order[chosen++] = order[i];
    for (int64_t p = 0; p < total && chosen < count; p++)
        if (!held[p]) order[chosen++] = p;
    int64_t size = 0;
    for (int64_t i = 0; i < chosen; i++) size += word_starts[kept[order[i]] + 1] - word_starts[kept[order[i]]];
    if (4 * count + 1 + size > room) {
        io[0] = 4 * count + 1 + size;
        chosen = -2;
        goto done;
    }
    int64_t *answer = io + 4 * count;
    answer[0] = size;
    size = 1;
    for (int64_t i = 0; i < chosen; i++) {
        const int64_t s = kept[order[i]];
        numbers[i] = s, ranks[i] = kept_ranks[order[i]];
        io[2 * count + i] = spans[2 * s], io[3 * count + i] = spans[2 * s + 1];
        for (int64_t w = word_starts[s]; w < word_starts[s + 1]; w++) answer[size++] = words[w];
    }
done:
    free(kept), free(kept_ranks), free(held), free(weights), free(order);
    return chosen;
}
