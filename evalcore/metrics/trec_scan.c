/* The byte scan of a well-formed TREC file in one pass (see trec_scan.py, which holds the same
 * scan in numpy and says what a well-formed file is).
 *
 * One call reads every line: it checks the line's shape, records where the id field lies and
 * its 64-bit key, the rows where the grouped field (the query) changes, and parses one number
 * field. Anything outside the shape returns NOT_REGULAR and the caller reads the file another
 * way; so does a number this scan does not parse itself (a NaN, an infinity, a value out of
 * range), so that the other readers name it. The keys are bit for bit those of trec_scan.keys,
 * and the numbers those pyarrow parses: both paths must read the same file to the same values.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __APPLE__
#include <xlocale.h>
#endif

enum { DONE = 0, NOT_REGULAR = 1, FULL = 2 };
enum { INTEGER = 0, DECIMAL = 1 };
#define WORD 8
#define LONGEST_FIELD (1 << 16)
#define LONGEST_NUMBER 64

static const uint64_t MIX[3] = {0xBF58476D1CE4E5B9ULL, 0x94D049BB133111EBULL, 0x9E3779B97F4A7C15ULL};

static inline uint64_t load(const uint8_t *at) {
    uint64_t word;
    memcpy(&word, at, WORD);
    return word;
}

/* A field's key: its bytes as a little-endian word when it has at most 8; else a mix of its
 * length and its first, middle and last 8 bytes (splitmix64's finaliser), as trec_scan.keys. */
