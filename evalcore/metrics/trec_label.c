/* The label of every row of a TREC run, from its qrels, in one pass of C (trec.py's `_labels`
 * computes the same in numpy where this cannot be built).
 *
 * Rows are (query code, document key) pairs. Each query's judged documents go into a small
 * open-addressing table of its own (at least twice as many slots as documents, a power of
 * two), so that looking up a query's ranked documents, which a run lists together, stays in
 * the processor's nearest cache; a table over every judged pair would be tens of megabytes,
 * each lookup a miss. A key equal to the one looked for is a match when the keys are exact
 * (`data` NULL: ids of at most 8 bytes are their own keys); otherwise the ids' bytes decide, so
 * two ids sharing a key are never taken for one.
 *
 * The same pass says whether the run ranks a document twice for a query (trec_eval keeps its
 * first rank only, which needs the rank order: the caller then finds which), checked within
 * each run of rows of one query; a query whose rows are not all together makes that answer
 * unknown. A qrels file judging a (query, document) pair twice stops the pass at the first
 * line that does so, as trec_eval refuses it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { DONE = 0, NO_MEMORY = 1 };
/* What `report` holds when DONE: the first qrels row judging a pair again (-1: none) and the
 * earlier row it repeats; whether the run ranks a document twice for a query (0 or 1); whether
 * some query's rows are not all together (0 or 1: then the answer before is unknown). */
enum { TWICE_ROW, TWICE_FIRST, REPEATS, SCATTERED };

typedef struct {
    const uint8_t *data; /* NULL: keys are exact, bytes are never compared */
    const int64_t *starts;
    const int32_t *lengths;
} Ids;

static inline int same_id(const Ids *a, int64_t row, const Ids *b, int64_t other) {
    if (a->data == NULL) return 1;
    int32_t length = a->lengths[row];
    return length == b->lengths[other] &&
           memcmp(a->data + a->starts[row], b->data + b->starts[other], (size_t)length) == 0;
}

/* The top `bits` bits of the key times an odd constant (2^64 / golden ratio). */
static inline uint64_t slot_of(uint64_t key, int bits) { return (key * 0x9E3779B97F4A7C15ULL) >> (64 - bits); }

static int bits_for(int64_t count) {
    int bits = 1;
    while (((int64_t)1 << bits) < 2 * count) bits++;
    return bits;
}

static inline void store(void *labels, int32_t width, int64_t row, int64_t value) {
    switch (width) {
        case 1: ((int8_t *)labels)[row] = (int8_t)value; break;
        case 2: ((int16_t *)labels)[row] = (int16_t)value; break;
        case 4: ((int32_t *)labels)[row] = (int32_t)value; break;
        default: ((int64_t *)labels)[row] = value; break;
    }
}

/* Whether the run's rows from `start` (all of query run_q[start]) rank a document twice; `end`
 * is set past them. `scratch` holds at least `*room` slots and is grown as needed. */
static int repeats_within(int64_t start, int64_t runs, const int32_t *run_q, const uint64_t *run_key,
                          const Ids *run_ids, int32_t **scratch, int64_t *room, int64_t *end, int *failed) {
    int64_t stop = start + 1;
    while (stop < runs && run_q[stop] == run_q[start]) stop++;
    *end = stop;
    int bits = bits_for(stop - start);
    int64_t slots = (int64_t)1 << bits;
    if (slots > *room) {
        int32_t *larger = realloc(*scratch, (size_t)slots * sizeof **scratch);
        if (larger == NULL) {
            *failed = 1;
            return 0;
        }
        *scratch = larger, *room = slots;
    }
    memset(*scratch, 0xff, (size_t)slots * sizeof **scratch); /* -1: empty */
    uint64_t mask = (uint64_t)slots - 1;
    for (int64_t row = start; row < stop; row++) {
        for (uint64_t slot = slot_of(run_key[row], bits);; slot = (slot + 1) & mask) {
            int32_t held = (*scratch)[slot];
            if (held < 0) {
                (*scratch)[slot] = (int32_t)(row - start);
                break;
            }
            if (run_key[start + held] == run_key[row] && same_id(run_ids, start + held, run_ids, row)) return 1;
        }
    }
    return 0;
}

