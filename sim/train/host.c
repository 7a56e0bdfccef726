#include "sim/train/host.h"

double ds_host_fwd_ns(const struct ds_compute *c, const struct ds_model *m, int32_t l,
                      double per_layer_ns) {
  if (!m->host_counts) return per_layer_ns;
  const struct ds_layer *ly = &m->layers[l];
  /* per dispatched aten op where the file counts them: a top-level op costs
   * what it decomposes into (bench/host_kinds.py); else per top-level op */
  double ns = m->host_dispatch_counts ? ly->host_dispatches * c->params.host_dispatch_ns
                                      : ly->host_ops * c->params.host_op_ns;
  /* autocast's casts nest inside the ops that need them (aten::linear's
   * aten::to): a cost of their own, with no Python around them */
  if (c->amp != DS_AMP_NONE) ns += ly->host_amp_casts * c->params.host_cast_ns;
  return ns;
}

double ds_host_bwd_ns(const struct ds_compute *c, const struct ds_model *m, int32_t l,
                      double per_layer_ns) {
  if (!m->host_counts) return per_layer_ns;
  const struct ds_layer *ly = &m->layers[l];
  double nodes = ly->host_nodes + (c->amp != DS_AMP_NONE ? ly->host_amp_nodes : 0);
  return nodes * c->params.host_node_ns;
}