static inline uint64_t key_of(const uint8_t *data, int64_t size, int64_t start, int64_t length) {
    if (length <= WORD) {
        uint64_t word = 0;
        if (start + WORD <= size) {
            word = load(data + start);
            if (length < WORD) word &= (1ULL << (8 * length)) - 1;
        } else {
            memcpy(&word, data + start, (size_t)length);
        }
        return word;
    }
    uint64_t key = load(data + start) * MIX[0];
    key ^= load(data + start + length - WORD) * MIX[1];
    key += (uint64_t)length;
    key ^= load(data + start + (length - WORD) / 2) * MIX[2];
    key ^= key >> 30;
    key *= MIX[0];
    key ^= key >> 27;
    key *= MIX[1];
    key ^= key >> 31;
    return key;
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Where the field starting at `at` ends: its first byte that is not printable ASCII (0x21 to
 * 0x7f). Eight bytes at a time: a byte of 0x80 or more has its high bit set, and one under 0x21
 * sets its high bit in w - 0x21..21 & ~w; the lowest flagged byte is exact (the subtraction's
 * borrows only flag bytes above a true one). The newline that ends the data stops every field. */
static inline int64_t field_end(const uint8_t *data, int64_t size, int64_t at) {
    while (at + WORD <= size) {
        uint64_t word = load(data + at);
        uint64_t flagged = (word | ((word - 0x21 * ONES) & ~word)) & HIGHS;
        if (flagged) return at + (__builtin_ctzll(flagged) >> 3);
        at += WORD;
    }
    while ((uint8_t)(data[at] - 0x21) < 0x5f) at++;
    return at;
}

static int is_digit(uint8_t byte) { return byte >= '0' && byte <= '9'; }

/* [+-]?[0-9]+ within int64 (leading zeros allowed); anything else goes to the other readers. */
static int parse_integer(const uint8_t *text, int64_t length, int64_t *out) {
    int64_t at = 0;
    uint64_t value = 0;
    int negative = text[0] == '-';
    if (text[0] == '-' || text[0] == '+') at = 1;
    if (at == length) return 0;
    while (at < length - 1 && text[at] == '0') at++;
    if (length - at > 19) return 0;
    for (; at < length; at++) {
        if (!is_digit(text[at])) return 0;
        value = value * 10 + (uint64_t)(text[at] - '0');  /* 19 digits stay under 2^64 */
    }
    if (value > (negative ? 1ULL << 63 : (1ULL << 63) - 1)) return 0;
    *out = negative ? (int64_t)(0 - value) : (int64_t)value;
    return 1;
}

static const double POWERS[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static locale_t plain_locale(void) {
    static locale_t plain = (locale_t)0;
    if (plain == (locale_t)0) plain = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    return plain;
}

/* [+-]?([0-9]+(.[0-9]*)?|.[0-9]+)([eE][+-]?[0-9]+)?, correctly rounded. A mantissa under 2^53
 * times a power of ten up to 22 is one exact IEEE operation (Clinger's fast path); the rest goes
 * to strtod in the C locale, which rounds correctly too. Infinite or out-of-range values: 0. */
static int parse_decimal(const uint8_t *text, int64_t length, double *out) {
    int64_t at = 0, digits = 0, exponent = 0;
    uint64_t mantissa = 0;
    int negative = text[0] == '-', exact = 1;
    if (text[0] == '-' || text[0] == '+') at = 1;
    for (; at < length && is_digit(text[at]); at++, digits++) {
        if (mantissa >= (1ULL << 53) / 10) exact = 0;
        mantissa = mantissa * 10 + (text[at] - '0');
    }
    if (at < length && text[at] == '.') {
        for (at++; at < length && is_digit(text[at]); at++, digits++, exponent--) {
            if (mantissa >= (1ULL << 53) / 10) exact = 0;
            mantissa = mantissa * 10 + (text[at] - '0');
        }
    }
    if (digits == 0) return 0;
    if (at < length && (text[at] == 'e' || text[at] == 'E')) {
        int64_t sign = 1, power = 0, start;
        at++;
        if (at < length && (text[at] == '-' || text[at] == '+')) sign = text[at++] == '-' ? -1 : 1;
        for (start = at; at < length && is_digit(text[at]); at++) {
            if (power < 100000) power = power * 10 + (text[at] - '0');
        }
        if (at == start) return 0;
        exponent += sign * power;
    }
    if (at != length) return 0;
    if (exact && exponent >= -22 && exponent <= 22) {
        double value = (double)mantissa;
        value = exponent < 0 ? value / POWERS[-exponent] : value * POWERS[exponent];
        *out = negative ? -value : value;
        return 1;
    }
    char copy[LONGEST_NUMBER + 1];
    char *end;
    if (length > LONGEST_NUMBER || plain_locale() == (locale_t)0) return 0;
    memcpy(copy, text, (size_t)length);
    copy[length] = 0;
    errno = 0;
    double value = strtod_l(copy, &end, plain_locale());
    if (end != copy + length || errno == ERANGE || isinf(value)) return 0;
    *out = value;
    return 1;
}

/* Where a scan stands: it resumes from here after its caller grew the arrays (FULL). */
enum { LINE, GROUPS, LONGEST, SHORTEST, AT, PREVIOUS_START, PREVIOUS_LENGTH };

/* The fields of every line of data[0:size] (which ends with a newline): `count` fields of
 * printable ASCII separated by single spaces, none empty, no line starting with '#'. Per line:
 * the id's start, length and key, and the parsed number; per run of equal grouped fields: its
 * first row, start and length. Every array holds `capacity` entries; with more lines the scan
 * stops with FULL and `state` says where (and, when DONE, the counts of lines and runs and the
 * longest and shortest id). A new scan starts from {0, 0, 0, LONGEST_FIELD, 0, 0, -1}. */
int evalcore_scan(const uint8_t *data, int64_t size, int32_t count, int32_t grouped, int32_t ids,
                  int32_t parsed, int32_t kind, int64_t capacity, int64_t *starts, int32_t *lengths,
                  uint64_t *keys, void *numbers, int64_t *group_rows, int64_t *group_starts,
                  int32_t *group_lengths, int64_t *state) {
    int64_t line = state[LINE], groups = state[GROUPS], at = state[AT];
    int64_t previous_start = state[PREVIOUS_START], previous_length = state[PREVIOUS_LENGTH];
    int64_t longest = state[LONGEST], shortest = state[SHORTEST];
    if (size <= 0 || data[size - 1] != '\n') return NOT_REGULAR;
    while (at < size) {
        if (line == capacity) {
            state[LINE] = line, state[GROUPS] = groups, state[LONGEST] = longest, state[SHORTEST] = shortest;
            state[AT] = at, state[PREVIOUS_START] = previous_start, state[PREVIOUS_LENGTH] = previous_length;
            return FULL;
        }
        if (data[at] == '#') return NOT_REGULAR;
        for (int32_t field = 0; field < count; field++) {
            int64_t start = at;
            at = field_end(data, size, at);
            int64_t length = at - start;
            if (length == 0 || length >= LONGEST_FIELD) return NOT_REGULAR;
            if (data[at] != (field == count - 1 ? '\n' : ' ')) return NOT_REGULAR;
            at++;
            if (field == grouped) {
                if (length != previous_length || memcmp(data + start, data + previous_start, (size_t)length)) {
                    group_rows[groups] = line;
                    group_starts[groups] = start;
                    group_lengths[groups] = (int32_t)length;
                    groups++;
                }
                previous_start = start;
                previous_length = length;
            }
            if (field == ids) {
                starts[line] = start;
                lengths[line] = (int32_t)length;
                keys[line] = key_of(data, size, start, length);
                if (length > longest) longest = length;
                if (length < shortest) shortest = length;
            }
            if (field == parsed) {
                int ok = kind == INTEGER ? parse_integer(data + start, length, (int64_t *)numbers + line)
                                         : parse_decimal(data + start, length, (double *)numbers + line);
                if (!ok) return NOT_REGULAR;
            }
        }
        line++;
    }
    state[LINE] = line, state[GROUPS] = groups, state[LONGEST] = longest, state[SHORTEST] = shortest;
    state[AT] = at;
    return DONE;
}