/* Per run row, the label of its (query, document) pair in the qrels, or `missing` when it is
 * not judged, written as integers of `width` bytes. Query codes lie in [0, queries); qrels rows
 * number under 2^31. The ids' spans (`*_data` and the rest) are NULL when keys are exact. */
int evalcore_label(int64_t runs, const int32_t *run_q, const uint64_t *run_key, const uint8_t *run_data,
                   const int64_t *run_starts, const int32_t *run_lengths, int64_t judged, const int32_t *rel_q,
                   const uint64_t *rel_key, const uint8_t *rel_data, const int64_t *rel_starts,
                   const int32_t *rel_lengths, const int64_t *rel_label, int32_t queries, int32_t width,
                   void *labels, int64_t missing, int64_t *report) {
    Ids run_ids = {run_data, run_starts, run_lengths}, rel_ids = {rel_data, rel_starts, rel_lengths};
    report[TWICE_ROW] = -1, report[TWICE_FIRST] = -1, report[REPEATS] = 0, report[SCATTERED] = 0;
    int64_t *base = calloc((size_t)queries + 1, sizeof *base);
    uint8_t *bits = calloc((size_t)queries + 1, 1); /* 0: the query has no judged document */
    uint8_t *seen = calloc((size_t)queries + 1, 1);
    int32_t *table = NULL, *scratch = NULL;
    int status = NO_MEMORY;
    if (base == NULL || bits == NULL || seen == NULL) goto done;
    for (int64_t row = 0; row < judged; row++) base[rel_q[row]]++; /* counts first */
    int64_t total = 0;
    for (int32_t query = 0; query < queries; query++) {
        int64_t count = base[query];
        bits[query] = count ? (uint8_t)bits_for(count) : 0;
        base[query] = total;
        total += count ? (int64_t)1 << bits[query] : 0;
    }
    table = malloc((size_t)(total ? total : 1) * sizeof *table);
    if (table == NULL) goto done;
    memset(table, 0xff, (size_t)total * sizeof *table);
    for (int64_t row = 0; row < judged; row++) { /* in line order: the first repeat found is the earliest */
        int32_t query = rel_q[row];
        int32_t *slots = table + base[query];
        uint64_t mask = ((uint64_t)1 << bits[query]) - 1;
        for (uint64_t slot = slot_of(rel_key[row], bits[query]);; slot = (slot + 1) & mask) {
            int32_t held = slots[slot];
            if (held < 0) {
                slots[slot] = (int32_t)row;
                break;
            }
            if (rel_key[held] == rel_key[row] && same_id(&rel_ids, held, &rel_ids, row)) {
                report[TWICE_ROW] = row, report[TWICE_FIRST] = held;
                status = DONE;
                goto done;
            }
        }
    }
    int64_t room = 0, group_end = 0;
    int checking = 1, failed = 0;
    for (int64_t row = 0; row < runs; row++) {
        int32_t query = run_q[row];
        if (checking && row == group_end) { /* the first row of a run of one query's rows */
            if (seen[query]) {
                report[SCATTERED] = 1, checking = 0;
            } else {
                seen[query] = 1;
                if (repeats_within(row, runs, run_q, run_key, &run_ids, &scratch, &room, &group_end, &failed)) {
                    report[REPEATS] = 1, checking = 0;
                }
                if (failed) goto done;
            }
        }
        int64_t value = missing;
        if (bits[query]) {
            const int32_t *slots = table + base[query];
            uint64_t mask = ((uint64_t)1 << bits[query]) - 1, key = run_key[row];
            for (uint64_t slot = slot_of(key, bits[query]);; slot = (slot + 1) & mask) {
                int32_t held = slots[slot];
                if (held < 0) break;
                if (rel_key[held] == key && same_id(&run_ids, row, &rel_ids, held)) {
                    value = rel_label[held];
                    break;
                }
            }
        }
        store(labels, width, row, value);
    }
    status = DONE;
done:
    free(base), free(bits), free(seen), free(table), free(scratch);
    return status;
}

