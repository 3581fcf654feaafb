/* Support for saved inference state (internal, not part of the public ABI). Used by LeapPromptCache. */
#ifndef LEAP_STATE_SUPPORT_H
#define LEAP_STATE_SUPPORT_H
#include <stddef.h>
#include <stdint.h>

/* XXH64 of n bytes (Yann Collet's xxHash, 64-bit variant) with `seed`: a fast checksum that catches
 * damaged snapshot files (not a defence against forged ones). */
uint64_t lk_xxh64(const void *data, size_t n, uint64_t seed);

/* The GNU build-id of the loaded object (executable or shared library) this code is linked into, copied
 * into out (at most cap bytes). Returns its length, or 0 when the object has none. Two builds of the
 * library with different code have different build-ids. */
size_t lk_build_id(uint8_t *out, size_t cap);

#endif
