/* Asks a model that speaks (LFM2.5-Audio: the model GGUF with vocoder-*.gguf and tokenizer-*.gguf next to it,
 * or given) for a spoken answer and writes the audio to a WAV file while the text streams.
 *
 *   speak MODEL.gguf OUT.wav [--vocoder V.gguf --tokenizer T.gguf] [--prompt TEXT] [--system TEXT] [--max-tokens N]
 *         [--seed N]
 *
 * The system prompt chooses the mode as Liquid's runner does; the default asks for interleaved text and audio.
 * Text is greedy, but audio frames are sampled (the runner's temperature and top-k) and fed back, so the text
 * after the first frames depends on the draws: --seed makes a run repeatable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <leap.h>

typedef struct {
    float *samples;
    size_t n, cap;
    int32_t rate;
} pcm;

static int32_t print_chunk(const char *text, size_t n, void *user_data) {
    (void)user_data;
    fwrite(text, 1, n, stdout);
    fflush(stdout);
    return 0;
}

/* Samples arrive as they are made (80 ms per frame): collect them. */
static int32_t on_audio(const float *samples, size_t n, int32_t sample_rate, void *user_data) {
    pcm *p = user_data;
    if (p->n + n > p->cap) {
        size_t cap = (p->n + n) * 2;
        float *grown = realloc(p->samples, cap * sizeof *grown);
        if (!grown) return 1; /* stops the generation */
        p->samples = grown;
        p->cap = cap;
    }
    memcpy(p->samples + p->n, samples, n * sizeof *samples);
    p->n += n;
    p->rate = sample_rate;
    return 0;
}

int main(int argc, char **argv) {
    const char *prompt = "Say hello.", *system = "Respond with interleaved text and audio.";
    int i, speaks = 0, rc = 1;
    pcm audio = {NULL, 0, 0, 24000};
    uint8_t *wav = NULL;
    size_t n_wav = 0;
    FILE *out;
    leap_model_params mp;
    leap_model *model = NULL;
    leap_conversation *conv = NULL;
    leap_message *msg = NULL;
    leap_generation_options opts;
    leap_generation_callbacks cb;

    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf OUT.wav [--vocoder V.gguf --tokenizer T.gguf] [--prompt TEXT] [--system TEXT] [--max-tokens N] [--seed N]\n", argv[0]);
        return 2;
    }
    leap_model_params_init(&mp, sizeof mp);
    leap_generation_options_init(&opts, sizeof opts);
    opts.temperature = 0;
    opts.max_tokens = 256;
    for (i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--vocoder") == 0) mp.audio_decoder_path = argv[i + 1];
        else if (strcmp(argv[i], "--tokenizer") == 0) mp.audio_tokenizer_path = argv[i + 1];
        else if (strcmp(argv[i], "--prompt") == 0) prompt = argv[i + 1];
        else if (strcmp(argv[i], "--system") == 0) system = argv[i + 1];
        else if (strcmp(argv[i], "--max-tokens") == 0) opts.max_tokens = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0) {
            opts.use_rng_seed = 1;
            opts.rng_seed = strtoull(argv[i + 1], NULL, 10);
        }
    }
    if (leap_model_load(argv[1], &mp, &model) != LEAP_OK || leap_model_has_audio_output(model, &speaks) != LEAP_OK) goto fail;
    if (!speaks) {
        fprintf(stderr, "%s does not speak (give --vocoder and --tokenizer)\n", argv[1]);
        goto done;
    }
    if (leap_conversation_create(model, system, &conv) != LEAP_OK || leap_message_create(LEAP_ROLE_USER, &msg) != LEAP_OK ||
        leap_message_add_text(msg, prompt) != LEAP_OK)
        goto fail;
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = print_chunk;
    cb.on_audio_sample = on_audio;
    cb.user_data = &audio;
    if (leap_conversation_generate(conv, msg, &opts, &cb) != LEAP_OK) goto fail;
    if (leap_audio_encode_wav(audio.samples, audio.n, 1, audio.rate, LEAP_AUDIO_ENCODING_S16, &wav, &n_wav) != LEAP_OK) goto fail;
    if (!(out = fopen(argv[2], "wb")) || fwrite(wav, 1, n_wav, out) != n_wav) {
        fprintf(stderr, "\ncannot write %s\n", argv[2]);
        if (out) fclose(out);
        goto done;
    }
    fclose(out);
    fprintf(stderr, "\n[%.2f s of audio written to %s]\n", (double)audio.n / audio.rate, argv[2]);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "leap: %s\n", leap_last_error());
done:
    leap_buffer_free(wav);
    free(audio.samples);
    leap_message_free(msg);
    leap_conversation_free(conv);
    leap_model_free(model);
    return rc;
}
