/* Every audio entry point: WAV decode/encode, the model input path, one-shot and streaming resampling,
 * including NULL arguments, bad rates, wrong handle kinds and non-WAV data. */
#include <stdlib.h>
#include "check.h"

#define PI 3.14159265358979323846

/* sin without libm (scripts/test.sh links the C tests with libleap only): range-reduce, then Taylor. */
static double sin_(double x) {
    x -= 2 * PI * (double)(long long)(x / (2 * PI));
    if (x > PI) x -= 2 * PI;
    if (x < -PI) x += 2 * PI;
    double term = x, sum = x;
    for (int k = 1; k < 30; k++) {
        term *= -x * x / ((2 * k) * (2 * k + 1));
        sum += term;
    }
    return sum;
}
#define sin sin_
static double fabs_(double x) { return x < 0 ? -x : x; }
#define fabs fabs_

static void test_encode_decode_round_trip(void) {
    float in[6] = {0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 0.25f}; /* 3 stereo frames */
    uint8_t *wav = NULL;
    size_t size = 0, frames = 0;
    float *out = NULL;
    int32_t channels = 0, rate = 0;

    CHECK_OK(leap_audio_encode_wav(in, 3, 2, 22050, LEAP_AUDIO_ENCODING_F32, &wav, &size));
    CHECK(wav != NULL && size == 12 + 8 + 18 + 12 + 8 + sizeof in);
    CHECK(memcmp(wav, "RIFF", 4) == 0 && memcmp(wav + 8, "WAVE", 4) == 0);
    CHECK_OK(leap_audio_decode_wav(wav, size, &out, &frames, &channels, &rate));
    CHECK(frames == 3 && channels == 2 && rate == 22050);
    CHECK(out != NULL && memcmp(out, in, sizeof in) == 0);
    leap_buffer_free(out);
    out = NULL;

    /* Stereo decodes, but the model input path requires mono. */
    size_t n = 0;
    CHECK_STATUS(leap_audio_load_wav(wav, size, 0, &out, &n), LEAP_ERR_AUDIO_FORMAT);
    CHECK_ERROR_MENTIONS("mono required, got 2 channels");
    CHECK(out == NULL && n == 0);
    leap_buffer_free(wav);

    /* Int16: rounded and clipped. */
    float loud[3] = {2.0f, -2.0f, 0.5f};
    CHECK_OK(leap_audio_encode_wav(loud, 3, 1, 8000, LEAP_AUDIO_ENCODING_S16, &wav, &size));
    CHECK(size == 44 + 6);
    CHECK_OK(leap_audio_decode_wav(wav, size, &out, &frames, &channels, &rate));
    CHECK(frames == 3 && channels == 1 && rate == 8000);
    CHECK(out[0] == 32767.0f / 32768.0f && out[1] == -1.0f && out[2] == 0.5f);
    leap_buffer_free(out);
    leap_buffer_free(wav);
}

static void test_load_wav_resamples(void) {
    enum { N = 44100 };
    float *tone = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) tone[i] = (float)(0.5 * sin(2 * PI * 1000.0 * i / 44100.0));
    uint8_t *wav = NULL;
    size_t size = 0, n = 0;
    float *out = NULL, *direct = NULL;
    size_t n_direct = 0;
    CHECK_OK(leap_audio_encode_wav(tone, N, 1, 44100, LEAP_AUDIO_ENCODING_F32, &wav, &size));
    CHECK_OK(leap_audio_load_wav(wav, size, 0, &out, &n));
    CHECK(n == 16000);
    CHECK_OK(leap_audio_resample(tone, N, 44100, 16000, &direct, &n_direct));
    CHECK(n_direct == n && memcmp(out, direct, n * sizeof(float)) == 0);
    /* Away from the edges the output is the 1 kHz tone at 16 kHz. */
    double worst = 0;
    for (size_t k = 800; k + 800 < n; k++) {
        double e = fabs(out[k] - 0.5 * sin(2 * PI * 1000.0 * (double)k / 16000.0));
        if (e > worst) worst = e;
    }
    CHECK(worst < 1e-5);  /* the 120 dB SNR target: error RMS ~4e-7, 1e-5 bounds its peak */
    leap_buffer_free(out);
    CHECK_OK(leap_audio_load_wav(wav, size, 8000, &out, &n));
    CHECK(n == 8000);
    leap_buffer_free(out);
    leap_buffer_free(direct);
    leap_buffer_free(wav);
    free(tone);
}

