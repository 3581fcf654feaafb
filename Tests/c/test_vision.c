/* Images through the C ABI on the tiny random-weight LFM2-VL fixtures: capabilities, embeddings of a JPEG
 * and of pixels (the multi-tile layout; pixels vs llama.cpp mtmd's embeddings), JPEG parts from pixels, a
 * streamed answer about a JPEG, and refused images that leave the history as it was. Run from the
 * repository root. */
#include <math.h>
#include <stdlib.h>
#include "check.h"

#define VISION "Tests/Fixtures/vision/"

static unsigned char *read_file(const char *path, size_t *out_n) {
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    long n = 0;
    *out_n = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = malloc((size_t)n);
        if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
            free(data);
            data = NULL;
        }
    }
    fclose(f);
    if (data) *out_n = (size_t)n;
    return data;
}

/* vision_fixture_images.image_rgb8: (37x + 91y + 53c + 29(x xor y) + 17 seed) mod 256. */
static void pattern(unsigned char *rgb, int w, int h, int seed) {
    int x, y, c;
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++)
            for (c = 0; c < 3; c++) rgb[(y * w + x) * 3 + c] = (unsigned char)((37 * x + 91 * y + 53 * c + 29 * (x ^ y) + 17 * seed) % 256);
}

static int32_t on_chunk(const char *text, size_t n, void *user_data) {
    (void)text;
    *(size_t *)user_data += n;
    return 0;
}

int main(void) {
    leap_model_params mp;
    leap_model *model = NULL;
    int32_t flag = -1;
    float *rows = NULL;
    size_t n_rows = 0, n_embd = 0, n_jpeg = 0, n_ref = 0;
    unsigned char *jpeg = read_file(VISION "multitile_1024x768.jpg", &n_jpeg);
    unsigned char *ref = read_file(VISION "mtmd_f32_256x256.f32", &n_ref);
    static unsigned char rgb[256 * 256 * 3];

    CHECK(jpeg != NULL && ref != NULL && n_ref == 64 * 64 * 4);
    leap_model_params_init(&mp, sizeof mp);
    mp.mmproj_path = VISION "lfm2vl-tiny-mmproj-f32.gguf";
    mp.context_size = 4096;
    CHECK_OK(leap_model_load(VISION "lfm2vl-tiny-text-f32.gguf", &mp, &model));
    if (!model || !jpeg || !ref) return CHECK_SUMMARY("test_vision");

    CHECK_OK(leap_model_has_vision(model, &flag));
    CHECK(flag == 1);
    CHECK_OK(leap_model_has_audio_input(model, &flag));
    CHECK(flag == 0);

    /* a 1024x768 JPEG: 3x2 tiles of 256 rows, then a 576x416 thumbnail of 234 */
    CHECK_OK(leap_model_embed_image(model, jpeg, n_jpeg, &rows, &n_rows, &n_embd));
    CHECK(n_rows == 1770 && n_embd == 64 && rows != NULL);
    leap_buffer_free(rows);

    {   /* pixels: llama.cpp mtmd's embeddings of the same pixels (F32 projector) */
        float max_diff = 0;
        size_t i;
        pattern(rgb, 256, 256, 1);
        CHECK_OK(leap_model_embed_image_rgb(model, rgb, 256, 256, &rows, &n_rows, &n_embd));
        CHECK(n_rows == 64 && n_embd == 64);
        for (i = 0; rows && i < 64 * 64; i++) {
            float r;
            memcpy(&r, ref + 4 * i, 4);
            if (fabsf(rows[i] - r) > max_diff) max_diff = fabsf(rows[i] - r);
        }
        CHECK(max_diff < 2e-4f);  /* the same arithmetic up to summation order */
        leap_buffer_free(rows);
    }
    {   /* a JPEG part made from pixels; a streamed answer; refused images change nothing */
        leap_conversation *conv = NULL;
        leap_message *m = NULL, *bad = NULL;
        leap_generation_options o;
        leap_generation_callbacks cb;
        size_t streamed = 0, count = 0;
        unsigned char *data = NULL;
        size_t n_data = 0;
        leap_content_type type;
        CHECK_OK(leap_message_create(LEAP_ROLE_USER, &m));
        CHECK_OK(leap_message_add_image_rgb(m, rgb, 256, 256, 90));
        CHECK_STATUS(leap_message_add_image_rgb(m, rgb, 256, 256, 101), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_message_add_image_rgb(m, NULL, 256, 256, 90), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_OK(leap_message_part_type(m, 0, &type));
        CHECK(type == LEAP_CONTENT_IMAGE);
        CHECK_OK(leap_message_part_data(m, 0, &data, &n_data));
        CHECK(data && n_data > 4 && data[0] == 0xFF && data[1] == 0xD8);
        leap_buffer_free(data);
        CHECK_OK(leap_message_add_text(m, "Describe this image."));
        CHECK_OK(leap_conversation_create(model, NULL, &conv));
        leap_generation_options_init(&o, sizeof o);
        o.temperature = 0;
        o.max_tokens = 6;
        leap_generation_callbacks_init(&cb, sizeof cb);
        cb.on_chunk = on_chunk;
        cb.user_data = &streamed;
        CHECK_OK(leap_conversation_generate(conv, m, &o, &cb));
        CHECK(streamed > 0);
        CHECK_OK(leap_message_create(LEAP_ROLE_USER, &bad));
        CHECK_OK(leap_message_add_image_jpeg(bad, jpeg, n_jpeg / 2));   /* truncated */
        CHECK_STATUS(leap_conversation_generate(conv, bad, &o, NULL), LEAP_ERR_FORMAT);
        CHECK_ERROR_MENTIONS("history[2].content[0]");
        CHECK_OK(leap_conversation_message_count(conv, &count));
        CHECK(count == 2);
        leap_message_free(m);
        leap_message_free(bad);
        leap_conversation_free(conv);
    }
    CHECK_STATUS(leap_model_embed_audio_pcm(model, (const float *)ref, 16, 16000, &rows, &n_rows, &n_embd), LEAP_ERR_UNSUPPORTED);
    CHECK(rows == NULL && n_rows == 0 && n_embd == 0);
    leap_model_free(model);
    free(jpeg);
    free(ref);
    return CHECK_SUMMARY("test_vision");
}
