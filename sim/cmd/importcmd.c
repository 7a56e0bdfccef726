/*
 * `ddpsim topo import` (see importcmd.h): options, the GPU table, one
 * reader per file, the writer.
 */
#include "sim/cmd/importcmd.h"

#include <stdlib.h>
#include <string.h>

#include "base/atomic_file.h"
#include "base/cli.h"
#include "base/config.h"
#include "base/lookup.h"
#include "base/outputs.h"
#include "base/units.h"
#include "sim/net/gpu_table.h"
#include "sim/net/topo_import.h"

#define IMPORT_FILES_MAX 1024

static const char usage[] =
    "usage: ddpsim topo import FILE... [--nodes N] [--nic COUNTxBW] [--gpu NAME]\n"
    "                          [--gpus TABLE] [--name NAME] [-o OUT]\n"
    "\n"
    "Writes a topology YAML (docs/topologies.md) from what a machine says of itself:\n"
    "NCCL's topology XML (NCCL_TOPO_DUMP_FILE=topo.xml) or `nvidia-smi topo -m`'s\n"
    "matrix (with `nvidia-smi -L`'s lines in the same file, or --gpu, to name the\n"
    "GPU); the format is detected. Comments say where every value came from and\n"
    "what was assumed. One FILE per node, or one FILE and --nodes N for N alike.\n"
    "Each FILE is a saved file, not - (standard input): the topology's name and\n"
    "GPU table come from the first one's path, and -o is checked against every\n"
    "one's (nvidia-smi topo -m > m.txt).\n"
    "  --nic COUNTxBW    NICs per node and their speed (8x400Gbps; or BW alone),\n"
    "                    over what the files say; BW needs its unit (Gbps, GBps);\n"
    "                    two nodes or more (one node's topology has no NICs)\n"
    "  --gpu NAME        the GPU, over the files' device ids: a name of the GPU\n"
    "                    table, or nvidia-smi's (\"RTX 4090\" too: without its vendor\n"
    "                    words where they end one GPU's name alone)\n"
    "  --gpus TABLE      a gpus.yaml adding to the shipped table (default: gpus.yaml\n"
    "                    beside the first FILE, if any; a file, not -)\n"
    "  --name NAME       the topology's name (default: the first FILE's base name)\n"
    "  -o, --output OUT  write OUT (atomically; never one of the inputs) instead of\n"
    "                    standard output\n"
    "  --help\n";

struct import_args {
  const char *files[IMPORT_FILES_MAX];
  int n_files;
  const char *gpu, *gpus, *output;
  struct ds_import_options o;
  int help;
};

static ds_status parse_nic(const char *v, struct ds_import_options *o, struct ds_err *err) {
  const char *x = strchr(v, 'x');
  char *end;
  o->nic_spec = v;
  if (x && x != v) {
    long n = strtol(v, &end, 10);
    if (end != x || n < 1 || n > 1024)
      return ds_err_set(err, DS_EUSAGE, "option --nic: expected COUNTxBW (8x400Gbps) with a "
                        "COUNT from 1 to 1024, got \"%s\"", v);
    o->nic_count = (int32_t)n;
    v = x + 1;
  }
  /* a bare "200" would parse as 200 B/s (a run hours long): refused, as
   * in a file (base/units.h's ds_units_unit_left_out) */
  if (ds_units_unit_left_out(v))
    return ds_err_set(err, DS_EUSAGE, "option --nic: expected the bandwidth with its unit, "
                      "got \"%s\": write the unit you mean, e.g. %.*s%sGbps (bits, as NICs "
                      "are sold) or %.*s%sGBps", o->nic_spec, (int)(v - o->nic_spec), o->nic_spec,
                      v, (int)(v - o->nic_spec), o->nic_spec, v);
  if (ds_units_parse_bw(v, &o->nic_bw) != DS_OK || o->nic_bw <= 0)
    return ds_err_set(err, DS_EUSAGE, "option --nic: expected COUNTxBW (8x400Gbps) or a "
                      "bandwidth (400Gbps), got \"%s\"", o->nic_spec);
  return DS_OK;
}

