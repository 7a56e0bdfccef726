/* torch.cat's generic CUDA kernel (cat_copy.h). */
#include "sim/train/cat_copy.h"

#include "sim/train/compute.h"

static const char *const pass_keys[] = {"fwd", "bwd", NULL};

ds_status ds_cat_copy_read(const struct ds_cnode *item, struct ds_layer *l, struct ds_err *err) {
  struct ds_cnode map, node;
  for (int p = 0; p < DS_ATTN_PASSES; p++) l->cat_copy[p].bytes = l->cat_copy[p].divisions = 0;
  if (!ds_cmap_get(item, "cat_copy", &map)) return DS_OK;
  if (!ds_cnode_is_map(&map))
    return ds_cnode_error(&map, err, "expected cat_copy as a map of fwd, bwd to [bytes, index "
                          "divisions]");
  DS_CHECK(ds_cmap_check_keys(&map, pass_keys, err));
  for (int p = 0; p < DS_ATTN_PASSES; p++) {
    int64_t v[2];
    if (!ds_cmap_get(&map, pass_keys[p], &node)) continue;
    DS_CHECK(ds_model_read_counts(&node, "[bytes, index divisions]", 2, 1u, v, err));
    /* the cats' bytes are part of the pass's: the forward's ops', the
     * backward's layout copies' */
    double most = p == DS_ATTN_FWD ? ds_layer_op_fwd_bytes(l) : l->bwd_copy_bytes;
    if ((double)v[0] > most)
      return ds_cnode_error(&node, err, "expected %s bytes at most the layer's %s (%.0f), got "
                            "%lld", pass_keys[p],
                            p == DS_ATTN_FWD ? "op_fwd_bytes" : "bwd_copy_bytes", most,
                            (long long)v[0]);
    /* the divisions come with the elements the bytes move: at most 6 a
     * byte, and 3 for the rounding of the two per-sample counts
     * (cat_copy.h) */
    double divisions_most = DS_CAT_DIVISIONS_PER_BYTE_MAX * (double)v[0] +
                            DS_CAT_DIVISIONS_ROUNDING;
    if ((double)v[1] > divisions_most) {
      struct ds_cnode divisions;
      DS_CHECK(ds_cseq_at(&node, 1, &divisions, err));
      return ds_cnode_error(&divisions, err, "expected %s index divisions at most %d a byte + %d "
                            "= %.0f for %lld bytes (CatArrayBatchedCopy's 2 x (dims - 1), "
                            "dims <= 4, an element of at least 1 byte), got %lld",
                            pass_keys[p], DS_CAT_DIVISIONS_PER_BYTE_MAX,
                            DS_CAT_DIVISIONS_ROUNDING, divisions_most, (long long)v[0],
                            (long long)v[1]);
    }
    l->cat_copy[p].bytes = (double)v[0];
    l->cat_copy[p].divisions = (double)v[1];
  }
  return DS_OK;
}

double ds_cat_copy_extra_ns(const struct ds_compute *c, const struct ds_layer *l, int pass,
                            int64_t batch) {
  double divisions = l->cat_copy[pass].divisions * (double)batch;
  if (divisions > 0 && !ds_compute_knows_sms(c)) ds_compute_charge_model(c, DS_KM_CAT, 0);
  if (divisions <= 0 || !ds_compute_knows_sms(c)) return 0;
  /* the cats copy activations or their gradients: the activation dtype's
   * bytes (bf16 under autocast: the KV cache's key and value come from a
   * half matmul, split's backward gets a half gradient) */
  double bytes = l->cat_copy[pass].bytes * (c->precision.act_bytes / 4.0) * (double)batch;
  double sm = divisions * DS_CAT_DIVISION_CYCLES / ((double)c->sms * c->sm_clock_hz) * 1e9;
  /* the roofline's launch is charged with the pass's other kernels */
  double roofline = ds_compute_class_kernel_ns(c, DS_LAYER_MEMORY, 0, bytes) -
                    c->params.kernel_overhead_ns;
  ds_compute_charge_model(c, DS_KM_CAT, sm > roofline);
  return sm > roofline ? sm - roofline : 0;
}
