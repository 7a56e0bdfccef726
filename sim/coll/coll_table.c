/*
 * The table of collective kinds (one entry per kind: name, algorithm, bus
 * factor, constructor, as nccl-tests' struct testColl) and the dispatch of
 * an instance's calls to its implementation (coll_impl.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim/coll/coll.h"
#include "sim/coll/coll_impl.h"

/* nccl-tests' bus factors (the *GetBw functions of its src/ files):
 * all-reduce 2(n-1)/n; all-gather, reduce-scatter, gather, scatter,
 * alltoall (n-1)/n; broadcast, reduce, sendrecv 1 (send, one message: 1). */
static double factor_allreduce(int32_t n) { return n > 1 ? 2.0 * (n - 1) / n : 0; }
static double factor_gather(int32_t n) { return n > 1 ? (double)(n - 1) / n : 0; }
static double factor_one(int32_t n) { return n > 1 ? 1 : 0; }

/* The ring kinds run the ring's rails when it has them (coll.h); under a
 * protocol, NCCL's channel rings where the search made them. */
static ds_status ring_or_rails(const struct ds_coll_spec *s, int32_t steps,
                               const struct ds_coll_proto *proto, struct ds_coll **out) {
  const struct ds_ring *ring = proto ? ds_ring_nccl(s->ring) : s->ring;
  if (ring->n_rails > 0)
    return ds__coll_rails_new(ring, s->net, s->model, s->chunks, steps, s->bytes, proto,
                              s->tag_base, s->on_done, s->owner,
                              s->alone && s->model == DS_COLL_FLOW ? s->topo : NULL, out);
  DS_CHECK(ds__coll_ring_new(ring, s->net, s->model, s->chunks, steps, s->bytes, proto,
                             s->tag_base, s->on_done, s->owner, out));
  if (s->alone) (void)ds__coll_ring_fold_symmetric(*out, s->topo);
  return DS_OK;
}

static ds_status create_allreduce(const struct ds_coll_spec *s, struct ds_coll **out,
                                  struct ds_err *err) {
  switch (s->algo) {
  case DS_AR_RING: break;
  case DS_AR_TREE: return ds__coll_tree_new(s, out, err);
  case DS_AR_NVLS: return ds__coll_nvls_new(s, out, err);
  case DS_AR_REDUCE_BCAST: return ds__coll_reduce_bcast_new(s, out, err);
  case DS_AR_DIRECT: return ds__coll_direct_new(s, out, err);
  case DS_AR_HIER: return ds__coll_hier_new(s, out, err);
  default: return ds_err_set(err, DS_EINTERNAL, "all-reduce algorithm %d unknown", (int)s->algo);
  }
  ds_status st = ring_or_rails(s, 2 * (s->ring->n - 1), s->proto, out);
  return st == DS_OK ? st : ds_err_set(err, st, "all-reduce: cannot create");
}

static ds_status create_half_ring(const struct ds_coll_spec *s, struct ds_coll **out,
                                  struct ds_err *err) {
  ds_status st = ring_or_rails(s, s->ring->n - 1, s->proto, out);
  return st == DS_OK ? st : ds_err_set(err, st, "collective: cannot create");
}

/* Broadcast and reduce run NCCL's Ring algorithm on the rings the ring
 * kinds run (ring_or_rails): the ring's rails, under a protocol NCCL's
 * channel rings where the search made them; a plain ring in rank order
 * where there are none. */
static ds_status chain_on_rails(const struct ds_coll_spec *s, int reduce, struct ds_coll **out,
                                struct ds_err *err) {
  const struct ds_ring *ring = s->proto ? ds_ring_nccl(s->ring) : s->ring;
  if (ring->n_rails > 0) return ds__coll_chain_rails_new(s, ring, reduce, out, err);
  return ds__coll_chain_new(s, reduce, out, err);
}

static ds_status create_broadcast(const struct ds_coll_spec *s, struct ds_coll **out,
                                  struct ds_err *err) {
  return chain_on_rails(s, 0, out, err);
}

static ds_status create_reduce(const struct ds_coll_spec *s, struct ds_coll **out,
                               struct ds_err *err) {
  return chain_on_rails(s, 1, out, err);
}

static ds_status create_gather(const struct ds_coll_spec *s, struct ds_coll **out,
                               struct ds_err *err) {
  return ds__coll_p2p_new(s, DS_COLL_GATHER, out, err);
}

static ds_status create_scatter(const struct ds_coll_spec *s, struct ds_coll **out,
                                struct ds_err *err) {
  return ds__coll_p2p_new(s, DS_COLL_SCATTER, out, err);
}