static void test_streaming_resampler(void) {
    enum { N = 10007 };
    float *x = malloc(N * sizeof(float));
    unsigned s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 1103515245u + 12345u;
        x[i] = (float)((s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
    }
    float *whole = NULL;
    size_t n_whole = 0;
    CHECK_OK(leap_audio_resample(x, N, 48000, 16000, &whole, &n_whole));
    CHECK(n_whole == (N + 2) / 3);

    leap_resampler *r = NULL;
    CHECK_OK(leap_resampler_create(48000, 16000, &r));
    for (int pass = 0; pass < 2; pass++) { /* after flush the resampler serves a new stream */
        float *acc = malloc((n_whole + 16) * sizeof(float));
        size_t got = 0, i = 0, chunk = 1;
        while (i < N) {
            size_t len = chunk < N - i ? chunk : N - i;
            float *out = NULL;
            size_t n = 0;
            CHECK_OK(leap_resampler_process(r, x + i, len, &out, &n));
            CHECK(out != NULL);
            if (got + n <= n_whole) memcpy(acc + got, out, n * sizeof(float));
            got += n;
            leap_buffer_free(out);
            i += len;
            chunk = chunk * 3 + 1;
        }
        float *tail = NULL;
        size_t n_tail = 0;
        CHECK_OK(leap_resampler_process(r, NULL, 0, &tail, &n_tail)); /* empty chunk */
        CHECK(n_tail == 0);
        leap_buffer_free(tail);
        CHECK_OK(leap_resampler_flush(r, &tail, &n_tail));
        if (got + n_tail <= n_whole) memcpy(acc + got, tail, n_tail * sizeof(float));
        got += n_tail;
        leap_buffer_free(tail);
        CHECK(got == n_whole);
        CHECK(got == n_whole && memcmp(acc, whole, n_whole * sizeof(float)) == 0);
        free(acc);
    }
    leap_resampler_free(r);
    leap_resampler_free(NULL);
    leap_buffer_free(whole);
    free(x);
}

static void test_rejections_and_misuse(void) {
    float *out = NULL;
    size_t n = 0, frames = 0;
    int32_t ch = 0, rate = 0;
    uint8_t *wav = NULL;
    const unsigned char mp3[] = {'I', 'D', '3', 4, 0, 0, 0, 0, 0, 0, 0xFF, 0xFB};
    const unsigned char flac[] = {'f', 'L', 'a', 'C', 0, 0, 0, 34};
    const unsigned char rifx[] = {'R', 'I', 'F', 'X', 36, 0, 0, 0, 'W', 'A', 'V', 'E'};

    CHECK_STATUS(leap_audio_decode_wav(mp3, sizeof mp3, &out, &frames, &ch, &rate), LEAP_ERR_AUDIO_FORMAT);
    CHECK_ERROR_MENTIONS("MP3 (ID3 tag)");
    CHECK(out == NULL && frames == 0 && ch == 0 && rate == 0);
    CHECK_STATUS(leap_audio_decode_wav(flac, sizeof flac, &out, &frames, &ch, &rate), LEAP_ERR_AUDIO_FORMAT);
    CHECK_ERROR_MENTIONS("FLAC");
    CHECK_STATUS(leap_audio_decode_wav(rifx, sizeof rifx, &out, &frames, &ch, &rate), LEAP_ERR_AUDIO_FORMAT);
    CHECK_ERROR_MENTIONS("RIFX");
    CHECK_STATUS(leap_audio_decode_wav(mp3, 0, &out, &frames, &ch, &rate), LEAP_ERR_AUDIO_FORMAT);
    CHECK_ERROR_MENTIONS("empty input");
    CHECK_STATUS(leap_audio_decode_wav(NULL, 0, &out, &frames, &ch, &rate), LEAP_ERR_AUDIO_FORMAT);
    CHECK_STATUS(leap_audio_decode_wav(NULL, 10, &out, &frames, &ch, &rate), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_decode_wav(mp3, sizeof mp3, NULL, &frames, &ch, &rate), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("out_samples must not be NULL");
    CHECK_STATUS(leap_audio_decode_wav(mp3, sizeof mp3, &out, NULL, &ch, &rate), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_decode_wav(mp3, sizeof mp3, &out, &frames, NULL, &rate), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_decode_wav(mp3, sizeof mp3, &out, &frames, &ch, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_load_wav(flac, sizeof flac, 0, &out, &n), LEAP_ERR_AUDIO_FORMAT);
    CHECK_STATUS(leap_audio_load_wav(flac, sizeof flac, -5, &out, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_load_wav(flac, sizeof flac, 0, NULL, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_load_wav(flac, sizeof flac, 0, &out, NULL), LEAP_ERR_INVALID_ARGUMENT);

    float x[4] = {0, 0, 0, 0};
    CHECK_STATUS(leap_audio_resample(x, 4, 0, 16000, &out, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("from_rate");
    CHECK_STATUS(leap_audio_resample(x, 4, 16000, 2000000, &out, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_resample(NULL, 4, 16000, 8000, &out, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_resample(x, 4, 16000, 8000, NULL, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_OK(leap_audio_resample(NULL, 0, 16000, 8000, &out, &n));
    CHECK(out != NULL && n == 0);
    leap_buffer_free(out);
    CHECK_OK(leap_audio_resample(x, 4, 16000, 16000, &out, &n));
    CHECK(n == 4);
    leap_buffer_free(out);

    size_t size = 0;
    CHECK_STATUS(leap_audio_encode_wav(x, 2, 0, 16000, LEAP_AUDIO_ENCODING_F32, &wav, &size), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_encode_wav(x, 2, 2, 0, LEAP_AUDIO_ENCODING_F32, &wav, &size), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_encode_wav(x, 2, 2, 16000, (leap_audio_encoding)7, &wav, &size), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("encoding 7");
    CHECK_STATUS(leap_audio_encode_wav(NULL, 2, 2, 16000, LEAP_AUDIO_ENCODING_F32, &wav, &size), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_encode_wav(x, 2, 2, 16000, LEAP_AUDIO_ENCODING_F32, NULL, &size), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_audio_encode_wav(x, 2, 2, 16000, LEAP_AUDIO_ENCODING_F32, &wav, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(wav == NULL);

    leap_resampler *r = NULL;
    CHECK_STATUS(leap_resampler_create(16000, 0, &r), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK_STATUS(leap_resampler_create(16000, 24000, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_resampler_process(NULL, x, 4, &out, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_resampler_flush(NULL, &out, &n), LEAP_ERR_INVALID_ARGUMENT);
    /* A handle of another kind is rejected, not misused. */
    leap_message *m = NULL;
    CHECK_OK(leap_message_create(LEAP_ROLE_USER, &m));
    CHECK_STATUS(leap_resampler_process((leap_resampler *)m, x, 4, &out, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("not a valid resampler handle");
    leap_resampler_free((leap_resampler *)m); /* ignored: wrong kind */
    leap_message_free(m);
    CHECK_OK(leap_resampler_create(16000, 24000, &r));
    CHECK_STATUS(leap_resampler_process(r, NULL, 4, &out, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_resampler_process(r, x, 4, NULL, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_resampler_flush(r, &out, NULL), LEAP_ERR_INVALID_ARGUMENT);
    leap_resampler_free(r);
}

/* The callback type compiles with the documented signature. */
static int32_t count_samples(const float *samples, size_t n, int32_t rate, void *user) {
    (void)samples;
    (void)rate;
    *(size_t *)user += n;
    return 0;
}

int main(void) {
    leap_audio_callback cb = count_samples;
    size_t total = 0;
    CHECK(cb(NULL, 3, LEAP_AUDIO_OUTPUT_SAMPLE_RATE, &total) == 0 && total == 3);
    test_encode_decode_round_trip();
    test_load_wav_resamples();
    test_streaming_resampler();
    test_rejections_and_misuse();
    return CHECK_SUMMARY("test_audio");
}
