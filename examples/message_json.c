/* Builds a multimodal user message (text + JPEG image + audio from float samples), prints its JSON,
 * parses the JSON back and lists the parts: the LEAP "Messages & Content" API from C.
 *   cc message_json.c $(pkg-config --cflags --libs leap) -o message_json */
#include <math.h>
#include <stdio.h>
#include <leap.h>

static int fail(const char *what) {
    fprintf(stderr, "%s failed: %s\n", what, leap_last_error());
    return 1;
}

int main(void) {
    /* The smallest JPEG-looking payload (SOI ... EOI); a real program passes a JPEG file's bytes. */
    static const unsigned char jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00, 0xFF, 0xD9};
    float tone[160]; /* 10 ms of a 1 kHz tone at 16 kHz */
    leap_message *msg = NULL, *parsed = NULL;
    char *json = NULL;
    size_t i, n_parts = 0;
    int rc = 1;

    for (i = 0; i < 160; i++) tone[i] = 0.5f * (float)sin(2.0 * 3.14159265358979 * 1000.0 * (double)i / 16000.0);

    if (leap_message_create(LEAP_ROLE_USER, &msg) != LEAP_OK) return fail("leap_message_create");
    if (leap_message_add_text(msg, "What is in this picture, and what do you hear?") != LEAP_OK) { fail("add_text"); goto done; }
    if (leap_message_add_image_jpeg(msg, jpeg, sizeof jpeg) != LEAP_OK) { fail("add_image_jpeg"); goto done; }
    if (leap_message_add_audio_samples(msg, tone, 160, 1, 16000) != LEAP_OK) { fail("add_audio_samples"); goto done; }
    if (leap_message_to_json(msg, &json) != LEAP_OK) { fail("to_json"); goto done; }
    printf("%.160s...\n", json);

    if (leap_message_from_json(json, &parsed) != LEAP_OK) { fail("from_json"); goto done; }
    if (leap_message_part_count(parsed, &n_parts) != LEAP_OK) { fail("part_count"); goto done; }
    for (i = 0; i < n_parts; i++) {
        leap_content_type type;
        leap_message_part_type(parsed, i, &type);
        printf("part %zu: %s\n", i, type == LEAP_CONTENT_TEXT ? "text" : type == LEAP_CONTENT_IMAGE ? "image (JPEG)"
                                    : type == LEAP_CONTENT_AUDIO ? "audio (WAV)" : "audio (float PCM)");
    }
    /* Bad input is an error with a message, never a crash: */
    if (leap_message_add_image_jpeg(parsed, "\x89PNG", 4) != LEAP_OK) printf("rejected as expected: %s\n", leap_last_error());
    rc = n_parts == 3 ? 0 : 1;
done:
    leap_string_free(json);
    leap_message_free(parsed);
    leap_message_free(msg);
    return rc;
}
