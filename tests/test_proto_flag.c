/*
 * --proto's parser (sim/cli/proto_flag.h): none, auto, one protocol, and
 * NCCL_PROTO's sets ("LL,Simple", "^LL128"; tuning.cc parseList), with
 * bad values usage errors that name the flag and what was expected.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "sim/cli/proto_flag.h"

#define BIT(p) (1u << (p))

static struct ds_proto_flag parse_ok(const char *v) {
  struct ds_err err = {0};
  struct ds_proto_flag f;
  memset(&f, 0xff, sizeof f);
  cr_assert_eq(ds_proto_flag_parse("--proto", v, &f, &err), DS_OK, "%s: %s", v, err.msg);
  return f;
}

Test(proto_flag, keywords_and_one_protocol) {
  cr_assert_eq(parse_ok("none").choice, DS_PROTO_CHOICE_NONE);
  struct ds_proto_flag a = parse_ok("auto");
  cr_assert_eq(a.choice, DS_PROTO_CHOICE_AUTO);
  cr_assert_eq(a.disabled, 0u);
  /* one name: that protocol for every call, as before sets existed */
  struct ds_proto_flag f = parse_ok("LL128");
  cr_assert_eq(f.choice, DS_PROTO_CHOICE_FIXED);
  cr_assert_eq(f.fixed, DS_PROTO_LL128);
  cr_assert_eq(f.disabled, 0u);
  /* any case, as NCCL's strcasecmp */
  cr_assert_eq(parse_ok("simple").fixed, DS_PROTO_SIMPLE);
}

Test(proto_flag, sets_disable_what_they_leave_out) {
  /* Expected, because NCCL enables exactly the listed protocols, or with
   * '^' every protocol but the listed ones (tuning.cc parseList). */
  struct ds_proto_flag s = parse_ok("LL,Simple");
  cr_assert_eq(s.choice, DS_PROTO_CHOICE_AUTO);
  cr_assert_eq(s.disabled, BIT(DS_PROTO_LL128));
  cr_assert_eq(parse_ok("Simple,LL").disabled, BIT(DS_PROTO_LL128));
  struct ds_proto_flag x = parse_ok("^LL128");
  cr_assert_eq(x.choice, DS_PROTO_CHOICE_AUTO);
  cr_assert_eq(x.disabled, BIT(DS_PROTO_LL128));
  cr_assert_eq(parse_ok("^LL,LL128").disabled, BIT(DS_PROTO_LL) | BIT(DS_PROTO_LL128));
  /* every protocol named: chosen among all as auto, but named (NCCL_PROTO
   * set: LL128 on where NCCL's default turns it off); auto and none are not */
  struct ds_proto_flag all = parse_ok("LL,LL128,Simple");
  cr_assert_eq(all.choice, DS_PROTO_CHOICE_AUTO);
  cr_assert_eq(all.disabled, 0u);
  cr_assert(all.named);
  cr_assert(parse_ok("^LL").named);
  cr_assert(parse_ok("Simple").named);
  cr_assert(!parse_ok("auto").named);
  cr_assert(!parse_ok("none").named);
  char name[32];
  ds_proto_flag_set_name(BIT(DS_PROTO_LL128), ',', name, sizeof name);
  cr_assert_str_eq(name, "LL,Simple");
  ds_proto_flag_set_name(BIT(DS_PROTO_LL) | BIT(DS_PROTO_SIMPLE), '+', name, sizeof name);
  cr_assert_str_eq(name, "LL128");
  ds_proto_flag_set_name(0, '+', name, sizeof name);
  cr_assert_str_eq(name, "auto");
}

Test(proto_flag, bad_values_name_the_flag_and_what_was_expected) {
  const char *bad[][2] = {
      {"LL64", "unknown protocol 'LL64'"},   {"LL,LL64", "unknown protocol 'LL64'"},
      {"LL,,Simple", "empty protocol name"}, {"LL,", "empty protocol name"},
      {"", "empty protocol name"},           {"^", "empty protocol name"},
      {"^LL,LL128,Simple", "leaves no protocol"}, {"^auto", "unknown protocol 'auto'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_err err = {0};
    struct ds_proto_flag f;
    cr_assert_eq(ds_proto_flag_parse("--proto", bad[i][0], &f, &err), DS_EUSAGE, "%s",
                 bad[i][0]);
    cr_assert(strstr(err.msg, "option --proto"), "%s: %s", bad[i][0], err.msg);
    cr_assert(strstr(err.msg, bad[i][1]), "%s: %s", bad[i][0], err.msg);
    cr_assert(strstr(err.msg, "expected none, auto, LL, LL128, Simple"), "%s", err.msg);
  }
}

Test(proto_flag, admits_what_the_flag_lets_run) {
  /* Expected, because none runs no protocol, a fixed one runs only itself,
   * and auto runs each protocol its set leaves in (all with plain auto). */
  const struct {
    const char *v;
    int ll, ll128, simple;
  } cases[] = {
      {"none", 0, 0, 0},      {"auto", 1, 1, 1},       {"LL128", 0, 1, 0},
      {"Simple", 0, 0, 1},    {"LL,Simple", 1, 0, 1},  {"^Simple", 1, 1, 0},
      {"LL,LL128", 1, 1, 0},  {"LL,LL128,Simple", 1, 1, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct ds_proto_flag f = parse_ok(cases[i].v);
    cr_assert_eq(ds_proto_flag_admits(&f, DS_PROTO_LL), cases[i].ll, "%s", cases[i].v);
    cr_assert_eq(ds_proto_flag_admits(&f, DS_PROTO_LL128), cases[i].ll128, "%s", cases[i].v);
    cr_assert_eq(ds_proto_flag_admits(&f, DS_PROTO_SIMPLE), cases[i].simple, "%s", cases[i].v);
  }
}

Test(proto_flag, name_is_the_fixed_protocol_or_the_set) {
  char name[32];
  struct ds_proto_flag f = parse_ok("ll128");
  ds_proto_flag_name(&f, ',', name, sizeof name);
  cr_assert_str_eq(name, "LL128");
  f = parse_ok("^LL128");
  ds_proto_flag_name(&f, '+', name, sizeof name);
  cr_assert_str_eq(name, "LL+Simple");
  f = parse_ok("auto");
  ds_proto_flag_name(&f, ',', name, sizeof name);
  cr_assert_str_eq(name, "auto");
  /* every protocol named is not auto's name: it differs where LL128 is off */
  f = parse_ok("Simple,LL128,LL");
  ds_proto_flag_name(&f, '+', name, sizeof name);
  cr_assert_str_eq(name, "LL+LL128+Simple");
}

Test(proto_flag, require_model_refuses_only_what_names_protocols) {
  /* Expected, because none and plain auto fall back to the plain
   * algorithm, while a fixed protocol or a set is NCCL's only. */
  const char *ok[] = {"none", "auto", "LL,LL128,Simple"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    struct ds_err err = {0};
    struct ds_proto_flag f = parse_ok(ok[i]);
    cr_assert_eq(ds_proto_flag_require_model("--proto", &f, "no model", &err), DS_OK, "%s",
                 ok[i]);
  }
  const char *bad[][2] = {{"ll", "option --proto LL: no model"},
                          {"^LL128", "option --proto LL,Simple: no model"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct ds_err err = {0};
    struct ds_proto_flag f = parse_ok(bad[i][0]);
    cr_assert_eq(ds_proto_flag_require_model("--proto", &f, "no model", &err), DS_EUSAGE, "%s",
                 bad[i][0]);
    cr_assert_str_eq(err.msg, bad[i][1]);
  }
}