/* Every flag topo import knows (base/cli.h): its parser refuses the others and
 * says which of these is missing its value. */
static const struct ds_cli_option options[] = {
    {"--nodes", 1, NULL}, {"--nic", 1, NULL}, {"--gpu", 1, NULL}, {"--gpus", 1, NULL},
    {"--name", 1, NULL}, {"-o", 1, "--output"}, {"--output", 1, NULL}, {"--help", 0, NULL},
    {"-h", 0, "--help"}, {NULL, 0, NULL}};

const struct ds_cli_option *ds_importcmd_options(void) { return options; }

/* ds_cli_parse_split's parse: the words, "--flag=value" already split. */
static ds_status parse_words(int argc, char **argv, void *ctx, struct ds_err *err) {
  struct import_args *a = ctx;
  struct ds_cli_walk w = {.program = "ddpsim topo import", .options = options,
                          .positionals = DS_CLI_POSITIONALS_PLAIN_OR_DASH};
  for (int i = 1; i < argc; i++) {
    const char *f, *v;
    DS_CHECK(ds_cli_next_word(&w, argc, argv, &i, &f, &v, err));
    if (!f) {
      if (a->n_files == IMPORT_FILES_MAX)
        return ds_err_set(err, DS_EUSAGE, "ddpsim topo import: at most %d files", IMPORT_FILES_MAX);
      /* the first names the topology; each, later ones too, is read by path */
      DS_CHECK(ds_cli_refuse_stdin(err, "argument FILE", v,
                                   a->n_files == 0 ? "import names the topology and finds a "
                                                     "GPU table from the first file's path"
                                                   : "import reads every node's file by its "
                                                     "path, as the first, and checks -o "
                                                     "against each",
                                   "the saved file, e.g. nvidia-smi topo -m > m.txt"));
      a->files[a->n_files++] = v;
    } else if (ds_cli_is_help(f)) {
      a->help = 1;
    } else if (strcmp(f, "--nodes") == 0) {
      char *end;
      long n = strtol(v, &end, 10);
      if (*v == '\0' || *end != '\0' || n < 1 || n > 65536)
        return ds_err_set(err, DS_EUSAGE, "option --nodes: expected a node count from 1 to "
                          "65536, got \"%s\"", v);
      a->o.nodes = (int32_t)n;
    } else if (strcmp(f, "--nic") == 0) {
      DS_CHECK(parse_nic(v, &a->o, err));
    } else if (strcmp(f, "--gpu") == 0) {
      a->gpu = v;
    } else if (strcmp(f, "--gpus") == 0) {
      DS_CHECK(ds_cli_refuse_stdin(err, "option --gpus", v, "a GPU table is a YAML file",
                                   "a gpus.yaml's path"));
      a->gpus = v;
    } else if (strcmp(f, "--name") == 0) {
      a->o.name = v;
      size_t n = strlen(a->o.name);
      if (n == 0 || n >= DS_NAME_CAP) /* the topology loader's bound (base/config.h) */
        return ds_err_set(err, DS_EUSAGE, "option --name: expected a topology name of 1 to %d "
                          "bytes, got %zu", DS_NAME_CAP - 1, n);
    } else if (strcmp(f, "-o") == 0 || strcmp(f, "--output") == 0) {
      a->output = v;
    } else {
      return ds_cli_unhandled(err, f);
    }
  }
  if (!a->help && a->n_files == 0)
    return ds_err_set(err, DS_EUSAGE, "ddpsim topo import: missing FILE (see --help)");
  /* one node's topology leaves its NICs out (topo_import.c cluster_of):
   * --nic there would change nothing of the file written */
  int nodes = a->o.nodes ? a->o.nodes : a->n_files;
  if (!a->help && a->o.nic_spec && nodes < 2)
    return ds_err_set(err, DS_EUSAGE, "option --nic %s: one node (one FILE and no --nodes, or --nodes 1), whose "
                      "topology leaves its NICs out (they carry nothing inside a node); it "
                      "would be ignored: give --nodes N or one FILE per node", a->o.nic_spec);
  return DS_OK;
}

