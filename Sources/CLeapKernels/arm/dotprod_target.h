/* Included twice by an arm64 kernel file built a second time for the dot-product instructions (its dotprod/
 * copy defines LK_ARM_DOTPROD): first after its includes, compiling every function that follows for dotprod,
 * then at its end, which ends that. Nothing without LK_ARM_DOTPROD. */
#ifdef LK_ARM_DOTPROD
#ifndef LK_ARM_DOTPROD_ON
#define LK_ARM_DOTPROD_ON
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("+dotprod")
#endif
#else
#undef LK_ARM_DOTPROD_ON
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
#endif