/* A double as an unsigned integer that sorts as the number does (-0 and 0 alike, NaN after all). */
static inline uint64_t ordered_key(double value) {
    if (value != value) return UINT64_MAX;
    value += 0.0; /* -0 becomes 0 */
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return (bits >> 63) ? ~bits : bits | 0x8000000000000000ULL;
}

typedef struct {
    uint64_t key;
    int64_t row;
} Keyed;

/* Stable merge sort of `items[0:count)` by key (ties keep their order), `spare` as large. */
static void merge_sort(Keyed *items, Keyed *spare, int64_t count) {
    enum { SMALL = 16 };
    for (int64_t start = 0; start < count; start += SMALL) { /* insertion sort of short runs */
        int64_t end = start + SMALL < count ? start + SMALL : count;
        for (int64_t i = start + 1; i < end; i++) {
            Keyed item = items[i];
            int64_t j = i;
            for (; j > start && items[j - 1].key > item.key; j--) items[j] = items[j - 1];
            items[j] = item;
        }
    }
    Keyed *from = items, *to = spare;
    for (int64_t width = SMALL; width < count; width *= 2) {
        for (int64_t start = 0; start < count; start += 2 * width) {
            int64_t middle = start + width < count ? start + width : count;
            int64_t end = start + 2 * width < count ? start + 2 * width : count;
            int64_t left = start, right = middle, out = start;
            while (left < middle && right < end) to[out++] = from[right].key < from[left].key ? from[right++] : from[left++];
            while (left < middle) to[out++] = from[left++];
            while (right < end) to[out++] = from[right++];
        }
        Keyed *swap = from;
        from = to, to = swap;
    }
    if (from != items) memcpy(items, from, (size_t)count * sizeof *items);
}

/* The rows of a run by query code, then by score descending, ties in the file's order (what
 * numpy's lexsort((-score, query)) gives): a counting sort by query, then a sort of each query's
 * rows, a few hundred at most, instead of a sort of every row. Query codes lie in [0, queries). */
int evalcore_rank_order(int64_t runs, const int32_t *run_q, const double *score, int32_t queries, int64_t *order) {
    int64_t *start = calloc((size_t)queries + 1, sizeof *start);
    Keyed *items = NULL, *spare = NULL;
    int status = NO_MEMORY;
    if (start == NULL) goto done;
    for (int64_t row = 0; row < runs; row++) start[run_q[row] + 1]++;
    int64_t longest = 0;
    for (int32_t query = 0; query < queries; query++) {
        if (start[query + 1] > longest) longest = start[query + 1];
        start[query + 1] += start[query];
    }
    items = malloc((size_t)(longest ? longest : 1) * sizeof *items);
    spare = malloc((size_t)(longest ? longest : 1) * sizeof *spare);
    if (items == NULL || spare == NULL) goto done;
    for (int64_t row = 0; row < runs; row++) order[start[run_q[row]]++] = row; /* start[q] ends at q's end */
    int64_t begin = 0;
    for (int32_t query = 0; query < queries; query++) {
        int64_t end = start[query], count = end - begin;
        int sorted = 1;
        for (int64_t i = 0; i < count; i++) {
            items[i].key = ordered_key(-score[order[begin + i]]);
            items[i].row = order[begin + i];
            if (i && items[i].key < items[i - 1].key) sorted = 0;
        }
        if (!sorted) {
            merge_sort(items, spare, count);
            for (int64_t i = 0; i < count; i++) order[begin + i] = items[i].row;
        }
        begin = end;
    }
    status = DONE;
done:
    free(start), free(items), free(spare);
    return status;
}

