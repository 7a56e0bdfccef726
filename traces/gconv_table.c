/* Measured grouped-convolution kernel times (gconv_table.h). */
#include "traces/gconv_table.h"

const char *const ds_gconv_mode_names[DS_GCONV_MODES] = {"fp32", "tf32", "half", "half_nhwc"};
