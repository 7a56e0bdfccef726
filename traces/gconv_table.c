/* Measured grouped-convolution kernel times (gconv_table.h). */
#include "traces/gconv_table.h"

const char *const ds_gconv_mode_names[DS_GCONV_MODES] = {"fp32", "tf32", "half", "half_nhwc"};

int ds_gconv_same_shape(const struct ds_gconv_entry *a, const struct ds_gconv_entry *b) {
  return a->group_width == b->group_width && a->out_channels == b->out_channels &&
         a->out_positions == b->out_positions && a->stride == b->stride;
}
