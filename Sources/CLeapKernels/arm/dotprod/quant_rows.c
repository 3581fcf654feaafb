/* quant_rows.c built for the dot-product instructions (sdot): the NEON dotprod table's integer products. */
#define LK_ARM_DOTPROD 1
#include "../quant_rows.c"
