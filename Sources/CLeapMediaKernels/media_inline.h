/* INLINE: how the media kernel files mark the small functions of their SIMD loops, always inlined into the
 * function that calls them (and so built for that function's target, e.g. inside a
 * `#pragma clang attribute push(... target ...)` region). */
#ifndef MEDIA_INLINE_H
#define MEDIA_INLINE_H
#define INLINE static inline __attribute__((always_inline))
#endif