static ds_status create_sendrecv(const struct ds_coll_spec *s, struct ds_coll **out,
                                 struct ds_err *err) {
  return ds__coll_alltoall_new(s, DS_COLL_SENDRECV, out, err);
}

static ds_status create_alltoall(const struct ds_coll_spec *s, struct ds_coll **out,
                                 struct ds_err *err) {
  return ds__coll_alltoall_new(s, DS_COLL_ALLTOALL, out, err);
}

static ds_status create_send(const struct ds_coll_spec *s, struct ds_coll **out,
                             struct ds_err *err) {
  return ds__coll_p2p_new(s, DS_COLL_SEND, out, err);
}

static const struct ds_coll_desc table[DS_COLL_KIND_COUNT] = {
    {.kind = DS_COLL_ALLREDUCE, .name = "allreduce", .algo = "ring", .rooted = 0,
     .bus_factor = factor_allreduce, .create = create_allreduce},
    {.kind = DS_COLL_BROADCAST, .name = "broadcast", .algo = "ring", .rooted = 1,
     .bus_factor = factor_one, .create = create_broadcast},
    {.kind = DS_COLL_REDUCE, .name = "reduce", .algo = "ring", .rooted = 1,
     .bus_factor = factor_one, .create = create_reduce},
    {.kind = DS_COLL_ALLGATHER, .name = "allgather", .algo = "ring", .rooted = 0,
     .bus_factor = factor_gather, .create = create_half_ring},
    {.kind = DS_COLL_REDUCESCATTER, .name = "reducescatter", .algo = "ring", .rooted = 0,
     .bus_factor = factor_gather, .create = create_half_ring},
    {.kind = DS_COLL_GATHER, .name = "gather", .algo = "p2p", .rooted = 1,
     .bus_factor = factor_gather, .create = create_gather},
    {.kind = DS_COLL_SCATTER, .name = "scatter", .algo = "p2p", .rooted = 1,
     .bus_factor = factor_gather, .create = create_scatter},
    {.kind = DS_COLL_SENDRECV, .name = "sendrecv", .algo = "p2p", .rooted = 0,
     .bus_factor = factor_one, .create = create_sendrecv},
    {.kind = DS_COLL_ALLTOALL, .name = "alltoall", .algo = "p2p", .rooted = 0,
     .bus_factor = factor_gather, .create = create_alltoall},
    {.kind = DS_COLL_SEND, .name = "send", .algo = "p2p", .rooted = 0,
     .bus_factor = factor_one, .create = create_send},
};

const struct ds_coll_desc *ds_coll_desc_of(enum ds_coll_kind kind) {
  return (int)kind >= 0 && kind < DS_COLL_KIND_COUNT ? &table[kind] : NULL;
}

const struct ds_coll_desc *ds_coll_desc_find(const char *name) {
  for (int k = 0; k < DS_COLL_KIND_COUNT; k++)
    if (strcmp(table[k].name, name) == 0) return &table[k];
  return NULL;
}

const char *ds_coll_kind_names(void) {
  return "allreduce, broadcast, reduce, allgather, reducescatter, gather, scatter, "
         "sendrecv, alltoall, send";
}

static const char *const ar_algo_names[DS_AR_ALGO_COUNT] = {
    "ring", "tree", "nvls", "direct", "reduce-broadcast", "hierarchical"};

const char *ds_ar_algo_name(enum ds_ar_algo a) {
  return (int)a >= 0 && a < DS_AR_ALGO_COUNT ? ar_algo_names[a] : "?";
}

ds_status ds_ar_algo_parse(const char *s, enum ds_ar_algo *out) {
  for (int a = 0; a < DS_AR_ALGO_COUNT; a++)
    if (strcmp(s, ar_algo_names[a]) == 0) {
      *out = (enum ds_ar_algo)a;
      return DS_OK;
    }
  return DS_EUSAGE;
}

const char *ds_ar_algo_names(void) {
  return "ring, tree, nvls, direct, reduce-broadcast, hierarchical";
}

/* Algorithms NCCL runs under its protocols. */
static int has_protocols(enum ds_ar_algo a) {
  return a == DS_AR_RING || a == DS_AR_TREE || a == DS_AR_NVLS;
}

void ds_allreduce_algo_name(enum ds_ar_algo a, enum ds_proto p,
                            char out[DS_AR_ALGO_NAME_MAX]) {
  if (p >= DS_PROTO_COUNT || !has_protocols(a))
    snprintf(out, DS_AR_ALGO_NAME_MAX, "%s", ds_ar_algo_name(a));
  else
    snprintf(out, DS_AR_ALGO_NAME_MAX, "%s/%s", ds_ar_algo_name(a), ds_proto_name(p));
}

