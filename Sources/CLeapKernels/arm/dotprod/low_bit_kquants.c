/* low_bit_kquants.c built for the dot-product instructions (sdot): the NEON dotprod table's Q2_K and Q3_K. */
#define LK_ARM_DOTPROD 1
#include "../low_bit_kquants.c"
