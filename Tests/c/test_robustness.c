/* Hostile arguments at the C boundary, no model needed: absurd sizes (SIZE_MAX, which Swift sees as a
 * negative count), negative values through int32_t parameters, out-of-range enums, handles of the wrong
 * kind, and growable structs with odd struct_size values. Each must be a clean status, never a trap; the
 * size cases trapped (Swift precondition in UnsafeBufferPointer) before the count check in FFI.swift. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "check.h"

static const float zeros[64];

/* A minimal valid mono float32 WAV (16 frames of silence at 16 kHz). */
static size_t silent_wav(uint8_t *out) {
    leap_status st;
    uint8_t *wav = NULL;
    size_t n = 0;
    st = leap_audio_encode_wav(zeros, 16, 1, 16000, LEAP_AUDIO_ENCODING_F32, &wav, &n);
    if (st != LEAP_OK || n > 256) return 0;
    memcpy(out, wav, n);
    leap_buffer_free(wav);
    return n;
}

/* The low-level model API (tokenizer, context, sampler) with hostile ids, indices and sizes; runs only
 * when the small model is there (the valgrind run leaves it out). */
static void model_cases(const char *path) {
    leap_model *model = NULL;
    leap_model_params mp;
    leap_tokenizer *tok = NULL;
    leap_context *ctx = NULL;
    leap_sampler *sampler = NULL;
    int32_t *ids = NULL, tokens[2] = {1, 2}, bad_tokens[2] = {1, -1}, huge_token[1] = {INT32_MAX}, t = -1;
    size_t n = 7, n_vocab = 0;
    char *text = NULL;
    uint8_t *bytes = NULL;
    const float *logits = NULL;
    float small_logits[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const size_t huge = SIZE_MAX;

    leap_model_params_init(&mp, sizeof mp);
    mp.context_size = 64;
    CHECK_OK(leap_model_load(path, &mp, &model));
    if (!model) return;
    CHECK_OK(leap_model_tokenizer(model, &tok));
    CHECK_STATUS(leap_tokenizer_tokenize(tok, "abc", huge, 1, 1, &ids, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(ids == NULL && n == 0);
    CHECK_STATUS(leap_tokenizer_detokenize(tok, tokens, huge, 0, &text, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(text == NULL);
    CHECK_STATUS(leap_tokenizer_detokenize(tok, bad_tokens, 2, 0, &text, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_detokenize(tok, huge_token, 1, 0, &text, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_token_to_piece(tok, -1, 0, &text, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_token_to_piece(tok, INT32_MAX, 0, &text, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_model_token_piece(model, INT32_MIN, &bytes, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(bytes == NULL && n == 0);

    CHECK_OK(leap_context_create(model, NULL, &ctx));
    CHECK_STATUS(leap_context_eval(ctx, tokens, huge), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_context_eval(ctx, tokens, SIZE_MAX / 2), LEAP_ERR_PROMPT_EXCEEDS_CONTEXT); /* checked before any read */
    CHECK_STATUS(leap_context_eval(ctx, bad_tokens, 2), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_context_eval(ctx, huge_token, 1), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_context_logits(ctx, -1, &logits, &n_vocab), LEAP_ERR_INVALID_ARGUMENT); /* nothing evaluated */
    CHECK_OK(leap_context_eval(ctx, tokens, 2));
    CHECK_STATUS(leap_context_logits(ctx, INT32_MIN, &logits, &n_vocab), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_context_logits(ctx, INT32_MAX, &logits, &n_vocab), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(logits == NULL && n_vocab == 0);
    CHECK_STATUS(leap_context_rewind(ctx, -1), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_context_rewind(ctx, INT32_MIN), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_context_rewind(ctx, INT32_MAX), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_OK(leap_context_logits(ctx, -1, &logits, &n_vocab)); /* the failures changed nothing */
    CHECK(logits != NULL && n_vocab > 0);

    {
        leap_sampler_params sp;
        leap_sampler_params_init(&sp, sizeof sp);
        sp.repetition_penalty = 2.0f;
        sp.top_k = INT32_MIN; /* <= 0: off */
        CHECK_OK(leap_sampler_create(&sp, &sampler));
    }
    /* accepted ids outside any vocabulary must not index the logits */
    CHECK_OK(leap_sampler_accept(sampler, -7));
    CHECK_OK(leap_sampler_accept(sampler, INT32_MAX));
    CHECK_OK(leap_sampler_accept(sampler, INT32_MIN));
    CHECK_OK(leap_sampler_sample(sampler, small_logits, 10, &t));
    CHECK(t >= 0 && t < 10);
    CHECK_STATUS(leap_sampler_sample(sampler, small_logits, huge, &t), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_sampler_sample(sampler, small_logits, 0, &t), LEAP_ERR_INVALID_ARGUMENT);
    /* wrong kinds across the low-level handles */
    CHECK_STATUS(leap_context_eval((leap_context *)sampler, tokens, 1), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_sampler_accept((leap_sampler *)ctx, 1), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_vocab_size((const leap_tokenizer *)model, &n), LEAP_ERR_INVALID_ARGUMENT);
    {
        leap_context *other = ctx;
        CHECK_STATUS(leap_context_create((leap_model *)tok, NULL, &other), LEAP_ERR_INVALID_ARGUMENT);
        CHECK(other == NULL);
    }

    leap_context_free(ctx);

    leap_sampler_free(sampler);
    leap_tokenizer_free(tok);
    leap_model_free(model);
}

int main(void) {
    leap_message *m = NULL, *none = (leap_message *)&m;
    leap_resampler *r = NULL;
    uint8_t wav[256];
    size_t wav_size = silent_wav(wav);
    const size_t huge = SIZE_MAX, half = SIZE_MAX / 2 + 1;
    float *samples = (float *)&m;
    uint8_t *bytes = (uint8_t *)&m;
    size_t count = 7, frames = 7;
    int32_t channels = 7, rate = 7;
    size_t n = 99;

    CHECK(wav_size > 44);
    CHECK_OK(leap_message_create(LEAP_ROLE_USER, &m));
    CHECK_OK(leap_resampler_create(16000, 8000, &r));

    /* ---- absurd sizes ------------------------------------------------------------------------------- */
    CHECK_STATUS(leap_message_add_image_jpeg(m, "\xFF\xD8\xFF", huge), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("larger than any buffer");
    CHECK_STATUS(leap_message_add_image_jpeg(m, "\xFF\xD8\xFF", half), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_wav(m, wav, huge), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_pcm_f32(m, zeros, huge, 16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_pcm_f32(m, zeros, SIZE_MAX / 4 + 1, 16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_samples(m, zeros, huge, 1, 16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_samples(m, zeros, half, 2, 16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_samples(m, zeros, SIZE_MAX / 8, 2, 16000), LEAP_ERR_INVALID_ARGUMENT);
    /* ---- samples that are not finite ------------------------------------------------------------------- */
    {
        const float bad[3] = {0.5f, NAN, INFINITY};
        CHECK_STATUS(leap_message_add_audio_pcm_f32(m, bad, 3, 16000), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("samples[1]");
        CHECK_STATUS(leap_message_add_audio_samples(m, bad + 2, 1, 1, 16000), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("must be finite");
    }
    CHECK_OK(leap_message_part_count(m, &n));
    CHECK(n == 0); /* nothing was added by the failures */

    CHECK_STATUS(leap_audio_decode_wav(wav, huge, &samples, &frames, &channels, &rate), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(samples == NULL && frames == 0 && channels == 0 && rate == 0);
    CHECK_STATUS(leap_audio_load_wav(wav, huge, 0, &samples, &count), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(samples == NULL && count == 0);
    CHECK_STATUS(leap_audio_resample(zeros, huge, 16000, 8000, &samples, &count), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_resample(zeros, half, 16000, 8000, &samples, &count), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_resampler_process(r, zeros, huge, &samples, &count), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(samples == NULL && count == 0);
    CHECK_STATUS(leap_audio_encode_wav(zeros, huge, 1, 16000, LEAP_AUDIO_ENCODING_F32, &bytes, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(bytes == NULL && n == 0);
    CHECK_STATUS(leap_audio_encode_wav(zeros, half, 2, 16000, LEAP_AUDIO_ENCODING_S16, &bytes, &n), LEAP_ERR_INVALID_ARGUMENT);
    /* NULL data with a non-zero size is NULL misuse, with size 0 it is an empty input */
    CHECK_STATUS(leap_audio_resample(NULL, 5, 16000, 8000, &samples, &count), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_OK(leap_audio_resample(NULL, 0, 16000, 8000, &samples, &count));
    CHECK(samples != NULL && count == 0);
    leap_buffer_free(samples);
    samples = NULL;

    /* ---- indices at the top of size_t ------------------------------------------------------------- */
    CHECK_OK(leap_message_add_text(m, "hello"));
    {
        leap_content_type t;
        char *s = (char *)&m, *args = (char *)&m;
        CHECK_STATUS(leap_message_part_type(m, huge, &t), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_message_part_text(m, huge, &s), LEAP_ERR_INVALID_ARGUMENT);
        CHECK(s == NULL);
        CHECK_STATUS(leap_message_part_data(m, half, &bytes, &n), LEAP_ERR_INVALID_ARGUMENT);
        CHECK(bytes == NULL && n == 0);
        CHECK_STATUS(leap_message_part_pcm(m, huge, &samples, &count, &rate), LEAP_ERR_INVALID_ARGUMENT);
        s = (char *)&m;
        CHECK_STATUS(leap_message_function_call(m, huge, &s, &args), LEAP_ERR_INVALID_ARGUMENT);
        CHECK(s == NULL && args == NULL);
    }

    /* ---- negative values through int32_t, enums out of range -------------------------------------- */
    CHECK_STATUS(leap_message_add_audio_pcm_f32(m, zeros, 4, -16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_pcm_f32(m, zeros, 4, INT32_MIN), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_samples(m, zeros, 4, -1, 16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_audio_samples(m, zeros, 4, INT32_MAX, 16000), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_encode_wav(zeros, 4, INT32_MIN, 16000, LEAP_AUDIO_ENCODING_F32, &bytes, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_encode_wav(zeros, 4, 1, 16000, (leap_audio_encoding)-1, &bytes, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_resample(zeros, 4, -1, 8000, &samples, &count), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_load_wav(wav, wav_size, -8000, &samples, &count), LEAP_ERR_INVALID_ARGUMENT);
    {
        leap_resampler *bad = (leap_resampler *)&m;
        CHECK_STATUS(leap_resampler_create(INT32_MIN, 8000, &bad), LEAP_ERR_INVALID_ARGUMENT);
        CHECK(bad == NULL);
    }
    CHECK_STATUS(leap_message_create((leap_role)-1, &none), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(none == NULL);
    CHECK(leap_role_string((leap_role)-1) == NULL);
    CHECK(leap_role_string((leap_role)4) == NULL);
    CHECK(leap_status_string((leap_status)-1) != NULL);
    {
        char *out = (char *)&m;
        CHECK_STATUS(leap_function_calls_parse((leap_function_call_parser)-1, "x", &out), LEAP_ERR_INVALID_ARGUMENT);
        CHECK(out == NULL);
    }

    /* ---- handles of the wrong kind ---------------------------------------------------------------- */
    {
        char *json = (char *)&m;
        leap_role role;
        CHECK_STATUS(leap_message_to_json((const leap_message *)r, &json), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("not a valid message handle");
        CHECK(json == NULL);
        CHECK_STATUS(leap_message_role((const leap_message *)r, &role), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_message_add_text((leap_message *)r, "x"), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_resampler_process((leap_resampler *)m, zeros, 4, &samples, &count), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_resampler_flush((leap_resampler *)m, &samples, &count), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_conversation_append((leap_conversation *)m, m), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_conversation_stop((leap_conversation *)m), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_conversation_history_json((const leap_conversation *)r, &json), LEAP_ERR_INVALID_ARGUMENT);
        {
            leap_conversation *conv = (leap_conversation *)&m;
            CHECK_STATUS(leap_conversation_create((leap_model *)m, NULL, &conv), LEAP_ERR_INVALID_ARGUMENT);
            CHECK(conv == NULL);
        }
        CHECK_STATUS(leap_model_id((const leap_model *)r, &json), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_gguf_version((const leap_gguf *)m, (uint32_t *)&n), LEAP_ERR_INVALID_ARGUMENT);
        {
            leap_event ev;
            memset(&ev, 0, sizeof ev);
            ev.struct_size = sizeof ev;
            CHECK_STATUS(leap_generation_next((leap_generation *)m, &ev), LEAP_ERR_INVALID_ARGUMENT);
        }
        /* Freeing through the wrong free function is ignored: both handles stay usable. */
        leap_message_free((leap_message *)r);
        leap_resampler_free((leap_resampler *)m);
        leap_conversation_free((leap_conversation *)m);
        leap_generation_free((leap_generation *)m);
        leap_model_free((leap_model *)r);
        leap_gguf_free((leap_gguf *)m);
        CHECK_OK(leap_message_role(m, &role));
        CHECK(role == LEAP_ROLE_USER);
        CHECK_OK(leap_resampler_process(r, zeros, 64, &samples, &count));
        CHECK(count <= 32);
        leap_buffer_free(samples);
        samples = NULL;
    }

    /* ---- growable structs with odd sizes ---------------------------------------------------------- */
    {
        leap_generation_options o;
        leap_model_params p;
        leap_model *model = (leap_model *)&m;
        memset(&o, 0x5A, sizeof o);
        leap_generation_options_init(&o, huge); /* not a size: ignored, nothing written */
        CHECK(o.struct_size == 0x5A5A5A5Au);
        leap_generation_options_init(&o, 2);    /* smaller than struct_size itself: ignored */
        CHECK(o.struct_size == 0x5A5A5A5Au);
        leap_generation_options_init(&o, sizeof o + 1000); /* larger than ours: only ours is written */
        CHECK(o.struct_size == sizeof o && o.temperature == -1.0f && o.max_tokens == 0);
        leap_model_params_init(&p, sizeof p);
        p.struct_size = 0;
        CHECK_STATUS(leap_model_load("/nonexistent.gguf", &p, &model), LEAP_ERR_INVALID_ARGUMENT);
        CHECK(model == NULL);
        leap_model_params_init(&p, sizeof p);
        p.struct_size = UINT32_MAX; /* a newer caller: we read only our own fields */
        p.n_threads = -3;
        CHECK_STATUS(leap_model_load("/nonexistent.gguf", &p, &model), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("n_threads");
        p.n_threads = 0;
        p.context_size = INT32_MIN;
        CHECK_STATUS(leap_model_load("/nonexistent.gguf", &p, &model), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("context_size");
    }

    /* ---- strings that are not UTF-8 --------------------------------------------------------------- */
    CHECK_STATUS(leap_message_add_text(m, "\xC3\x28"), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_add_function_call(m, "f", "\xFF"), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_message_from_json("\xED\xA0\x80", &none), LEAP_ERR_INVALID_ARGUMENT);

    leap_resampler_free(r);
    leap_message_free(m);
    {
        char path[1024];
        const char *dir = getenv("LEAP_MODELS_DIR");
        FILE *f;
        snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir ? dir : "models");
        if ((f = fopen(path, "rb")) != NULL) {
            fclose(f);
            model_cases(path);
        } else {
            printf("test_robustness: model cases skipped (%s not found)\n", path);
        }
    }
    return CHECK_SUMMARY("test_robustness");
}
