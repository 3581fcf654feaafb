/* Every foundation entry point: status/version/error/memory functions and leap_message_*, including
 * NULL arguments, wrong handle kinds, out-of-range indices and malformed data. */
#include <stdlib.h>
#include "check.h"

static const unsigned char jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0xFF, 0xD9};
static const unsigned char png[] = {0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A};

static void test_status_version_memory(void) {
    CHECK(strcmp(leap_status_string(LEAP_OK), "LEAP_OK") == 0);
    CHECK(strcmp(leap_status_string(LEAP_ERR_BUSY), "LEAP_ERR_BUSY") == 0);
    CHECK(strcmp(leap_status_string((leap_status)12345), "LEAP_ERR_UNKNOWN") == 0);
    CHECK(leap_version_number() == LEAP_VERSION_NUMBER);
    CHECK(strcmp(leap_version_string(), "0.1.0") == 0);
    CHECK(leap_last_error() != NULL);
    leap_string_free(NULL);
    leap_buffer_free(NULL);
    leap_message_free(NULL);
    CHECK(strcmp(leap_role_string(LEAP_ROLE_TOOL), "tool") == 0);
    CHECK(leap_role_string((leap_role)9) == NULL);
}

static void test_build_and_read_back(void) {
    leap_message *m = NULL;
    size_t n = 0;
    leap_content_type type;
    leap_role role;
    char *text = NULL, *name = NULL, *args = NULL, *json = NULL;
    uint8_t *data = NULL;
    float *pcm = NULL;
    int32_t rate = 0;
    const float samples[4] = {0.0f, 0.5f, -0.5f, 1.0f};

    CHECK_OK(leap_message_create(LEAP_ROLE_ASSISTANT, &m));
    CHECK(m != NULL);
    CHECK(strcmp(leap_last_error(), "") == 0);
    CHECK_OK(leap_message_add_text(m, "Caf\xC3\xA9 \xF0\x9F\x98\x80"));
    CHECK_OK(leap_message_add_image_jpeg(m, jpeg, sizeof jpeg));
    CHECK_OK(leap_message_add_audio_samples(m, samples, 2, 2, 16000));
    CHECK_OK(leap_message_add_audio_pcm_f32(m, samples, 4, 24000));
    CHECK_OK(leap_message_set_reasoning(m, "thinking"));
    CHECK_OK(leap_message_add_function_call(m, "get_weather", "{\"city\":\"Paris\",\"days\":3}"));
    CHECK_OK(leap_message_add_function_call(m, "now", NULL));

    CHECK_OK(leap_message_role(m, &role));
    CHECK(role == LEAP_ROLE_ASSISTANT);
    CHECK_OK(leap_message_part_count(m, &n));
    CHECK(n == 4);
    CHECK_OK(leap_message_part_type(m, 2, &type));
    CHECK(type == LEAP_CONTENT_AUDIO);
    CHECK_OK(leap_message_part_text(m, 0, &text));
    CHECK(text && strcmp(text, "Caf\xC3\xA9 \xF0\x9F\x98\x80") == 0);
    leap_string_free(text);
    CHECK_OK(leap_message_part_data(m, 1, &data, &n));
    CHECK(n == sizeof jpeg && memcmp(data, jpeg, n) == 0);
    leap_buffer_free(data);
    CHECK_OK(leap_message_part_data(m, 2, &data, &n));
    CHECK(n == 44 + 16 && memcmp(data, "RIFF", 4) == 0 && data[22] == 2);
    leap_buffer_free(data);
    CHECK_OK(leap_message_part_pcm(m, 3, &pcm, &n, &rate));
    CHECK(n == 4 && rate == 24000 && pcm[1] == 0.5f && pcm[3] == 1.0f);
    leap_buffer_free(pcm);
    CHECK_OK(leap_message_reasoning(m, &text));
    CHECK(text && strcmp(text, "thinking") == 0);
    leap_string_free(text);
    CHECK_OK(leap_message_function_call_count(m, &n));
    CHECK(n == 2);
    CHECK_OK(leap_message_function_call(m, 0, &name, &args));
    CHECK(strcmp(name, "get_weather") == 0 && strcmp(args, "{\"city\":\"Paris\",\"days\":3}") == 0);
    leap_string_free(name);
    leap_string_free(args);
    CHECK_OK(leap_message_function_call(m, 1, &name, &args));
    CHECK(strcmp(args, "{}") == 0);
    leap_string_free(name);
    leap_string_free(args);

    /* JSON round trip through a second handle. */
    CHECK_OK(leap_message_to_json(m, &json));
    {
        leap_message *back = NULL;
        char *json2 = NULL;
        CHECK_OK(leap_message_from_json(json, &back));
        CHECK_OK(leap_message_to_json(back, &json2));
        CHECK(json2 && strcmp(json, json2) == 0);
        leap_string_free(json2);
        leap_message_free(back);
    }
    CHECK(strstr(json, "\"tool_calls\":[{\"index\":0,\"id\":\"call_0\",\"type\":\"function\"") != NULL);
    CHECK(strstr(json, "\"reasoning_content\":\"thinking\"") != NULL);
    leap_string_free(json);

    /* Copies are independent. */
    {
        leap_message *copy = NULL;
        CHECK_OK(leap_message_copy(m, &copy));
        CHECK_OK(leap_message_add_text(copy, "more"));
        CHECK_OK(leap_message_part_count(m, &n));
        CHECK(n == 4);
        CHECK_OK(leap_message_set_reasoning(copy, NULL));
        CHECK_OK(leap_message_reasoning(copy, &text));
        CHECK(text == NULL);
        leap_message_free(copy);
    }
    leap_message_free(m);
}

