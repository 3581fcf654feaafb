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
    return CHECK_SUMMARY("test_ffi");
}
