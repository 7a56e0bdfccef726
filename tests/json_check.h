/*
 * Reading ddpsim's JSON outputs in the tests: a strict parse (RFC 8259,
 * bytes 0x80 and up well-formed UTF-8) and lookups of one value by its
 * path. Linked into every test binary (Makefile: TEST_SUPPORT_OBJ);
 * failures are Criterion assertions.
 */
#ifndef DS_TESTS_JSON_CHECK_H
#define DS_TESTS_JSON_CHECK_H

#include <stddef.h>

/* Asserts that text is one JSON value and nothing else but white space. */
void ds_test_assert_json(const char *text);

/* Parses the string at *p (moving past it) into out (cap bytes, or NULL),
 * escapes decoded (\uXXXX below 0x80; '?' above). 0: no valid string. */
int ds_test_json_string(const char **p, char *out, size_t cap);

/* The value at path in the JSON text, keys and array indices by '.'
 * ("ring.rails.0.gpus.3"): a pointer to its first character in text, or
 * NULL where the path leads nowhere. */
const char *ds_test_json_at(const char *text, const char *path);

/* The number at path; asserts that there is one. */
double ds_test_json_number(const char *text, const char *path);

#endif /* DS_TESTS_JSON_CHECK_H */
