/* Included twice by an arm64 kernel file of the i8mm table (smmla, with sdot beside it): first after its
 * includes, compiling every function that follows for dotprod and i8mm, then at its end, which ends that. */
#ifndef LK_ARM_I8MM_ON
#define LK_ARM_I8MM_ON
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod,i8mm"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("+dotprod+i8mm")
#endif
#else
#undef LK_ARM_I8MM_ON
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
