/* Prints a GGUF file's metadata and tensor table, like gguf-dump: the leap_gguf_* API from C.
 *   cc gguf_info.c $(pkg-config --cflags --libs leap) -o gguf_info
 *   ./gguf_info model.gguf [--values]     (--values: print long arrays in full) */
#include <stdio.h>
#include <string.h>
#include <leap.h>

static int fail(const char *what) {
    fprintf(stderr, "%s failed: %s\n", what, leap_last_error());
    return 1;
}

int main(int argc, char **argv) {
    leap_gguf *g = NULL;
    size_t n_kv = 0, n_tensors = 0, i;
    uint32_t version = 0;
    uint64_t total = 0;
    int full = argc > 2 && strcmp(argv[2], "--values") == 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s model.gguf [--values]\n", argv[0]);
        return 2;
    }
    if (leap_gguf_open(argv[1], &g) != LEAP_OK) return fail("leap_gguf_open");
    if (leap_gguf_version(g, &version) != LEAP_OK || leap_gguf_metadata_count(g, &n_kv) != LEAP_OK ||
        leap_gguf_tensor_count(g, &n_tensors) != LEAP_OK) {
        leap_gguf_free(g);
        return fail("reading the header");
    }
    printf("%s: GGUF v%u, %zu metadata entries, %zu tensors\n\n", argv[1], version, n_kv, n_tensors);

    for (i = 0; i < n_kv; i++) {
        char *key = NULL, *type = NULL, *json = NULL;
        if (leap_gguf_metadata_key(g, i, &key) == LEAP_OK && leap_gguf_metadata_type(g, key, &type) == LEAP_OK &&
            leap_gguf_metadata_json(g, key, &json) == LEAP_OK) {
            size_t len = strlen(json);
            if (!full && len > 100)
                printf("%5zu: %-16s %-40s = %.80s... (%zu bytes of JSON)\n", i, type, key, json, len);
            else
                printf("%5zu: %-16s %-40s = %s\n", i, type, key, json);
        }
        leap_string_free(key);
        leap_string_free(type);
        leap_string_free(json);
    }

    printf("\n%5s  %-10s %-6s %-28s %12s %12s  %s\n", "#", "offset", "type", "ne", "elements", "bytes", "name");
    for (i = 0; i < n_tensors; i++) {
        leap_gguf_tensor_info t = {sizeof t, 0, NULL, {0, 0, 0, 0}, 0, NULL, 0, 0, 0};
        char shape[64];
        if (leap_gguf_tensor_info_get(g, i, &t) != LEAP_OK) { fail("leap_gguf_tensor_info_get"); break; }
        snprintf(shape, sizeof shape, "[%lld, %lld, %lld, %lld]", (long long)t.ne[0], (long long)t.ne[1],
                 (long long)t.ne[2], (long long)t.ne[3]);
        printf("%5zu  %-10llu %-6s %-28s %12llu %12llu  %s\n", i, (unsigned long long)t.offset, t.type_name, shape,
               (unsigned long long)t.n_elements, (unsigned long long)t.size, t.name);
        total += t.size;
    }
    printf("\ntensor data: %.1f MB\n", (double)total / 1e6);
    leap_gguf_free(g);
    return 0;
}
