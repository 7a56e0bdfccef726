/*
 * Writing text the outputs share: printf appended to a bounded buffer (the
 * summary's lines), and user strings (GPU, topology and model names from
 * YAML or flags) written into CSV and JSON so that a quote, a comma, a
 * semicolon, a backslash or a control character cannot break the record:
 * CSV fields per RFC 4180 as libcsv writes them (csv_fwrite: the field in
 * double quotes, each quote doubled), quoted only where they must be, so
 * plain names print as before; JSON strings with '"', '\\' and control
 * characters escaped (RFC 8259 section 7); and user strings in a
 * terminal's text with their control characters shown as '?'.
 */
#ifndef DS_TEXTOUT_H
#define DS_TEXTOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Flushes fp (a report on standard output or error) and checks its error
 * flag: DS_OK, or DS_EIO "writing to standard output failed: REASON"
 * (standard error for stderr), REASON the flush's errno, else
 * earlier_errno (what a print left), else "write error". A report that
 * cannot be written fails its command (`> /dev/full`, a closed pipe). */
ds_status ds_textout_flush(FILE *fp, int earlier_errno, struct ds_err *err);

/* Appends printf output at *used, never past size (buf stays terminated;
 * *used counts what would have been written, so a full buffer stays full
 * and *used ends as the whole text's length: *used >= size says it was cut). */
__attribute__((format(printf, 4, 5))) void ds_textout_append(char *buf, size_t size, size_t *used,
                                                             const char *fmt, ...);

/* Whether s must be quoted as a CSV field: it holds a quote, a comma, a CR
 * or LF, or starts or ends with a space or tab (libcsv trims unquoted blanks). */
int ds_textout_csv_needs_quotes(const char *s);

/* Writes s as one CSV field (no separator): as is, or through csv_fwrite
 * where ds_textout_csv_needs_quotes. Returns 0, or EOF on a write error. */
int ds_textout_csv_field(FILE *fp, const char *s);

/* Writes s as a JSON string, its quotes included. Well-formed UTF-8 is
 * written as is; each ill-formed sequence (a stray continuation byte, an
 * overlong form, a surrogate, a code point past U+10FFFF, a sequence cut
 * short) becomes one \ufffd, so the output is valid JSON whatever the
 * bytes (a trace's op name, a path from the command line). */
void ds_textout_json_string(FILE *fp, const char *s);

/* The fewest of 15 to 17 significant digits that read back as x (strtod),
 * for a "%.*g": a number written whole, never rounded to a neighbour. */
int ds_textout_exact_digits(double x);

/* Writes x as a JSON number with ds_textout_exact_digits' precision, or
 * null for a NaN or an infinity (JSON has neither). Returns 0, or EOF on a
 * write error. */
int ds_textout_json_number(FILE *fp, double x);

/* s for a terminal's text: copied into buf (size bytes) with each control
 * character (below 0x20, and 0x7f: a CR or ESC in a GPU name would move
 * the cursor or start an escape sequence) written as '?'; cut at size - 1
 * bytes, never inside a UTF-8 character. Returns buf. */
const char *ds_textout_printable(const char *s, char *buf, size_t size);

/* Writes s as ds_textout_printable shows it, whole (a name of any length:
 * a trace's op), then spaces up to width bytes as printf's "%-*s" pads
 * (width 0: none). Returns 0, or EOF on a write error. */
int ds_textout_put_printable(FILE *fp, const char *s, int width);

/* Writes s for a comment line of a YAML or text file: each character
 * ds_textout_yaml_unsafe (a line break, NEL, LS or PS as much as a
 * newline, would end the comment and start a line the reader parses) and
 * each ill-formed UTF-8 sequence (a YAML reader refuses the whole file for
 * one) written as '?'. Returns 0, or EOF on a write error. */
int ds_textout_put_comment(FILE *fp, const char *s);

/* s as ds_textout_put_comment writes it, into buf (size > 0), cut at a
 * whole character where it does not fit; returns buf. For comment lines
 * built in memory (a calibration file's header). */
const char *ds_textout_comment_text(const char *s, char *buf, size_t size);

/* Whether code point cp may not stand raw in a YAML file read by libyaml:
 * a character its reader refuses (C0 but tab, LF, CR; DEL; C1 but NEL;
 * surrogates; U+FFFE, U+FFFF), a line break (CR, LF, NEL U+0085, LS
 * U+2028, PS U+2029: a comment ends there), a BOM (U+FEFF), a tab or a
 * control character (a terminal shows the file). */
int ds_textout_yaml_unsafe(uint32_t cp);

/* Writes s as a YAML double-quoted scalar that reads back as s: quotes and
 * backslashes escaped, NEL, LS and PS as \N \L \P, every other
 * ds_textout_yaml_unsafe character as \xXX or \uXXXX (YAML 1.2, 5.7),
 * each ill-formed UTF-8 sequence as '?' (YAML's escapes name characters,
 * not bytes). */
void ds_textout_yaml_quoted(FILE *fp, const char *s);

/* The first byte of s that does not begin a well-formed UTF-8 sequence
 * (RFC 3629), or NULL when all of s is well formed. */
const char *ds_textout_utf8_invalid(const char *s);

#ifdef __cplusplus
}
#endif

#endif /* DS_TEXTOUT_H */
