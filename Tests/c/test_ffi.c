/* Calls libleap the way other language runtimes do (Python ctypes, Ruby FFI, LuaJIT, Java FFM...):
 * through libffi, describing each signature at run time, with ffi_call on the exported functions. */
#include <ffi.h>
#include <stdlib.h>
#include "check.h"

/* Call `fn` with `n` pointer-or-integer arguments described by `types`, return value in `ret`. */
static void call(void (*fn)(void), ffi_type *rtype, void *ret, unsigned n, ffi_type **types, void **values) {
    ffi_cif cif;
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, n, rtype, types) != FFI_OK) {
        fprintf(stderr, "ffi_prep_cif failed\n");
        exit(1);
    }
    ffi_call(&cif, fn, ret, values);
}

/* An ffi_closure standing in for a C function pointer: how ctypes, cffi, JNA or LuaJIT pass callbacks.
 * It counts chunks and their bytes through user_data. */
typedef struct { int chunks; size_t bytes; } chunk_count;

static void chunk_closure(ffi_cif *cif, void *ret, void **args, void *closure_data) {
    size_t n = *(size_t *)args[1];
    chunk_count *c = *(chunk_count **)args[2];
    (void)cif;
    (void)closure_data;
    c->chunks++;
    c->bytes += n;
    *(ffi_arg *)ret = 0; /* continue */
}

/* Generate a short answer with a real model, with the chunk callback created by libffi at run time. */
static void test_closure_callback(void) {
    char path[1024];
    const char *dir = getenv("LEAP_MODELS_DIR");
    FILE *f;
    leap_model *model = NULL;
    leap_conversation *conv = NULL;
    leap_message *m = NULL;
    leap_generation_options o;
    leap_generation_callbacks cb;
    ffi_cif cif;
    ffi_type *args[3] = {&ffi_type_pointer, &ffi_type_pointer, &ffi_type_pointer};
    void *code = NULL;
    ffi_closure *closure;
    chunk_count count = {0, 0};

    args[1] = &ffi_type_uint64; /* size_t on LP64 */
    snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir ? dir : "models");
    if (!(f = fopen(path, "rb"))) {
        printf("test_ffi: closure test skipped (%s not found)\n", path);
        return;
    }
    fclose(f);
    closure = ffi_closure_alloc(sizeof(ffi_closure), &code);
    CHECK(closure != NULL);
    if (!closure) return;
    CHECK(ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 3, &ffi_type_sint32, args) == FFI_OK);
    CHECK(ffi_prep_closure_loc(closure, &cif, chunk_closure, NULL, code) == FFI_OK);

    CHECK_OK(leap_model_load(path, NULL, &model));
    CHECK_OK(leap_conversation_create(model, NULL, &conv));
    CHECK_OK(leap_message_create(LEAP_ROLE_USER, &m));
    CHECK_OK(leap_message_add_text(m, "Say hello."));
    leap_generation_options_init(&o, sizeof o);
    o.temperature = 0;
    o.max_tokens = 8;
    leap_generation_callbacks_init(&cb, sizeof cb);
    memcpy(&cb.on_chunk, &code, sizeof code); /* object pointer to function pointer, as FFI layers do */
    cb.user_data = &count;
    CHECK_OK(leap_conversation_generate(conv, m, &o, &cb));
    CHECK(count.chunks > 0 && count.bytes > 0);
    leap_message_free(m);
    leap_conversation_free(conv);
    leap_model_free(model);
    ffi_closure_free(closure);
}

int main(void) {
    ffi_arg status = 99;
    ffi_arg version = 0;
    leap_message *m = NULL;
    leap_message **pm = &m;
    char *json = NULL;
    char **pjson = &json;
    const char *text = "hello from libffi";
    const char *bad = "{\"role\":\"wizard\",\"content\":\"x\"}";
    int32_t role = LEAP_ROLE_USER;

    call((void (*)(void))leap_version_number, &ffi_type_uint32, &version, 0, NULL, NULL);
    CHECK((uint32_t)version == LEAP_VERSION_NUMBER);

    {   /* leap_status leap_message_create(leap_role, leap_message **) */
        ffi_type *t[2] = {&ffi_type_sint32, &ffi_type_pointer};
        void *v[2] = {&role, &pm};
        call((void (*)(void))leap_message_create, &ffi_type_sint32, &status, 2, t, v);
        CHECK((int)status == LEAP_OK && m != NULL);
    }
    {   /* leap_status leap_message_add_text(leap_message *, const char *) */
        ffi_type *t[2] = {&ffi_type_pointer, &ffi_type_pointer};
        void *v[2] = {&m, &text};
        call((void (*)(void))leap_message_add_text, &ffi_type_sint32, &status, 2, t, v);
        CHECK((int)status == LEAP_OK);
    }
    {   /* leap_status leap_message_to_json(const leap_message *, char **) */
        ffi_type *t[2] = {&ffi_type_pointer, &ffi_type_pointer};
        void *v[2] = {&m, &pjson};
        call((void (*)(void))leap_message_to_json, &ffi_type_sint32, &status, 2, t, v);
        CHECK((int)status == LEAP_OK);
        CHECK(json && strcmp(json, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello from libffi\"}]}") == 0);
    }
    {   /* void leap_string_free(char *); void leap_message_free(leap_message *) */
        ffi_type *t[1] = {&ffi_type_pointer};
        void *v1[1] = {&json};
        void *v2[1] = {&m};
        call((void (*)(void))leap_string_free, &ffi_type_void, NULL, 1, t, v1);
        call((void (*)(void))leap_message_free, &ffi_type_void, NULL, 1, t, v2);
    }
    {   /* an error travels back as a status and a message */
        ffi_type *t[2] = {&ffi_type_pointer, &ffi_type_pointer};
        void *v[2] = {&bad, &pm};
        const char *msg = NULL;
        call((void (*)(void))leap_message_from_json, &ffi_type_sint32, &status, 2, t, v);
        CHECK((int)status == LEAP_ERR_SERIALIZATION && m == NULL);
        call((void (*)(void))leap_last_error, &ffi_type_pointer, &msg, 0, NULL, NULL);
        CHECK(msg && strstr(msg, "unknown role \"wizard\"") != NULL);
    }
    test_closure_callback();
    return CHECK_SUMMARY("test_ffi");
}