static inline uint64_t hash_bytes(const uint8_t *at, int32_t length) {
    uint64_t hash = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (int32_t i = 0; i < length; i++) hash = (hash ^ at[i]) * 0x100000001b3ULL;
    return hash;
}

/* An id's first 8 bytes as a word (zero bytes past its end). */
static inline uint64_t head_word(const uint8_t *at, int32_t length) {
    uint64_t word = 0;
    memcpy(&word, at, (size_t)(length < 8 ? length : 8));
    return word;
}

typedef struct {
    uint64_t hash, word; /* the id's hash and first 8 bytes: most ids are compared without reading the file */
    int64_t first;       /* where its first id lies in the two columns */
    int32_t length;
} Code;

/* Codes for the ids of two span columns taken one after the other, in order of first appearance
 * (what pyarrow's dictionary_encode gives for the same strings): `codes[i]` for the i-th id, and
 * `firsts[c]` the position of code c's first id. Returns the number of codes, -1 out of memory.
 * Ids are compared on their bytes; the hash only finds candidates. */
int64_t evalcore_codes(int64_t first_count, const uint8_t *first_data, const int64_t *first_starts,
                       const int32_t *first_lengths, int64_t second_count, const uint8_t *second_data,
                       const int64_t *second_starts, const int32_t *second_lengths, int32_t *codes, int64_t *firsts) {
    int64_t total = first_count + second_count, distinct = 0, room = 1024;
    int bits = 11;
    int32_t *table = malloc(((size_t)1 << bits) * sizeof *table);
    Code *known = malloc((size_t)room * sizeof *known);
    if (table == NULL || known == NULL) {
        distinct = -1;
        goto done;
    }
    memset(table, 0xff, ((size_t)1 << bits) * sizeof *table);
    for (int64_t at = 0; at < total; at++) {
        int second = at >= first_count;
        int64_t row = second ? at - first_count : at;
        const uint8_t *bytes = (second ? second_data : first_data) + (second ? second_starts : first_starts)[row];
        int32_t length = (second ? second_lengths : first_lengths)[row];
        uint64_t hash = hash_bytes(bytes, length), word = head_word(bytes, length);
        uint64_t mask = ((uint64_t)1 << bits) - 1, slot = slot_of(hash, bits);
        int32_t code = -1;
        for (;; slot = (slot + 1) & mask) {
            int32_t held = table[slot];
            if (held < 0) break;
            const Code *other = &known[held];
            if (other->hash != hash || other->word != word || other->length != length) continue;
            if (length > 8) {
                int64_t place = other->first;
                int later = place >= first_count;
                int64_t other_row = later ? place - first_count : place;
                const uint8_t *held_bytes = (later ? second_data : first_data) +
                                            (later ? second_starts : first_starts)[other_row];
                if (memcmp(held_bytes + 8, bytes + 8, (size_t)length - 8) != 0) continue;
            }
            code = held;
            break;
        }
        if (code < 0) {
            if (distinct == room) {
                Code *grown = realloc(known, (size_t)room * 2 * sizeof *known);
                if (grown == NULL) {
                    distinct = -1;
                    goto done;
                }
                known = grown, room *= 2;
            }
            code = (int32_t)distinct++;
            known[code] = (Code){hash, word, at, length};
            firsts[code] = at, table[slot] = code;
            if (2 * distinct > ((int64_t)1 << bits)) { /* half full: twice the slots */
                free(table);
                bits++;
                table = malloc(((size_t)1 << bits) * sizeof *table);
                if (table == NULL) {
                    distinct = -1;
                    goto done;
                }
                memset(table, 0xff, ((size_t)1 << bits) * sizeof *table);
                uint64_t grown = ((uint64_t)1 << bits) - 1;
                for (int32_t old = 0; old < (int32_t)distinct; old++) {
                    uint64_t place = slot_of(known[old].hash, bits);
                    while (table[place] >= 0) place = (place + 1) & grown;
                    table[place] = old;
                }
            }
        }
        codes[at] = code;
    }
done:
    free(table), free(known);
    return distinct;
}