ds_status ds_allreduce_algo_parse(const char *algo, enum ds_ar_algo *a, enum ds_proto *p) {
  char name[DS_AR_ALGO_NAME_MAX];
  *a = DS_AR_RING;
  *p = DS_PROTO_COUNT;
  if (algo[0] == '\0') return DS_OK;
  const char *slash = strchr(algo, '/');
  size_t len = slash ? (size_t)(slash - algo) : strlen(algo);
  if (len >= sizeof name) return DS_EINPUT;
  memcpy(name, algo, len);
  name[len] = '\0';
  if (ds_ar_algo_parse(name, a) != DS_OK) return DS_EINPUT;
  if (!slash) return DS_OK;
  if (!has_protocols(*a) || ds_proto_parse(slash + 1, p) != DS_OK) return DS_EINPUT;
  return DS_OK;
}

int32_t ds_coll_pieces_bound(int32_t chunks, double step_bytes) {
  double most = floor(step_bytes / DS_PIECE_MIN_BYTES);
  if (!(most >= 1)) return 1;
  return most < chunks ? (int32_t)most : chunks;
}

int32_t ds_coll_chain_chunks(double bytes, int32_t min_chunks) {
  double c = ceil(bytes / DS_CHAIN_CHUNK_BYTES);
  if (c > (1 << 24)) c = 1 << 24;
  int32_t chunks = c >= 1 ? (int32_t)c : 1;
  return chunks > min_chunks ? chunks : (min_chunks > 1 ? min_chunks : 1);
}

void ds_coll_chain_cut(double bytes, int32_t chunks, double *piece_bytes, double *last_bytes) {
  *piece_bytes = bytes / chunks;
  *last_bytes = *piece_bytes;
  /* NCCL's cut: whole 512 KiB steps and a last of the rest, so a larger
   * buffer never runs faster (equal pieces of S/C did: 640000 B in two
   * pieces of 320000 beat 512000 B in one). Not where the 2^24 cap of
   * ds_coll_chain_chunks holds fewer steps than the bytes need: there the
   * rest was the whole buffer but 8.8e12 bytes, one piece that crossed
   * every hop unpipelined (busbw 3.35 GB/s of a 10 GB/s chain at 1e15 B) */
  if (chunks > 1 && chunks == ds_coll_chain_chunks(bytes, 1) &&
      bytes <= chunks * DS_CHAIN_CHUNK_BYTES) {
    *piece_bytes = DS_CHAIN_CHUNK_BYTES;
    *last_bytes = bytes - (chunks - 1) * DS_CHAIN_CHUNK_BYTES;
  }
}

ds_status ds_coll_new(const struct ds_coll_spec *spec, struct ds_coll **out,
                      struct ds_err *err) {
  const struct ds_coll_desc *d = ds_coll_desc_of(spec->kind);
  if (!d) return ds_err_set(err, DS_EINTERNAL, "collective kind %d unknown", (int)spec->kind);
  int32_t n = spec->ring->n;
  if (spec->chunks < 1 || !(spec->bytes >= 0))
    return ds_err_set(err, DS_EINTERNAL, "%s: chunks %d, bytes %g", d->name, spec->chunks,
                      spec->bytes);
  if (spec->kind == DS_COLL_ALLREDUCE && spec->proto && !has_protocols(spec->algo))
    return ds_err_set(err, DS_EUSAGE,
                      "allreduce %s: NCCL has no such algorithm, so no protocol: it runs "
                      "on the links' own bandwidth and latency (use --proto none)",
                      ds_ar_algo_name(spec->algo));
  if (spec->kind == DS_COLL_ALLREDUCE && spec->algo == DS_AR_NVLS && !spec->proto)
    return ds_err_set(err, DS_EUSAGE,
                      "allreduce nvls: runs only under NCCL's model (Simple protocol): "
                      "use --proto Simple or auto");
  if (spec->kind == DS_COLL_ALLREDUCE && spec->algo != DS_AR_RING && !spec->topo)
    return ds_err_set(err, DS_EINTERNAL, "allreduce %s: needs the topology",
                      ds_ar_algo_name(spec->algo));
  /* broadcast's and reduce's chain takes a protocol (ds_nccl_chain_proto:
   * DDP's buffer broadcast, `ddpsim collective --op broadcast|reduce`) */
  if (spec->proto && !ds_coll_kind_has_protocols(spec->kind))
    return ds_err_set(err, DS_EUSAGE,
                      "%s: NCCL protocols are simulated for allreduce, broadcast, reduce, "
                      "allgather, reducescatter, sendrecv and alltoall only (this "
                      "collective runs the plain %s)", d->name, d->algo);
  if (spec->proto && (spec->kind == DS_COLL_SENDRECV || spec->kind == DS_COLL_ALLTOALL) &&
      spec->proto->proto == DS_PROTO_LL128)
    return ds_err_set(err, DS_EUSAGE, "%s: NCCL's p2p runs LL or Simple, never LL128",
                      d->name);
  if (d->rooted && (spec->root < 0 || spec->root >= n))
    return ds_err_set(err, DS_EUSAGE, "%s: root %d is not one of its %d members", d->name,
                      spec->root, n);
  if (spec->kind == DS_COLL_SEND && n != 2)
    return ds_err_set(err, DS_EUSAGE, "send: needs 2 members, got %d", n);
  if ((spec->kind == DS_COLL_GATHER || spec->kind == DS_COLL_SCATTER ||
       spec->kind == DS_COLL_SENDRECV || spec->kind == DS_COLL_ALLTOALL ||
       spec->kind == DS_COLL_SEND) && !spec->topo)
    return ds_err_set(err, DS_EINTERNAL, "%s: needs the topology", d->name);
  return d->create(spec, out, err);
}