static ds_status run(struct import_args *a, const struct ds_gpu_table *table, FILE *out,
                     struct ds_err *err) {
  const struct ds_gpu_info *forced = NULL;
  if (a->gpu) {
    /* the table's name, or nvidia-smi's with or without its vendor words
     * where they end one GPU's name alone, as a --calib file's gpu */
    forced = ds_gpu_table_by_device_name(table, a->gpu);
    if (!forced) {
      char known[768], hint[256];
      ds_gpu_table_names(table, known, sizeof known);
      ds_gpu_table_suggest(table, a->gpu, hint, sizeof hint);
      return ds_err_set(err, DS_EUSAGE, "option --gpu: unknown GPU '%s' (%sknown: %s)", a->gpu,
                        hint, known);
    }
  }
  struct ds_import_node *nodes = calloc((size_t)a->n_files, sizeof *nodes);
  if (!nodes) return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = DS_OK;
  int read = 0;
  for (; read < a->n_files && st == DS_OK; read++)
    st = ds_import_read(a->files[read], table, forced, &nodes[read], err);
  struct ds_atomic_file af = {0};
  if (st == DS_OK && a->output) {
    st = ds_atomic_file_open(a->output, &af, err);
    if (st == DS_OK) out = af.fp;
  }
  if (st == DS_OK) st = ds_import_write(out, nodes, a->n_files, &a->o, err);
  if (a->output && af.fp) {
    if (st == DS_OK) st = ds_atomic_file_commit(&af, err);
    else ds_atomic_file_abort(&af);
  }
  for (int i = 0; i < read; i++) ds_import_node_release(&nodes[i]);
  free(nodes);
  return st;
}

/* ds_outputs_check of -o against every FILE and the GPU table read. */
static ds_status check_output(const struct import_args *a, const char *gpus_path,
                              struct ds_err *err) {
  struct ds_path_arg out = {"-o/--output", a->output};
  struct ds_path_arg *ins = calloc((size_t)a->n_files + 1, sizeof *ins);
  if (!ins) return ds_err_set(err, DS_ENOMEM, "out of memory");
  for (int i = 0; i < a->n_files; i++) ins[i] = (struct ds_path_arg){"FILE", a->files[i]};
  ins[a->n_files] = (struct ds_path_arg){"--gpus", gpus_path};
  ds_status st = ds_outputs_check(&out, 1, ins, (size_t)a->n_files + 1, err);
  free(ins);
  return st;
}

ds_status ds_importcmd_check_args(int argc, char **argv, struct ds_err *err) {
  struct import_args *a = calloc(1, sizeof *a);
  if (!a) return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = ds_cli_parse_split(options, argc, argv, parse_words, a, err);
  free(a);
  return st;
}

ds_status ds_importcmd_main(int argc, char **argv, FILE *out, struct ds_err *err) {
  struct import_args *a = calloc(1, sizeof *a);
  if (!a) return ds_err_set(err, DS_ENOMEM, "out of memory");
  ds_status st = ds_cli_parse_split(options, argc, argv, parse_words, a, err);
  if (st == DS_OK && a->help) {
    fputs(usage, out);
  } else if (st == DS_OK) {
    char path[4096];
    if (a->gpus) {
      snprintf(path, sizeof path, "%s", a->gpus);
    } else {
      st = ds_lookup_gpu_table(a->files[0], path, sizeof path, err);
    }
    /* Before any reading: OUT can be written and is none of the inputs
     * (`-o victim.xml` of victim.xml replaced the machine's own file). */
    if (st == DS_OK) st = check_output(a, path, err);
    struct ds_gpu_table table = {0};
    if (st == DS_OK) st = ds_gpu_table_load(path, &table, err);
    if (st == DS_OK) st = run(a, &table, out, err);
    ds_gpu_table_release(&table);
  }
  free(a);
  return st;
}
