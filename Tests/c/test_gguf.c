/* Every leap_gguf_* entry point: open errors, metadata as JSON, the tensor table, and dequantized
 * tensors compared with gguf-py's values (Tests/Fixtures/gguf/random_types.golden.*, written by
 * scripts/fixtures/make_gguf_fixtures.py). Run from the repository root. */
#include <stdlib.h>
#include "check.h"

#define FIXTURES "Tests/Fixtures/gguf/"

static void check_json(const leap_gguf *g, const char *key, const char *expected) {
    char *json = NULL;
    CHECK_OK(leap_gguf_metadata_json(g, key, &json));
    if (!json || strcmp(json, expected) != 0) {
        fprintf(stderr, "metadata %s: got %s, expected %s\n", key, json ? json : "(null)", expected);
        CHECK(0);
    }
    leap_string_free(json);
}

static void test_open_errors(void) {
    leap_gguf *g = (leap_gguf *)1;
    CHECK_STATUS(leap_gguf_open(NULL, &g), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(g == NULL);
    CHECK_STATUS(leap_gguf_open(FIXTURES "random_types.gguf", NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_gguf_open("/nonexistent/x.gguf", &g), LEAP_ERR_IO);
    CHECK(g == NULL);
    CHECK_ERROR_MENTIONS("No such file or directory");
    CHECK_STATUS(leap_gguf_open(FIXTURES "random_types.golden.txt", &g), LEAP_ERR_FORMAT);
    CHECK_ERROR_MENTIONS("not a GGUF file");
    CHECK_ERROR_MENTIONS("text file");
    CHECK_STATUS(leap_gguf_open(FIXTURES "big_endian.gguf", &g), LEAP_ERR_UNSUPPORTED);
    CHECK_ERROR_MENTIONS("big-endian");
    CHECK_STATUS(leap_gguf_open(FIXTURES, &g), LEAP_ERR_IO);
    CHECK(g == NULL);
    leap_gguf_free(NULL);
}

static void test_metadata(const leap_gguf *g) {
    uint32_t version = 0;
    size_t n = 0;
    char *s = NULL;
    CHECK_OK(leap_gguf_version(g, &version));
    CHECK(version == 3);
    CHECK_OK(leap_gguf_metadata_count(g, &n));
    CHECK(n == 19);  /* general.architecture + 12 scalars + 6 arrays */
    CHECK_OK(leap_gguf_metadata_key(g, 0, &s));
    CHECK(s && strcmp(s, "general.architecture") == 0);
    leap_string_free(s);
    CHECK_STATUS(leap_gguf_metadata_key(g, n, &s), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    CHECK_OK(leap_gguf_metadata_type(g, "test.array.string", &s));
    CHECK(s && strcmp(s, "ARRAY[STRING]") == 0);
    leap_string_free(s);
    CHECK_OK(leap_gguf_metadata_type(g, "test.int16", &s));
    CHECK(s && strcmp(s, "INT16") == 0);
    leap_string_free(s);
    CHECK_STATUS(leap_gguf_metadata_type(g, "nope", &s), LEAP_ERR_INVALID_ARGUMENT);

    check_json(g, "general.architecture", "\"test\"");
    check_json(g, "test.uint8", "200");
    check_json(g, "test.int8", "-100");
    check_json(g, "test.uint32", "4000000000");
    check_json(g, "test.int32", "-2000000000");
    check_json(g, "test.uint64", "18000000000000000000");
    check_json(g, "test.int64", "-9000000000000000000");
    check_json(g, "test.float32", "0.15625");
    check_json(g, "test.float64", "-2.5e-300");
    check_json(g, "test.bool", "true");
    check_json(g, "test.string", "\"h\xC3\xA9llo w\xC3\xB6rld \xE2\x9C\x93\"");
    check_json(g, "test.array.int32", "[1,-2,3]");
    check_json(g, "test.array.bool", "[true,false,true]");
    check_json(g, "test.array.string", "[\"a\",\"\",\"\xC3\x9F\",\"<|im_start|>\"]");
    check_json(g, "test.array.float32", "[0.5,-1.25,3.0]");
    check_json(g, "test.array.nested", "[[1,2],[3],[4,5,6]]");
    CHECK_STATUS(leap_gguf_metadata_json(g, "nope", &s), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("no metadata key 'nope'");
    CHECK(s == NULL);
    CHECK_STATUS(leap_gguf_metadata_json(g, NULL, &s), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_gguf_metadata_json(g, "test.bool", NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_gguf_metadata_count(NULL, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_gguf_metadata_count(g, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_gguf_version(g, NULL), LEAP_ERR_INVALID_ARGUMENT);
}

static void test_tensor_info(const leap_gguf *g) {
    size_t n = 0, i = 0;
    leap_gguf_tensor_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(leap_gguf_tensor_count(g, &n));
    CHECK(n == 22);
    CHECK_OK(leap_gguf_find_tensor(g, "q4_k.random", &i));
    CHECK_OK(leap_gguf_tensor_info_get(g, i, &info));
    CHECK(info.struct_size == sizeof info);
    CHECK(info.name && strcmp(info.name, "q4_k.random") == 0);
    CHECK(info.n_dims == 2 && info.ne[0] == 512 && info.ne[1] == 3 && info.ne[2] == 1 && info.ne[3] == 1);
    CHECK(info.type == 12 && strcmp(info.type_name, "Q4_K") == 0);
    CHECK(info.size == 6 * 144 && info.n_elements == 1536 && info.offset % 32 == 0);
    CHECK_OK(leap_gguf_find_tensor(g, "q8_0.3d", &i));
    CHECK_OK(leap_gguf_tensor_info_get(g, i, &info));
    CHECK(info.n_dims == 3 && info.ne[0] == 64 && info.ne[1] == 3 && info.ne[2] == 2 && info.ne[3] == 1);

    /* An older, smaller struct: only the fields it has are written. */
    {
        struct { uint32_t struct_size; uint32_t n_dims; const char *name; uint64_t guard; } small;
        small.struct_size = 8;
        small.n_dims = 99;
        small.name = NULL;
        small.guard = 0x1234;
        CHECK_OK(leap_gguf_tensor_info_get(g, 0, (leap_gguf_tensor_info *)(void *)&small));
        CHECK(small.struct_size == 8 && small.n_dims == 2 && small.name == NULL && small.guard == 0x1234);
    }
    info.struct_size = 0;
    CHECK_STATUS(leap_gguf_tensor_info_get(g, 0, &info), LEAP_ERR_INVALID_ARGUMENT);
    info.struct_size = sizeof info;
    CHECK_STATUS(leap_gguf_tensor_info_get(g, n, &info), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("out of range");
    CHECK_STATUS(leap_gguf_tensor_info_get(g, 0, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_gguf_find_tensor(g, "nope", &i), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_gguf_find_tensor(g, NULL, &i), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_gguf_tensor_count(NULL, &n), LEAP_ERR_INVALID_ARGUMENT);
}

/* Each tensor's dequantized values equal gguf-py's, bit for bit. */
static void test_dequantize(const leap_gguf *g) {
    FILE *index = fopen(FIXTURES "random_types.golden.txt", "r");
    FILE *bin = fopen(FIXTURES "random_types.golden.bin", "rb");
    char line[256], name[64], type[16];
    size_t count = 0, offset = 0, checked = 0;
    CHECK(index && bin);
    if (!index || !bin) return;
    while (fgets(line, sizeof line, index)) {
        size_t i = 0, n = 0;
        float *values = NULL, *golden = NULL;
        if (line[0] == '#' || sscanf(line, "%63s %15s %zu %zu", name, type, &count, &offset) != 4) continue;
        CHECK_OK(leap_gguf_find_tensor(g, name, &i));
        CHECK_OK(leap_gguf_tensor_dequantize(g, i, &values, &n));
        CHECK(n == count);
        golden = malloc(count * sizeof *golden);
        CHECK(golden && fseek(bin, (long)(offset * 4), SEEK_SET) == 0 && fread(golden, 4, count, bin) == count);
        if (golden && values && n == count && memcmp(golden, values, count * 4) != 0) {
            fprintf(stderr, "tensor %s (%s) differs from gguf-py\n", name, type);
            CHECK(0);
        }
        checked++;
        free(golden);
        leap_buffer_free(values);
    }
    CHECK(checked == 22);
    fclose(index);
    fclose(bin);
    {
        float *values = (float *)1;
        size_t n = 7;
        CHECK_STATUS(leap_gguf_tensor_dequantize(g, 1000, &values, &n), LEAP_ERR_INVALID_ARGUMENT);
        CHECK(values == NULL && n == 0);
        CHECK_STATUS(leap_gguf_tensor_dequantize(g, 0, NULL, &n), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_gguf_tensor_dequantize(g, 0, &values, NULL), LEAP_ERR_INVALID_ARGUMENT);
    }
}

/* A handle of another kind is rejected, not misused. */
static void test_wrong_handle(void) {
    leap_message *m = NULL;
    size_t n = 0;
    CHECK_OK(leap_message_create(LEAP_ROLE_USER, &m));
    CHECK_STATUS(leap_gguf_tensor_count((const leap_gguf *)(void *)m, &n), LEAP_ERR_INVALID_ARGUMENT);
    leap_gguf_free((leap_gguf *)(void *)m); /* ignored: not a gguf handle */
    CHECK_OK(leap_message_part_count(m, &n));
    leap_message_free(m);
}

/* The real models, when present: open, and the first tensor dequantizes. */
static void test_real_models(void) {
    const char *dir = getenv("LEAP_MODELS_DIR");
    const char *files[] = {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"};
    char path[1024];
    for (int k = 0; k < 2; k++) {
        leap_gguf *g = NULL;
        size_t n = 0;
        char *json = NULL;
        snprintf(path, sizeof path, "%s/%s", dir ? dir : "models", files[k]);
        FILE *f = fopen(path, "rb");
        if (!f) { printf("skipping %s: not found\n", path); continue; }
        fclose(f);
        CHECK_OK(leap_gguf_open(path, &g));
        CHECK_OK(leap_gguf_tensor_count(g, &n));
        CHECK(n > 100);
        CHECK_OK(leap_gguf_metadata_json(g, "tokenizer.ggml.tokens", &json));
        CHECK(json && json[0] == '[');
        leap_string_free(json);
        leap_gguf_free(g);
    }
}

int main(void) {
    leap_gguf *g = NULL;
    test_open_errors();
    CHECK_OK(leap_gguf_open(FIXTURES "random_types.gguf", &g));
    if (g) {
        test_metadata(g);
        test_tensor_info(g);
        test_dequantize(g);
    }
    leap_gguf_free(g);
    test_wrong_handle();
    test_real_models();
    return CHECK_SUMMARY("test_gguf");
}
