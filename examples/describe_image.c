/* Asks a vision model (LFM2-VL: the model GGUF and its mmproj-*.gguf) a question about a JPEG file and
 * streams the answer.
 *
 *   describe_image MODEL.gguf IMAGE.jpg [--mmproj MMPROJ.gguf] [--question TEXT] [--max-tokens N]
 *
 * Without --mmproj, the projector is found next to the model (mmproj*.gguf). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leap.h>

static int32_t print_chunk(const char *text, size_t n, void *user_data) {
    (void)user_data;
    fwrite(text, 1, n, stdout);
    fflush(stdout);
    return 0;
}

static unsigned char *read_file(const char *path, size_t *out_n) {
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (data = malloc((size_t)n)) != NULL && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    if (data) *out_n = (size_t)n;
    fclose(f);
    return data;
}

int main(int argc, char **argv) {
    const char *question = "Describe this image.", *mmproj = NULL;
    int max_tokens = 256, i, has_vision = 0, rc = 1;
    size_t n_jpeg = 0;
    unsigned char *jpeg;
    leap_model_params mp;
    leap_model *model = NULL;
    leap_conversation *conv = NULL;
    leap_message *msg = NULL;
    leap_generation_options opts;
    leap_generation_callbacks cb;

    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf IMAGE.jpg [--mmproj MMPROJ.gguf] [--question TEXT] [--max-tokens N]\n", argv[0]);
        return 2;
    }
    for (i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mmproj") == 0) mmproj = argv[i + 1];
        else if (strcmp(argv[i], "--question") == 0) question = argv[i + 1];
        else if (strcmp(argv[i], "--max-tokens") == 0) max_tokens = atoi(argv[i + 1]);
    }
    if (!(jpeg = read_file(argv[2], &n_jpeg))) {
        fprintf(stderr, "cannot read %s\n", argv[2]);
        return 1;
    }
    leap_model_params_init(&mp, sizeof mp);
    mp.mmproj_path = mmproj;
    if (leap_model_load(argv[1], &mp, &model) != LEAP_OK) goto fail;
    if (leap_model_has_vision(model, &has_vision) != LEAP_OK) goto fail;
    if (!has_vision) {
        fprintf(stderr, "%s has no vision projector (give --mmproj)\n", argv[1]);
        goto done;
    }
    if (leap_conversation_create(model, NULL, &conv) != LEAP_OK ||
        leap_message_create(LEAP_ROLE_USER, &msg) != LEAP_OK ||
        leap_message_add_image_jpeg(msg, jpeg, n_jpeg) != LEAP_OK ||
        leap_message_add_text(msg, question) != LEAP_OK)
        goto fail;
    leap_generation_options_init(&opts, sizeof opts);
    opts.temperature = 0;
    opts.max_tokens = max_tokens;
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = print_chunk;
    if (leap_conversation_generate(conv, msg, &opts, &cb) != LEAP_OK) goto fail;
    printf("\n");
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "leap: %s\n", leap_last_error());
done:
    leap_message_free(msg);
    leap_conversation_free(conv);
    leap_model_free(model);
    free(jpeg);
    return rc;
}