enum ds_ring_chunks_use ds_coll_ring_chunks_use(enum ds_coll_kind kind, enum ds_ar_algo algo,
                                                int nccl) {
  if (kind == DS_COLL_GATHER || kind == DS_COLL_SCATTER || kind == DS_COLL_SENDRECV ||
      kind == DS_COLL_ALLTOALL || kind == DS_COLL_SEND ||
      (kind == DS_COLL_ALLREDUCE && (algo == DS_AR_DIRECT || algo == DS_AR_REDUCE_BCAST)))
    return DS_RING_CHUNKS_NO_STEP;
  return nccl ? DS_RING_CHUNKS_NCCL : DS_RING_CHUNKS_CUT;
}

int ds_coll_aggregates(enum ds_coll_kind kind, enum ds_ar_algo algo, int spans_nodes) {
  if (kind == DS_COLL_ALLGATHER || kind == DS_COLL_REDUCESCATTER) return 1;
  if (kind != DS_COLL_ALLREDUCE) return 0;
  return algo == DS_AR_RING || algo == DS_AR_HIER || algo == DS_AR_TREE ||
         (algo == DS_AR_NVLS && spans_nodes);
}

int ds_ring_spans_nodes(const struct ds_topo *topo, const struct ds_ring *ring) {
  for (int32_t i = 1; i < ring->n; i++)
    if (topo->vertex_node[topo->gpu_vertex[ring->gpus[i]]] !=
        topo->vertex_node[topo->gpu_vertex[ring->gpus[0]]])
      return 1;
  return 0;
}

int ds_coll_kind_is_chain(enum ds_coll_kind kind) {
  return kind == DS_COLL_BROADCAST || kind == DS_COLL_REDUCE;
}

int ds_coll_kind_splits_buffer(enum ds_coll_kind kind) {
  return kind == DS_COLL_ALLGATHER || kind == DS_COLL_REDUCESCATTER ||
         kind == DS_COLL_ALLTOALL || kind == DS_COLL_GATHER || kind == DS_COLL_SCATTER;
}

double ds_coll_forward_unit_bytes(enum ds_proto p) {
  if (p == DS_PROTO_LL) return DS_LL_LINE_PAYLOAD_BYTES;
  if (p == DS_PROTO_LL128) return DS_LL128_SLICE_PAYLOAD_BYTES;
  return 0;
}

int ds_coll_kind_has_protocols(enum ds_coll_kind kind) {
  return kind == DS_COLL_ALLREDUCE || ds_coll_kind_is_chain(kind) || kind == DS_COLL_ALLGATHER ||
         kind == DS_COLL_REDUCESCATTER || kind == DS_COLL_SENDRECV || kind == DS_COLL_ALLTOALL;
}

ds_status ds_coll_enter(struct ds_coll *c, int32_t member) {
  return c->vt->enter(c, member);
}

ds_status ds_coll_flow_sent(struct ds_coll *c, int32_t idx) {
  return c->vt->flow_sent(c, idx);
}

ds_status ds_coll_flow_done(struct ds_coll *c, int32_t idx) {
  return c->vt->flow_done(c, idx);
}

int ds_coll_finishes_together(const struct ds_coll *c) {
  return c->vt->together ? c->vt->together(c) : 0;
}

void ds_coll_free(struct ds_coll *c) {
  if (c) c->vt->destroy(c);
}
