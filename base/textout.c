/* Bounded appends and user strings in CSV and JSON (textout.h). */
#include "base/textout.h"

#include <csv.h>
#include <stdarg.h>
#include <string.h>

void ds_textout_append(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  if (*used >= size) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (k > 0) *used += (size_t)k;
}

int ds_textout_csv_needs_quotes(const char *s) {
  size_t n = strlen(s);
  if (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t')) return 1;
  return strpbrk(s, "\",\r\n") != NULL;
}

int ds_textout_csv_field(FILE *fp, const char *s) {
  if (!ds_textout_csv_needs_quotes(s)) return fputs(s, fp) == EOF ? EOF : 0;
  return csv_fwrite(fp, s, strlen(s));
}

void ds_textout_json_string(FILE *fp, const char *s) {
  fputc('"', fp);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", fp); break;
    case '\\': fputs("\\\\", fp); break;
    case '\n': fputs("\\n", fp); break;
    case '\r': fputs("\\r", fp); break;
    case '\t': fputs("\\t", fp); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        fprintf(fp, "\\u%04x", *p);
      else
        fputc(*p, fp);
    }
  }
  fputc('"', fp);
}