static void test_misuse(void) {
    leap_message *m = (leap_message *)0x1;
    leap_message *user = NULL;
    size_t n = 0;
    char *s = (char *)0x1;
    uint8_t *data = NULL;
    leap_content_type t;
    const float x = 0.0f;

    CHECK_STATUS(leap_message_create(LEAP_ROLE_USER, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("out_message must not be NULL");
    CHECK_STATUS(leap_message_create((leap_role)7, &m), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(m == NULL);
    CHECK_ERROR_MENTIONS("role 7");
    CHECK_STATUS(leap_message_add_text(NULL, "x"), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("message must not be NULL");
    CHECK_OK(leap_message_create(LEAP_ROLE_USER, &user));
    CHECK_STATUS(leap_message_add_text(user, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_text(user, "bad \xC3\x28 utf8"), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("not valid UTF-8");
    CHECK_STATUS(leap_message_add_image_jpeg(user, png, sizeof png), LEAP_ERR_SERIALIZATION);
    CHECK_ERROR_MENTIONS("PNG data");
    CHECK_STATUS(leap_message_add_image_jpeg(user, NULL, 10), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_wav(user, "ID3\x04\x00\x00\x00\x00\x00\x00\x00\x00", 12), LEAP_ERR_AUDIO_FORMAT);
    CHECK_ERROR_MENTIONS("MP3");
    CHECK_STATUS(leap_message_add_audio_samples(user, &x, 1, 0, 16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_samples(user, &x, 1, 1, 0), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_samples(user, &x, (size_t)-1, 2, 16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_pcm_f32(user, NULL, 3, 16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_function_call(user, "", NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_function_call(user, "f", "[1,2]"), LEAP_ERR_SERIALIZATION);
    CHECK_STATUS(leap_message_add_function_call(user, "f", "{oops"), LEAP_ERR_SERIALIZATION);
    CHECK_ERROR_MENTIONS("arguments_json: invalid JSON at line 1, column 2");
    CHECK_STATUS(leap_message_part_type(user, 0, &t), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("out of range (the message has 0 parts)");
    CHECK_OK(leap_message_add_text(user, "hi"));
    CHECK_STATUS(leap_message_part_data(user, 0, &data, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(data == NULL && n == 0);
    CHECK_STATUS(leap_message_part_text(user, 0, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_function_call(user, 0, &s, &s), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    CHECK_STATUS(leap_message_part_count(user, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_to_json(user, NULL), LEAP_ERR_INVALID_ARGUMENT);

    /* Malformed JSON and a field error are reported with their position / path. */
    m = (leap_message *)0x1;
    CHECK_STATUS(leap_message_from_json("{\"role\":\"user\",\"content\":[{\"type\":\"video\"}]}", &m), LEAP_ERR_SERIALIZATION);
    CHECK(m == NULL);
    CHECK_ERROR_MENTIONS("message.content[0].type: unknown content type \"video\"");
    CHECK_STATUS(leap_message_from_json("{\"role\":", &m), LEAP_ERR_SERIALIZATION);
    CHECK_ERROR_MENTIONS("line 1, column 9");
    CHECK_STATUS(leap_message_from_json(NULL, &m), LEAP_ERR_INVALID_ARGUMENT);

    /* A handle of the wrong kind is rejected, not misused: a pointer to a live message works, a
     * pointer to a random heap block does not crash. */
    {
        void *junk = calloc(1, 64);
        CHECK_STATUS(leap_message_add_text((leap_message *)junk, "x"), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("not a valid");
        leap_message_free((leap_message *)junk); /* ignored: not a message handle */
        free(junk);
    }
    /* Errors are per call: a success clears the message. */
    CHECK_OK(leap_message_part_count(user, &n));
    CHECK(strcmp(leap_last_error(), "") == 0);
    leap_message_free(user);
}

int main(void) {
    test_status_version_memory();
    test_build_and_read_back();
    test_misuse();
    return CHECK_SUMMARY("test_foundation");
}
