/*
 * leap.h -- the C interface of libleap, an on-device LLM SDK for Linux.
 *
 * libleap loads GGUF models (Liquid LFM2 / LFM2.5, llama-architecture such as SmolLM2 and Llama 3.x,
 * Qwen2 / Qwen2.5, Qwen3, Gemma 3) and runs them in-process on the CPU. This header is the whole contract:
 * a function that is not declared here is not part of the API. C99; every name starts with leap_ / LEAP_.
 *
 * Errors
 *   Every fallible function returns a leap_status. LEAP_OK (0) is success. On failure,
 *   leap_last_error() returns a message for the calling thread that says what was wrong; it stays valid
 *   until the next leap_* call on the same thread. leap_status_string() names a status (static storage).
 *   Invalid arguments (NULL pointers, wrong sizes, out-of-range indices) give LEAP_ERR_INVALID_ARGUMENT;
 *   the library never aborts the host process on bad input. A data pointer may be NULL when its count is
 *   0; a count no buffer can have (above 2^48 bytes, e.g. SIZE_MAX or a negative value cast to size_t)
 *   is rejected. A handle of another kind (a leap_conversation * passed as a leap_message *) is rejected
 *   by every function (and ignored by the *_free functions); a pointer that is not a live libleap handle
 *   at all is undefined behaviour.
 *
 * Ownership
 *   Objects are opaque handles, created through an out-parameter (leap_x **out_x) and released with the
 *   matching leap_x_free(), which accepts NULL. On failure the out-parameter is set to NULL.
 *   `char *` results are owned by the caller and released with leap_string_free(); other owned arrays
 *   (float *, uint8_t *) are released with leap_buffer_free(). `const char *` results are borrowed; each
 *   function says for how long. Inputs are copied: the caller may free them as soon as the call returns.
 *
 * Threading
 *   Distinct handles may be used from different threads at the same time. One handle must not be used by
 *   two threads at once unless its section says otherwise. Callbacks run on the calling thread, before
 *   the call that invoked them returns; pointers passed to a callback are valid only during that call.
 *
 * Parameter structs
 *   Structs whose first field is `uint32_t struct_size` are growable: fill one with its *_init(&s, sizeof s)
 *   function (which writes the defaults and struct_size), change the fields you need and pass a pointer.
 *   The library reads and writes only struct_size bytes, so programs built against an older or newer
 *   header keep working.
 *
 * Strings are UTF-8 and NUL-terminated unless a length is passed alongside.
 *
 * Example: build a multimodal message and print its JSON
 *
 *     leap_message *m = NULL;
 *     char *json = NULL;
 *     if (leap_message_create(LEAP_ROLE_USER, &m) != LEAP_OK ||
 *         leap_message_add_text(m, "What is in this picture?") != LEAP_OK ||
 *         leap_message_add_image_jpeg(m, jpeg_bytes, jpeg_size) != LEAP_OK ||
 *         leap_message_to_json(m, &json) != LEAP_OK) {
 *         fprintf(stderr, "leap: %s\n", leap_last_error());
 *     } else {
 *         puts(json);
 *     }
 *     leap_string_free(json);
 *     leap_message_free(m);
 */
#ifndef LEAP_H
#define LEAP_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define LEAP_API __attribute__((visibility("default")))
#else
#define LEAP_API
#endif

#define LEAP_VERSION_MAJOR 0
#define LEAP_VERSION_MINOR 1
#define LEAP_VERSION_PATCH 0
/* major * 10000 + minor * 100 + patch */
#define LEAP_VERSION_NUMBER 100

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================================================
 * Status, errors, versions, memory
 * ====================================================================================================== */

/* Append only: values never change meaning. */
typedef enum leap_status {
    LEAP_OK = 0,
    LEAP_ERR_INVALID_ARGUMENT = 1,         /* NULL pointer, bad size or index, wrong handle, bad option  */
    LEAP_ERR_IO = 2,                       /* a file could not be opened, read or mapped                 */
    LEAP_ERR_FORMAT = 3,                   /* malformed data (GGUF, template, ...)                        */
    LEAP_ERR_UNSUPPORTED = 4,              /* well-formed but not supported (architecture, tensor type)   */
    LEAP_ERR_SERIALIZATION = 5,            /* JSON of messages, function calls or schemas is invalid      */
    LEAP_ERR_AUDIO_FORMAT = 6,             /* audio is not mono WAV PCM or is otherwise unusable          */
    LEAP_ERR_MODEL_LOADING = 7,            /* a model file could not be loaded                            */
    LEAP_ERR_GENERATION = 8,               /* generation failed                                           */
    LEAP_ERR_PROMPT_EXCEEDS_CONTEXT = 9,   /* the prompt does not fit the context window                  */
    LEAP_ERR_FUNCTION_CALL_PARSING = 10,   /* a function call emitted by the model could not be parsed    */
    LEAP_ERR_CANCELLED = 11,               /* stopped by the caller (callback returned non-zero, stop())  */
    LEAP_ERR_BUSY = 12,                    /* the object is already generating / in use by a callback     */
    LEAP_ERR_OUT_OF_MEMORY = 13,
    LEAP_ERR_BUFFER_TOO_SMALL = 14,        /* a caller buffer was too small; the needed size was returned */
    LEAP_ERR_INTERNAL = 100                /* a bug in libleap: please report it with leap_last_error()   */
} leap_status;

/* A short static name for a status, e.g. "LEAP_ERR_BUSY". Never NULL. */
LEAP_API const char *leap_status_string(leap_status status);

/* The message of the last failure on this thread, or "" if the last call succeeded. Never NULL.
 * Valid until the next leap_* call on this thread. */
LEAP_API const char *leap_last_error(void);

/* Run-time version: LEAP_VERSION_NUMBER and "MAJOR.MINOR.PATCH" of the loaded library. */
LEAP_API uint32_t leap_version_number(void);
LEAP_API const char *leap_version_string(void);

/* Release a string returned by the library. NULL is a no-op. */
LEAP_API void leap_string_free(char *s);

/* Release an array (float *, uint8_t *, int32_t *) returned by the library. NULL is a no-op. */
LEAP_API void leap_buffer_free(void *p);

/* The log: things worth hearing about that are not the failure of a call (an auto-detected companion
 * file left out, a cache snapshot ignored, a fallback taken). Process-wide and silent by default.
 * Messages of `max_level` and more severe go to `callback`; NULL silences the log again. The callback
 * runs on whichever thread produced the message, possibly on several at once, so it must be thread-safe;
 * `message` (UTF-8, no trailing newline) is valid only during the call. It may call leap_set_log_callback
 * but no other leap_* function. When leap_set_log_callback returns, the previous callback is no longer
 * running on any other thread and is never called again, so its user_data may be freed (called from
 * inside a callback, it does not wait for the calls in progress). */
typedef enum leap_log_level {
    LEAP_LOG_ERROR = 1,
    LEAP_LOG_WARNING = 2,
    LEAP_LOG_INFO = 3,
    LEAP_LOG_DEBUG = 4
} leap_log_level;

typedef void (*leap_log_callback)(leap_log_level level, const char *message, void *user_data);

/* LEAP_ERR_INVALID_ARGUMENT for a max_level outside LEAP_LOG_ERROR..LEAP_LOG_DEBUG (nothing changes). */
LEAP_API leap_status leap_set_log_callback(leap_log_callback callback, leap_log_level max_level, void *user_data);

/* ======================================================================================================
 * Messages & content
 *
 * A message has a role, ordered content parts, optional reasoning content and optional function calls.
 * Parts: text; image (JPEG bytes); audio (WAV bytes); raw audio (float PCM samples + sample rate).
 * JSON follows the OpenAI chat shape, as the LEAP SDK writes it:
 *   {"role":"user","content":[{"type":"text","text":"hi"},
 *     {"type":"image_url","image_url":{"url":"data:image/jpeg;base64,..."}},
 *     {"type":"input_audio","input_audio":{"data":"<base64 WAV>","format":"wav"}},
 *     {"type":"audio_pcm_f32","samples":[0.1,...],"sampleRate":16000}],
 *    "reasoning_content":"...",
 *    "tool_calls":[{"index":0,"id":"call_0","type":"function",
 *                   "function":{"name":"get_weather","arguments":{"city":"Paris"}}}]}
 * When decoding, "content" may also be a plain string, "arguments" may be an object or a JSON string,
 * and "format" defaults to "wav". A leap_message is not thread-safe; copies are independent.
 * ====================================================================================================== */

typedef struct leap_message leap_message;

typedef enum leap_role {
    LEAP_ROLE_USER = 0,
    LEAP_ROLE_SYSTEM = 1,
    LEAP_ROLE_ASSISTANT = 2,
    LEAP_ROLE_TOOL = 3
} leap_role;

typedef enum leap_content_type {
    LEAP_CONTENT_TEXT = 0,
    LEAP_CONTENT_IMAGE = 1,         /* JPEG bytes                                   */
    LEAP_CONTENT_AUDIO = 2,         /* WAV bytes                                    */
    LEAP_CONTENT_AUDIO_PCM_F32 = 3  /* mono float samples in [-1, 1] + sample rate  */
} leap_content_type;

/* "user", "system", "assistant", "tool" (static storage), or NULL for a value outside the enum. */
LEAP_API const char *leap_role_string(leap_role role);

LEAP_API leap_status leap_message_create(leap_role role, leap_message **out_message);
LEAP_API leap_status leap_message_copy(const leap_message *message, leap_message **out_copy);
LEAP_API void leap_message_free(leap_message *message);

/* Parse one message from JSON (see above). Errors are LEAP_ERR_SERIALIZATION with the offending field. */
LEAP_API leap_status leap_message_from_json(const char *json, leap_message **out_message);
/* Serialize to compact JSON. Release *out_json with leap_string_free(). */
LEAP_API leap_status leap_message_to_json(const leap_message *message, char **out_json);

/* Append content parts. Data is copied. */
LEAP_API leap_status leap_message_add_text(leap_message *message, const char *utf8);
/* JPEG only: data must start with the JPEG SOI marker (FF D8 FF). */
LEAP_API leap_status leap_message_add_image_jpeg(leap_message *message, const void *jpeg, size_t n_bytes);
/* Adds an image part encoded as JPEG (baseline, 4:2:0) from 8-bit RGB pixels, row after row (width * height
 * * 3 bytes), at quality 1..100 (LEAP's image-from-bitmap helpers). Needs libturbojpeg, loaded at first use
 * (LEAP_ERR_UNSUPPORTED naming the Debian package when it is missing). */
LEAP_API leap_status leap_message_add_image_rgb(leap_message *message, const uint8_t *rgb, int32_t width,
                                                int32_t height, int32_t quality);
/* WAV bytes: the RIFF/WAVE header is validated (mono PCM int16/24/32 or float32; any sample rate). */
LEAP_API leap_status leap_message_add_audio_wav(leap_message *message, const void *wav, size_t n_bytes);
/* Interleaved float samples, encoded as a float32 WAV part (the SDK's fromFloatSamples helper). Every sample
 * must be finite (a NaN or infinity gives LEAP_ERR_INVALID_ARGUMENT). */
LEAP_API leap_status leap_message_add_audio_samples(leap_message *message, const float *interleaved,
                                                    size_t n_frames, int32_t channel_count,
                                                    int32_t sample_rate);
/* Raw mono float PCM kept as such (an "audio_pcm_f32" part); every sample must be finite. */
LEAP_API leap_status leap_message_add_audio_pcm_f32(leap_message *message, const float *samples,
                                                    size_t n_samples, int32_t sample_rate);
/* Set or clear (NULL) the reasoning content. An empty string clears it too. */
LEAP_API leap_status leap_message_set_reasoning(leap_message *message, const char *utf8);
/* Append a function call: name and its arguments as a JSON object text (NULL means {}). */
LEAP_API leap_status leap_message_add_function_call(leap_message *message, const char *name,
                                                    const char *arguments_json);

/* Accessors. Indices are 0-based; an index out of range gives LEAP_ERR_INVALID_ARGUMENT. */
LEAP_API leap_status leap_message_role(const leap_message *message, leap_role *out_role);
LEAP_API leap_status leap_message_part_count(const leap_message *message, size_t *out_count);
LEAP_API leap_status leap_message_part_type(const leap_message *message, size_t index,
                                            leap_content_type *out_type);
/* Text of a text part. Release with leap_string_free(). */
LEAP_API leap_status leap_message_part_text(const leap_message *message, size_t index, char **out_text);
/* Bytes of an image (JPEG) or audio (WAV) part. Release *out_data with leap_buffer_free(). */
LEAP_API leap_status leap_message_part_data(const leap_message *message, size_t index, uint8_t **out_data,
                                            size_t *out_size);
/* Samples of an audio_pcm_f32 part. Release *out_samples with leap_buffer_free(). */
LEAP_API leap_status leap_message_part_pcm(const leap_message *message, size_t index, float **out_samples,
                                           size_t *out_count, int32_t *out_sample_rate);
/* Reasoning content, or *out_text = NULL when there is none. Release with leap_string_free(). */
LEAP_API leap_status leap_message_reasoning(const leap_message *message, char **out_text);
LEAP_API leap_status leap_message_function_call_count(const leap_message *message, size_t *out_count);
/* Name and arguments (a JSON object text) of a function call. Release both with leap_string_free(). */
LEAP_API leap_status leap_message_function_call(const leap_message *message, size_t index, char **out_name,
                                                char **out_arguments_json);

/* ======================================================================================================
 * Audio (WAV decoding/encoding, resampling, audio output)
 * ====================================================================================================== */

/*
 * Audio input is WAV only (RIFF/WAVE, little-endian): PCM unsigned 8-bit or signed 16/24/32-bit integers,
 * or IEEE float 32/64-bit, plain or WAVE_FORMAT_EXTENSIBLE; any sample rate from 1 Hz to 1 MHz. Chunks may
 * come in any order; a data chunk that claims more bytes than there are (streamed headers, 0xFFFFFFFF)
 * is cut to the bytes present. Anything else is LEAP_ERR_AUDIO_FORMAT with a message naming what was
 * found: another format by its signature ("MP3 (ID3 tag)", "FLAC", "MP4/M4A ..."), big-endian RIFX, an
 * unsupported encoding ("A-law (format tag 0x0006)"), a truncated or inconsistent header, no samples.
 * Models take mono audio at 16 kHz (LEAP_AUDIO_INPUT_SAMPLE_RATE); audio models generate mono float
 * samples at 24 kHz (LEAP_AUDIO_OUTPUT_SAMPLE_RATE), delivered through a leap_audio_callback.
 *
 * LFM2.5-Audio speaks in frames of 80 ms, 8 codes each, one per codebook, every code drawn from 2049
 * classes: 0..2047, and 2048, which in the first codebook ends the audio. The other seven codebooks can
 * draw 2048 as well. Such a frame does not end the audio and never fails the turn: it is fed back to the
 * model as drawn and generation goes on, as liquid-audio does, but it adds no samples (the detokenizer has
 * no waveform for code 2048; the audio is 80 ms shorter there), as liquid-audio's chat demo leaves such a
 * frame out. The code is not kept out of the later codebooks' draws: Liquid's llama.cpp runner draws all
 * 2049 classes in every codebook too, so the codes are the ones the reference draws.
 *
 * Resampling is band-limited (windowed-sinc polyphase filters, flat to 91% of the lower Nyquist
 * frequency, at least 120 dB of alias rejection) and zero-phase: output sample k is the input's value at
 * time k / to_rate, and a stream of n input samples gives ceil(n * to_rate / from_rate) outputs.
 *
 * Samples are float in [-1, 1]; multichannel data is interleaved ([frame][channel]). Every function here
 * except those taking a leap_resampler is stateless and may be called from any thread at any time.
 */

#define LEAP_AUDIO_INPUT_SAMPLE_RATE 16000
#define LEAP_AUDIO_OUTPUT_SAMPLE_RATE 24000

typedef enum leap_audio_encoding {
    LEAP_AUDIO_ENCODING_F32 = 0, /* IEEE float 32-bit (format tag 3), samples as given                 */
    LEAP_AUDIO_ENCODING_S16 = 1  /* PCM 16-bit (format tag 1), round(x * 32768) clipped to the range   */
} leap_audio_encoding;

/* Decode a WAV file (any channel count). *out_samples holds *out_frames * *out_channel_count interleaved
 * samples; release it with leap_buffer_free(). On failure the out-parameters are NULL / 0. */
LEAP_API leap_status leap_audio_decode_wav(const void *wav, size_t n_bytes, float **out_samples,
                                           size_t *out_frames, int32_t *out_channel_count,
                                           int32_t *out_sample_rate);

/* The engine's input path: decode a mono WAV file and resample it to target_rate (0 means
 * LEAP_AUDIO_INPUT_SAMPLE_RATE). Multichannel input is LEAP_ERR_AUDIO_FORMAT ("mono required, got 2
 * channels"). Release *out_samples with leap_buffer_free(). */
LEAP_API leap_status leap_audio_load_wav(const void *wav, size_t n_bytes, int32_t target_rate,
                                         float **out_samples, size_t *out_count);

/* Resample mono samples from from_rate to to_rate (1 Hz ... 1 MHz each): ceil(n * to_rate / from_rate)
 * outputs. Release *out_samples with leap_buffer_free(). */
LEAP_API leap_status leap_audio_resample(const float *samples, size_t n_samples, int32_t from_rate,
                                         int32_t to_rate, float **out_samples, size_t *out_count);

/* Encode n_frames interleaved frames of channel_count channels (1...256) as a WAV file.
 * Release *out_wav with leap_buffer_free(). */
LEAP_API leap_status leap_audio_encode_wav(const float *interleaved, size_t n_frames, int32_t channel_count,
                                           int32_t sample_rate, leap_audio_encoding encoding,
                                           uint8_t **out_wav, size_t *out_size);

/* A streaming resampler for one mono stream: feed chunks of any size (including 0) with _process, which
 * returns the outputs they complete, then call _flush for the rest. Chunked processing gives exactly the
 * samples of one leap_audio_resample call over the whole stream. After _flush the resampler is ready for
 * a new stream. Not thread-safe: use one resampler per thread. */
typedef struct leap_resampler leap_resampler;

LEAP_API leap_status leap_resampler_create(int32_t from_rate, int32_t to_rate, leap_resampler **out_resampler);
/* Release *out_samples (never NULL on success, possibly 0 samples) with leap_buffer_free(). */
LEAP_API leap_status leap_resampler_process(leap_resampler *resampler, const float *samples, size_t n_samples,
                                            float **out_samples, size_t *out_count);
LEAP_API leap_status leap_resampler_flush(leap_resampler *resampler, float **out_samples, size_t *out_count);
LEAP_API void leap_resampler_free(leap_resampler *resampler);

/* Receives generated audio while a conversation generates (see the conversation section): mono float
 * samples in [-1, 1] at sample_rate (LEAP_AUDIO_OUTPUT_SAMPLE_RATE for current audio models; constant
 * within a turn). `samples` is valid only during the call. Return 0 to continue, non-zero to stop the
 * generation, as with the conversation's other callbacks. The whole turn's audio is also in the final
 * message as an audio_pcm_f32 part. Runs on the generating thread. */
typedef int32_t (*leap_audio_callback)(const float *samples, size_t n_samples, int32_t sample_rate,
                                       void *user_data);


/* ======================================================================================================
 * GGUF files
 *
 * A read-only view of a GGUF model file, for inspection tools (like gguf-dump) and tests: metadata as
 * JSON, the tensor table, and tensors dequantized to float. Opening maps the file read-only and validates
 * the whole header (bad magic, versions other than 2 and 3, big-endian files, truncation, sizes past the
 * end of the file, unknown tensor types, misaligned or overlapping tensors, duplicate names, invalid
 * UTF-8 are LEAP_ERR_FORMAT / LEAP_ERR_UNSUPPORTED with the field and offset in leap_last_error()); it
 * does not read tensor data, so it takes milliseconds even for large files. Models are loaded with
 * the model API, not with this one. A leap_gguf is immutable: it may be used from several threads at once.
 *
 *     leap_gguf *g = NULL;
 *     size_t n = 0;
 *     if (leap_gguf_open("model.gguf", &g) == LEAP_OK && leap_gguf_tensor_count(g, &n) == LEAP_OK) {
 *         for (size_t i = 0; i < n; i++) {
 *             leap_gguf_tensor_info info = {sizeof info};
 *             if (leap_gguf_tensor_info_get(g, i, &info) == LEAP_OK)
 *                 printf("%s %s\n", info.name, info.type_name);
 *         }
 *     }
 *     leap_gguf_free(g);
 * ====================================================================================================== */

typedef struct leap_gguf leap_gguf;

/* Growable output struct: set struct_size = sizeof(leap_gguf_tensor_info) before the call; the library
 * fills at most struct_size bytes. */
typedef struct leap_gguf_tensor_info {
    uint32_t struct_size;
    uint32_t n_dims;          /* 0...4 as stored in the file                                         */
    const char *name;         /* borrowed: valid until leap_gguf_free()                              */
    int64_t ne[4];            /* dimensions, ne[0] the fastest (contiguous) axis; unused ones are 1  */
    uint32_t type;            /* ggml type id (0 F32, 1 F16, 2 Q4_0, ..., 12 Q4_K, 14 Q6_K, 30 BF16) */
    const char *type_name;    /* "F32", "Q4_K", ... (static storage)                                 */
    uint64_t offset;          /* absolute offset of the tensor data in the file                      */
    uint64_t size;            /* bytes of tensor data                                                */
    uint64_t n_elements;      /* ne[0] * ne[1] * ne[2] * ne[3]                                       */
} leap_gguf_tensor_info;

/* Open and validate a GGUF file. Errors: LEAP_ERR_IO (cannot open/map), LEAP_ERR_FORMAT (malformed),
 * LEAP_ERR_UNSUPPORTED (version, endianness, tensor type). Release with leap_gguf_free(). */
LEAP_API leap_status leap_gguf_open(const char *path, leap_gguf **out_gguf);
/* Unmaps the file; borrowed names become invalid. NULL is a no-op. */
LEAP_API void leap_gguf_free(leap_gguf *gguf);
/* GGUF format version (2 or 3). */
LEAP_API leap_status leap_gguf_version(const leap_gguf *gguf, uint32_t *out_version);

/* Metadata entries, in file order. */
LEAP_API leap_status leap_gguf_metadata_count(const leap_gguf *gguf, size_t *out_count);
/* Key of entry `index`. Release *out_key with leap_string_free(). */
LEAP_API leap_status leap_gguf_metadata_key(const leap_gguf *gguf, size_t index, char **out_key);
/* GGUF type of a value: "UINT32", "STRING", "ARRAY[STRING]", ... Release with leap_string_free().
 * LEAP_ERR_INVALID_ARGUMENT when the key does not exist. */
LEAP_API leap_status leap_gguf_metadata_type(const leap_gguf *gguf, const char *key, char **out_type);
/* A value as JSON text: numbers, true/false, strings, arrays (nested arrays too); non-finite floats
 * are null. Release *out_json with leap_string_free(). LEAP_ERR_INVALID_ARGUMENT for a missing key. */
LEAP_API leap_status leap_gguf_metadata_json(const leap_gguf *gguf, const char *key, char **out_json);

/* Tensors, in file order. */
LEAP_API leap_status leap_gguf_tensor_count(const leap_gguf *gguf, size_t *out_count);
/* Index of the tensor named `name`; LEAP_ERR_INVALID_ARGUMENT when there is none. */
LEAP_API leap_status leap_gguf_find_tensor(const leap_gguf *gguf, const char *name, size_t *out_index);
LEAP_API leap_status leap_gguf_tensor_info_get(const leap_gguf *gguf, size_t index, leap_gguf_tensor_info *out_info);
/* The whole tensor dequantized to float (n_elements values, ne[0] fastest), with the library's
 * reference (scalar, bit-exact with ggml) dequantization. Release *out_values with leap_buffer_free(). */
LEAP_API leap_status leap_gguf_tensor_dequantize(const leap_gguf *gguf, size_t index, float **out_values,
                                                 size_t *out_count);


/* ======================================================================================================
 * Tokenizers and chat templates
 * ====================================================================================================== */

/* Tokenizers: text <-> token ids from a GGUF file's tokenizer.ggml.* metadata, token-exact with llama.cpp.
 * Byte-level BPE (tokenizer.ggml.model "gpt2" with the pre-tokenizers lfm2/llama3/llama-bpe, smollm,
 * qwen2, qwen35, gpt-2, default, starcoder, refact, command-r, falcon, mpt, deepseek-llm, deepseek-coder,
 * bloom and their aliases) and SentencePiece-style BPE ("llama", e.g. Gemma 3); other vocabularies are
 * LEAP_ERR_UNSUPPORTED naming the type. Loading reads only the metadata, so vocab-only files work. A
 * leap_tokenizer is immutable: it may be used from several threads at once.
 *
 *     leap_tokenizer *t = NULL;
 *     int32_t *ids = NULL;
 *     size_t n = 0;
 *     char *text = NULL;
 *     if (leap_tokenizer_load("model.gguf", &t) == LEAP_OK &&
 *         leap_tokenizer_tokenize(t, "Hello!", 6, 1, 0, &ids, &n) == LEAP_OK &&
 *         leap_tokenizer_detokenize(t, ids, n, 0, &text, NULL) == LEAP_OK)
 *         printf("%zu tokens: %s\n", n, text);
 *     leap_string_free(text);
 *     leap_buffer_free(ids);
 *     leap_tokenizer_free(t);
 */
typedef struct leap_tokenizer leap_tokenizer;

/* Load the tokenizer of a GGUF file (a model or a vocab-only file). Errors: LEAP_ERR_IO, LEAP_ERR_FORMAT
 * (malformed file or tokenizer metadata), LEAP_ERR_UNSUPPORTED (tokenizer model or pre-tokenizer).
 * Release with leap_tokenizer_free(). */
LEAP_API leap_status leap_tokenizer_load(const char *path, leap_tokenizer **out_tokenizer);
/* NULL is a no-op. */
LEAP_API void leap_tokenizer_free(leap_tokenizer *tokenizer);
/* Token ids of n_bytes of text (any bytes; need not be NUL-terminated, may be NULL when n_bytes is 0).
 * add_special != 0 adds BOS / EOS as the vocabulary asks (tokenizer.ggml.add_bos_token / add_eos_token);
 * parse_special != 0 turns the text of control tokens (e.g. "<|im_start|>") into their ids, otherwise
 * they are tokenized as plain text. *out_ids (released with leap_buffer_free()) holds *out_count ids.
 * LEAP_ERR_INVALID_ARGUMENT for more than 256 MiB of text. */
LEAP_API leap_status leap_tokenizer_tokenize(const leap_tokenizer *tokenizer, const char *text, size_t n_bytes,
                                             int32_t add_special, int32_t parse_special, int32_t **out_ids,
                                             size_t *out_count);
/* The text of n_ids tokens (like llama.cpp's llama_detokenize without removing specials): control tokens
 * are rendered only when special != 0; spaces are cleaned up where the vocabulary asks for it.
 * *out_text is NUL-terminated, released with leap_string_free(); its length in bytes goes to
 * *out_n_bytes when that is not NULL (the text may contain NUL bytes, and is not valid UTF-8 when the ids
 * end inside a character). LEAP_ERR_INVALID_ARGUMENT for an id outside [0, vocab size). */
LEAP_API leap_status leap_tokenizer_detokenize(const leap_tokenizer *tokenizer, const int32_t *ids, size_t n_ids,
                                               int32_t special, char **out_text, size_t *out_n_bytes);
/* The bytes of one token (possibly part of a UTF-8 character; empty for control tokens unless
 * special != 0), as leap_tokenizer_detokenize() returns text. */
LEAP_API leap_status leap_tokenizer_token_to_piece(const leap_tokenizer *tokenizer, int32_t id, int32_t special,
                                                   char **out_piece, size_t *out_n_bytes);
/* Number of tokens in the vocabulary. */
LEAP_API leap_status leap_tokenizer_vocab_size(const leap_tokenizer *tokenizer, size_t *out_size);
/* Beginning / end of sequence ids; -1 when the vocabulary has none. */
LEAP_API leap_status leap_tokenizer_bos_id(const leap_tokenizer *tokenizer, int32_t *out_id);
LEAP_API leap_status leap_tokenizer_eos_id(const leap_tokenizer *tokenizer, int32_t *out_id);
/* *out_is_eog = 1 when `id` ends generation (EOS, end-of-turn tokens such as <|im_end|>, <end_of_turn>,
 * <|eot_id|>, <|endoftext|>, ...), else 0 (also for ids outside the vocabulary). */
LEAP_API leap_status leap_tokenizer_is_eog(const leap_tokenizer *tokenizer, int32_t id, int32_t *out_is_eog);

/* (section filled by the tokenizer / template work) */

/* ---- Chat templates ----------------------------------------------------------------------------------
 * A chat template turns a conversation into prompt text. libleap interprets the Jinja subset that model
 * chat templates use (the GGUF key tokenizer.chat_template, or any override) and renders byte-identically
 * to Python jinja2 as configured by Hugging Face transformers (trim_blocks, lstrip_blocks, loop controls,
 * the immutable sandbox, tojson = json.dumps(ensure_ascii=False), raise_exception, strftime_now).
 *
 *     leap_chat_template *t = NULL;
 *     char *prompt = NULL;
 *     if (leap_chat_template_create(source, &t) == LEAP_OK &&
 *         leap_chat_template_render(t, "[{\"role\":\"user\",\"content\":\"Hi\"}]", NULL, 1,
 *                                   "{\"bos_token\":\"<s>\",\"enable_thinking\":false}", &prompt) == LEAP_OK)
 *         fputs(prompt, stdout);
 *     leap_string_free(prompt);
 *     leap_chat_template_free(t);
 *
 * A leap_chat_template is immutable once created: it may be rendered from several threads at once.
 * Template errors (syntax, undefined attribute access, raise_exception(...), a type error) are
 * LEAP_ERR_FORMAT with "template line L, column C: ..." in leap_last_error(). Rendering is bounded (output
 * size, evaluation steps, macro recursion depth), so a hostile template fails instead of hanging. */
typedef struct leap_chat_template leap_chat_template;

/* Parse `source` (UTF-8 Jinja). Errors: LEAP_ERR_INVALID_ARGUMENT (NULL, not UTF-8), LEAP_ERR_FORMAT
 * (syntax error, unknown filter or test outside an `if`). Release with leap_chat_template_free(). */
LEAP_API leap_status leap_chat_template_create(const char *source, leap_chat_template **out_template);
/* NULL is a no-op. */
LEAP_API void leap_chat_template_free(leap_chat_template *tmpl);

/* Render a conversation. The template sees:
 *   messages               the JSON array `messages_json` (OpenAI-shaped objects: role, content (a string
 *                          or a list of parts), tool_calls, reasoning_content, ...), as given;
 *   tools                  the JSON array `tools_json`, or none when tools_json is NULL;
 *   add_generation_prompt  add_generation_prompt != 0;
 *   bos_token, eos_token   "" unless set in extra_json;
 *   documents              none;
 *   and every key of the JSON object `extra_json` (NULL for none), e.g. {"bos_token": "<|startoftext|>",
 *   "enable_thinking": false, "keep_past_thinking": true}; these override the names above.
 * Release *out_text with leap_string_free(). Errors: LEAP_ERR_INVALID_ARGUMENT (NULL template/messages/out,
 * JSON of the wrong shape), LEAP_ERR_SERIALIZATION or LEAP_ERR_FORMAT (malformed JSON, see the message),
 * LEAP_ERR_FORMAT (the template failed). */
LEAP_API leap_status leap_chat_template_render(const leap_chat_template *tmpl, const char *messages_json,
                                               const char *tools_json, int32_t add_generation_prompt,
                                               const char *extra_json, char **out_text);
/* The ChatML template libleap falls back to for models without one (static storage). */
LEAP_API const char *leap_chat_template_chatml(void);


/* ======================================================================================================
 * Models and low-level evaluation
 * ====================================================================================================== */

/* A loaded GGUF model: weights (memory-mapped, shared), tokenizer and chat template. Immutable after
 * loading: one leap_model may be used from any number of threads and conversations at once. */
typedef struct leap_model leap_model;

/*
 * Companion files of multimodal models (LEAP): the vision / audio projector ("mmproj"), the audio decoder
 * (vocoder) and the audio tokenizer. A path given in leap_model_params wins; for a kind left NULL, with
 * auto_detect_companion_files = 1 (the default), the model's directory is searched as LEAP does:
 *   - mmproj: a file named mmproj*.gguf;
 *   - audio decoder: LFM2.5-Audio's vocoder*.gguf, or a .gguf or .bin file whose name contains "audio" and
 *     "decoder";
 *   - audio tokenizer: LFM2.5-Audio's tokenizer*.gguf.
 * A model speaks (leap_model_has_audio_output) when it has both an audio decoder and an audio tokenizer
 * that load (LFM2.5-Audio's vocoder and detokenizer); the older LFM2-Audio v1 audiodecoder files (Mimi)
 * are refused with LEAP_ERR_UNSUPPORTED when given.
 * Names are compared without case. Candidates are matched to the model by its file-name stem: one that
 * contains the whole stem (mmproj-LFM2-VL-450M-Q8_0.gguf for LFM2-VL-450M-Q8_0.gguf) comes first, then one
 * that contains the stem without its quantization tag (mmproj-LFM2-VL-450M-F16.gguf), then the first by
 * name (byte order); a candidate naming no part of the stem is taken only when it is the one of its kind.
 * The model file itself is never a companion. Every companion is checked at load: it must be a readable
 * GGUF file, and a projector must be one (general.architecture "clip"); audio decoders / tokenizers not
 * named .gguf only need to be readable, non-empty files (LEAP accepts .bin decoders). A given path that
 * fails the check fails the load (LEAP_ERR_IO when it cannot be opened, LEAP_ERR_MODEL_LOADING when it is
 * not valid; the message names the kind and the path); a detected file that fails it is left out, the
 * model loads without it, and a LEAP_LOG_WARNING message names the file and why (leap_model_companion_path
 * says NULL).
 *
 * The projector's encoder is loaded with the model, by its clip.projector_type: "lfm2" (LFM2-VL /
 * LFM2.5-VL: images) or "lfm2a" (LFM2-Audio / LFM2.5-Audio: audio input). A given mmproj_path that cannot
 * be used fails the load; an auto-detected one that cannot be used leaves a text model (with a
 * LEAP_LOG_WARNING message), and the image or audio parts it would have taken fail with LEAP_ERR_UNSUPPORTED saying why (leap_model_has_vision etc.
 * report what the model takes).
 */
typedef struct leap_model_params {
    uint32_t struct_size;
    int32_t n_threads;                   /* CPU threads for matrix work; 0 = physical cores (default)   */
    int32_t context_size;                /* tokens per conversation; 0 = min(trained context, 4096)     */
    const char *chat_template;           /* Jinja source overriding the model's; NULL = the model's own */
    const char *mmproj_path;             /* vision / audio projector (multimodal models); NULL = none
                                            given (auto-detected, see above)                            */
    const char *audio_decoder_path;      /* audio decoder (audio-out models); NULL = none given         */
    const char *audio_tokenizer_path;    /* audio tokenizer (audio-out models); NULL = none             */
    int32_t auto_detect_companion_files; /* 1 (default): find mmproj*.gguf / *audio*decoder*.gguf|.bin
                                            next to the model for the paths above left NULL; 0: only the
                                            given paths                                                 */
    /* Prompt cache (LEAP CacheOptions), see "Prompt cache" below. Off by default.                       */
    int32_t cache_enabled;               /* 1: on; 0 (default): off (the other cache fields are ignored)  */
    const char *cache_path;              /* root folder; a folder per model is made inside. Required
                                            unless cache_disk_disabled                                   */
    int32_t cache_max_entries_disk;      /* snapshots kept on disk per model; default 4096, > 0          */
    int32_t cache_max_entries_memory;    /* snapshots kept in memory; default 256 (0: none)              */
    int64_t cache_max_bytes_memory;      /* bytes of snapshots kept in memory; default 512 MiB           */
    int64_t cache_max_bytes_disk;        /* bytes of snapshots kept on disk per model; default 4 GiB     */
    int32_t cache_disk_disabled;         /* 1: memory only (nothing survives the process); default 0     */
    const char *draft_model_path;        /* speculative decoding: a GGUF sharing the model's vocabulary
                                            (LFM2-350M for LFM2-1.2B) that drafts tokens, on the model's
                                            threads; NULL (default): none. Another vocabulary fails the
                                            load with LEAP_ERR_MODEL_LOADING naming the first difference */
} leap_model_params;

/*
 * Prompt cache. With cache_enabled = 1, a turn whose prompt starts with a prefix some earlier turn
 * evaluated (in this process or, through the disk cache, an earlier or concurrent one) restores that
 * prefix's state instead of evaluating it again; leap_generation_stats.cached_prompt_tokens counts the
 * positions restored or reused. A turn saves a snapshot at the end of the part of its prompt the next turn
 * will share (the system prompt and tools on a first turn, or what the chat template writes before the
 * message when there is no system message; the previous exchange later): the state is
 * copied to memory after that part is evaluated, and written to disk by a background thread (the first
 * token does not wait for the file; leap_model_cache_flush or leap_model_free waits for it). Two more
 * snapshots are kept in memory only: the whole prompt but its last position (taken after the prompt is
 * evaluated), which a turn repeating the prompt restores, and at the end of the turn the prompt with the
 * answer's evaluated tokens, which the next turn restores whole when its history's answer tokenizes as it
 * was generated (so a client that sends the whole history each time has only the new message evaluated);
 * each only when its KV cache takes at most a quarter of cache_max_bytes_memory.
 * A snapshot holds the KV cache of the prefix, LFM2's convolution state at its end, its positions (token
 * ids; media parts by the SHA-256 of their content, so an image prompt hits too, and their embedding rows)
 * and the identity of the model file (size, hash of its header and tensor table) and of the kernels (path
 * and build). One from another model or build, or a damaged, truncated or foreign file, is never loaded:
 * it is removed and reported through the log callback (warning). Files are written to a temporary name
 * and renamed, so a crash or a second process never leaves a partial snapshot that is read; several
 * processes may share one folder (eviction, least recently used first down to the caps, runs under a file
 * lock). A turn evaluates its prompt in the same parts whether its prefix came from the cache or not (up to
 * the snapshot, the rest but its last position, then that position alone, as a turn restoring a prompt but
 * its last position evaluates it), so the result is the same bit for bit: a repeated request gets the
 * first one's answer. leap_model_load fails with LEAP_ERR_IO when the folder cannot be
 * created or written, LEAP_ERR_INVALID_ARGUMENT for a missing path or a cap out of range.
 * Trust: cache_path must be private to the user (folders it creates are 0700). A snapshot's checksums
 * detect damage, not tampering: someone who can write the folder can make the model restore a state of
 * their choosing. A file in it that is a link or not a regular file (a FIFO) is skipped, never waited on;
 * temporary files are always new files (never an existing one or a link) under unguessable names.
 */

/* Writes the defaults into *params (at most struct_size bytes) and sets params->struct_size. */
LEAP_API void leap_model_params_init(leap_model_params *params, size_t struct_size);

/* Loads a GGUF file. params may be NULL (defaults). Errors: LEAP_ERR_IO (cannot open / map the model or a
 * companion), LEAP_ERR_MODEL_LOADING (bad file, missing tensor or key, invalid companion: the message
 * names it), LEAP_ERR_UNSUPPORTED (architecture or tensor type). */
LEAP_API leap_status leap_model_load(const char *gguf_path, const leap_model_params *params,
                                     leap_model **out_model);

typedef enum leap_companion_kind {
    LEAP_COMPANION_MMPROJ = 0,          /* vision / audio projector */
    LEAP_COMPANION_AUDIO_DECODER = 1,
    LEAP_COMPANION_AUDIO_TOKENIZER = 2
} leap_companion_kind;

/* The companion file of `kind` the model was loaded with (given or auto-detected), as a path built from
 * the model's path (relative when that was relative), or *out_path = NULL when there is none. Release it
 * with leap_string_free(). A kind outside the enum gives LEAP_ERR_INVALID_ARGUMENT. */
LEAP_API leap_status leap_model_companion_path(const leap_model *model, leap_companion_kind kind,
                                               char **out_path);
/* Conversations and contexts keep the model alive: freeing it while they exist is allowed. The last
 * release waits for the prompt cache's pending disk writes. */
LEAP_API void leap_model_free(leap_model *model);
/* Waits until the prompt cache's pending snapshot writes are on disk (no-op without a cache). */
LEAP_API leap_status leap_model_cache_flush(leap_model *model);

/* ---- Model bundles (LEAP manifests) and downloads ---------------------------------------------------
 * A bundle manifest (LEAP's LeapBundles `<Model>-GGUF/<Quant>.json`) names a model's files and defaults:
 *
 *     {"schema_version": "1.0.0", "inference_type": "llama.cpp/text-to-text",
 *      "load_time_parameters": {"model": FILE, "multimodal_projector": FILE, "audio_decoder": FILE,
 *                               "audio_tokenizer": FILE, "chat_template": FILE or Jinja source},
 *      "generation_time_parameters": {"sampling_parameters": {"temperature": 0.3, "top_p": 0.9,
 *          "min_p": 0.15, "repetition_penalty": 1.05, "top_k": 50}, "number_of_decoding_threads": 4}}
 *
 * Only "model" is required. FILE is an http(s) URL, a file:// URL or a path; relative ones resolve against
 * the manifest's URL (as a link in a web page does) or, for a manifest read from a path, its folder. FILE
 * may also be {"url": FILE, "sha256": "<64 hex digits>", "size": bytes}: the download is checked against
 * them. A chat_template containing "{{" or "{%" is Jinja source, otherwise a FILE holding it. Unknown keys
 * are ignored; schema_version must be 1.x; inference_type, when given, one of the three above.
 *
 * leap_model_load_bundle() reads the manifest (a path, or an http(s) URL it downloads), downloads every
 * FILE given as a URL into a cache folder named after the manifest, as LEAP does (".../LFM2-1.2B-GGUF/
 * Q4_K_M.json" gives "LFM2-1.2B-Q4_K_M"), plus the origin of a manifest from a URL
 * ("LFM2-1.2B-Q4_K_M@https-huggingface.co": two servers never share a folder); each file keeps its URL's
 * last segment. It then loads the model with the manifest's companions (no auto-detection), chat template,
 * sampling parameters as the model's generation defaults (a field a request leaves unset takes the
 * manifest's) and number_of_decoding_threads as n_threads -- each unless params sets its own. A file
 * already in the cache is used without a request when it passes the checks below.
 *
 * Downloads: bytes go to "<file>.part", renamed to the file only once complete and checked, so a file in
 * the cache is never partial. A .part left by a cancel or failure is resumed with an HTTP Range request by
 * the next load (a connection dropped mid-file is also resumed within the call, up to 3 attempts). The size
 * is checked against the server's, and the SHA-256 against the manifest's, else against the server's: an
 * X-Linked-ETag or ETag header that is 64 hex digits (how Hugging Face gives the SHA-256 of its files). A
 * wrong checksum deletes the .part. Downloads use libcurl (libcurl.so.4), loaded at first use: where it is
 * not installed the library works, and loading a bundle with URLs fails with LEAP_ERR_UNSUPPORTED naming
 * libcurl and the package to install (LEAP_LIBCURL=<file> makes the library open another file instead).
 *
 * What is trusted. The manifest chooses the files: one read from a path may name any local file the
 * process can read; one downloaded from a URL cannot name local files. Servers are checked against the
 * manifest: TLS is verified; a redirect from https never goes to plain http; a size or Content-Range total
 * other than the manifest's "size" is refused before the body, nothing is written past it, and a
 * compressed body is refused. Before a file is renamed into the cache its contents are checked (the GGUF
 * magic for the model and its companions, UTF-8 for a chat template): an empty answer, zeros or an error
 * page is deleted, not cached; a file that passes but that the load refuses (cut short by a server that
 * sent no length) is removed from the cache, so the next load downloads it again. Without "sha256" and
 * "size", what is cached is whatever the server sent that looks like a model. Nothing in the cache is
 * used on trust: a cached file must be a regular file of the user (not a link), have the manifest's size,
 * pass the contents check and hash to the manifest's SHA-256 (remembered in ".<file>.verified", a record
 * of the file's inode, size, modification time and hash, so it is not hashed at every load), else it is
 * downloaded again; a .part is never opened through a link or as another user's file. Cache folders are
 * created private to the user (0700): these checks detect damage and stale files, not someone who can
 * write the user's cache folder.
 *
 * A failed or cancelled load leaves no model, and in the cache at most a .part file.
 * Errors: LEAP_ERR_IO (the manifest or a file cannot be read; a download failed: HTTP status such as 404,
 * server unreachable, a server that sends nothing for stall_timeout_seconds, connection dropped, disk full,
 * size or SHA-256 mismatch -- the message names the URL and what happened), LEAP_ERR_FORMAT (not a
 * manifest; a field of the wrong type or range: the message names it), LEAP_ERR_UNSUPPORTED (schema version
 * or inference type; libcurl missing), LEAP_ERR_CANCELLED, LEAP_ERR_BUSY (the same file is being downloaded
 * by another thread or process), and those of leap_model_load(). */

/* A cancel request for downloads, settable from any thread. */
typedef struct leap_cancel_token leap_cancel_token;
LEAP_API leap_status leap_cancel_token_create(leap_cancel_token **out_token);
/* Cancels every download using the token, now and later: each stops within about a second with
 * LEAP_ERR_CANCELLED. Safe from any thread (also while another thread is in leap_model_load_bundle). */
LEAP_API leap_status leap_cancel_token_cancel(leap_cancel_token *token);
LEAP_API leap_status leap_cancel_token_is_cancelled(const leap_cancel_token *token, int32_t *out_flag);
/* The token must outlive the loads using it. */
LEAP_API void leap_cancel_token_free(leap_cancel_token *token);

/* Progress of one file being downloaded: its cache file name, the bytes it has so far (including those a
 * resumed .part already had) and its size (0 when the server does not say). Called on the thread that
 * called leap_model_load_bundle, at most ten times a second per file, at least once a second while the
 * server sends nothing, and once when the file is complete. Return 0 to continue, non-zero to cancel the
 * load (LEAP_ERR_CANCELLED). */
typedef int32_t (*leap_download_progress_fn)(const char *file_name, uint64_t bytes_done, uint64_t bytes_total,
                                             void *user_data);

typedef struct leap_bundle_params {
    uint32_t struct_size;
    const char *cache_dir;               /* NULL (default): $LEAP_CACHE_DIR, else $XDG_CACHE_HOME/leap,
                                            else $HOME/.cache/leap                                      */
    leap_download_progress_fn on_progress; /* NULL = no progress reports                                */
    void *user_data;                     /* passed to on_progress                                       */
    leap_cancel_token *cancel;           /* NULL = not cancellable from another thread                  */
    int32_t n_threads;                   /* 0 (default): the manifest's number_of_decoding_threads, else
                                            physical cores                                              */
    int32_t context_size;                /* 0 (default): min(trained context, 4096)                     */
    const char *chat_template;           /* Jinja source overriding the manifest's and the model's      */
    int32_t stall_timeout_seconds;       /* a download receiving nothing this long fails; 0 = 30 s      */
    /* The prompt cache, as leap_model_params' cache_* fields (see "Prompt cache"); off by default. Not to
     * be confused with cache_dir above, where downloaded files go.                                       */
    int32_t prompt_cache_enabled;
    const char *prompt_cache_path;
    int32_t prompt_cache_max_entries_disk;
    int32_t prompt_cache_max_entries_memory;
    int64_t prompt_cache_max_bytes_memory;
    int64_t prompt_cache_max_bytes_disk;
    int32_t prompt_cache_disk_disabled;
} leap_bundle_params;

LEAP_API void leap_bundle_params_init(leap_bundle_params *params, size_t struct_size);

/* Loads the bundle whose manifest is at path_or_url (a path, file:// or http(s) URL), downloading its
 * files as described above. params may be NULL (defaults). */
LEAP_API leap_status leap_model_load_bundle(const char *path_or_url, const leap_bundle_params *params,
                                            leap_model **out_model);

/* What the model takes and gives besides text: *out_flag = 1 or 0.
 *   has_vision:       image parts (a vision projector, LFM2-VL);
 *   has_audio_input:  audio parts (an audio encoder projector, LFM2-Audio);
 *   has_audio_output: the model speaks (an audio decoder and tokenizer, LFM2.5-Audio). */
LEAP_API leap_status leap_model_has_vision(const leap_model *model, int32_t *out_flag);
LEAP_API leap_status leap_model_has_audio_input(const leap_model *model, int32_t *out_flag);
LEAP_API leap_status leap_model_has_audio_output(const leap_model *model, int32_t *out_flag);

/* Media embeddings: the rows the text model sees for an image or an audio clip, exactly as a conversation
 * evaluates them. *out_rows holds *out_n_rows x *out_n_embd floats, row after row (release it with
 * leap_buffer_free); for an image, the rows of its tiles in row-major order, then those of the thumbnail
 * (LFM2-VL's layout; one block for an image that needs no tiling). On failure *out_rows = NULL and the counts
 * are 0. Errors: LEAP_ERR_UNSUPPORTED (the model has no such encoder; a PNG / GIF / WebP / BMP given as JPEG;
 * an image above 16384 pixels a side or 64 Mi pixels; libturbojpeg, which decodes JPEG and is loaded at
 * first use, is not installed: the message names the Debian package), LEAP_ERR_FORMAT (corrupt or truncated
 * JPEG data), LEAP_ERR_AUDIO_FORMAT (not a mono WAV, too short or too long).
 *
 * Images: JPEG (baseline or progressive; grayscale and CMYK / YCCK are converted to RGB; the EXIF
 * orientation is ignored, as the reference implementations do), or 8-bit RGB pixels row after row
 * (width * height * 3 bytes). Audio: WAV bytes (mono; any sample rate, resampled to the encoder's
 * 16 kHz) or finite float samples at any rate (a NaN or infinity gives LEAP_ERR_INVALID_ARGUMENT). */
LEAP_API leap_status leap_model_embed_image(leap_model *model, const void *jpeg, size_t n_bytes, float **out_rows,
                                            size_t *out_n_rows, size_t *out_n_embd);
LEAP_API leap_status leap_model_embed_image_rgb(leap_model *model, const uint8_t *rgb, int32_t width,
                                                int32_t height, float **out_rows, size_t *out_n_rows,
                                                size_t *out_n_embd);
LEAP_API leap_status leap_model_embed_audio(leap_model *model, const void *wav, size_t n_bytes, float **out_rows,
                                            size_t *out_n_rows, size_t *out_n_embd);
LEAP_API leap_status leap_model_embed_audio_pcm(leap_model *model, const float *samples, size_t n_samples,
                                                int32_t sample_rate, float **out_rows, size_t *out_n_rows,
                                                size_t *out_n_embd);

/* Model facts. *out strings are owned (leap_string_free). */
LEAP_API leap_status leap_model_id(const leap_model *model, char **out_id);              /* file name stem */
LEAP_API leap_status leap_model_architecture(const leap_model *model, char **out_arch);  /* e.g. "lfm2"   */
LEAP_API leap_status leap_model_chat_template(const leap_model *model, char **out_source);
/* 1 when the file has no chat template and ChatML is used instead, else 0. */
LEAP_API leap_status leap_model_uses_fallback_template(const leap_model *model, int32_t *out_flag);
LEAP_API leap_status leap_model_context_size(const leap_model *model, int32_t *out_tokens);
LEAP_API leap_status leap_model_vocab_size(const leap_model *model, int32_t *out_size);
/* Tokens the chat template makes of `messages_json` (a JSON array of messages) with the generation
 * prompt, exactly as a conversation would. */
LEAP_API leap_status leap_model_prompt_token_count(const leap_model *model, const char *messages_json,
                                                   size_t *out_tokens);
/* The model's tokenizer as a leap_tokenizer handle (see the tokenizer section), sharing the model's
 * vocabulary: tokenize, detokenize, token pieces. Release it with leap_tokenizer_free(). */
LEAP_API leap_status leap_model_tokenizer(const leap_model *model, leap_tokenizer **out_tokenizer);
/* Renders messages with the model's chat template exactly as generation does (bos_token / eos_token
 * filled in from the vocabulary). messages_json: a JSON array of messages (the messages wire format or
 * OpenAI shape); tools_json: a JSON array of tools or NULL; extra_json: a JSON object of template
 * variables (e.g. {"enable_thinking":true}) or NULL. Release *out_text with leap_string_free(). */
LEAP_API leap_status leap_model_apply_chat_template(const leap_model *model, const char *messages_json,
                                                    const char *tools_json, int32_t add_generation_prompt,
                                                    const char *extra_json, char **out_text);

/* ---- Low-level evaluation: contexts ---------------------------------------------------------------
 * A leap_context is one token sequence evaluated with the model: its KV cache (and, for LFM2, the
 * short-convolution state), sized for context_size positions. Typical use:
 *
 *     leap_context *ctx;  leap_context_create(model, NULL, &ctx);
 *     leap_context_eval(ctx, prompt, n_prompt);              // positions 0..n_prompt-1
 *     const float *logits; size_t n_vocab;
 *     leap_context_logits(ctx, -1, &logits, &n_vocab);       // next-token logits
 *     int32_t tok; leap_sampler_sample(sampler, logits, n_vocab, &tok);
 *     leap_context_eval(ctx, &tok, 1);  ...
 *     leap_context_rewind(ctx, n_keep);                      // drop everything after n_keep tokens
 *     leap_context_free(ctx);
 *
 * Threading: a context is used by one thread at a time; any number of contexts may use one model
 * concurrently. The context keeps its model alive.
 *
 * Contexts of one model (with the same n_threads and kv_cache_f32) decoding at the same moment on
 * different threads share forward passes, as conversations do: a one-token leap_context_eval or
 * leap_context_eval_all_logits and a leap_context_eval_verify join the model's decode step, where every
 * context's rows go through the weights together (at most 15 rows a pass), so N threads decoding N contexts
 * read the weights about once per step instead of N times. Each context keeps its own logits, as it would
 * alone (bit for bit on the weight types "Speculative decoding" lists; on others the last bits can depend
 * on the rows that shared the pass). A multi-token eval (a prompt) runs in a pass of its own between steps. */
typedef struct leap_context leap_context;

typedef struct leap_context_params {
    uint32_t struct_size;
    int32_t context_size; /* positions the KV cache holds; 0 (default) = the model's context size     */
    int32_t n_threads;    /* worker threads; 0 (default) = the model's n_threads                      */
    int32_t kv_cache_f32; /* 1: keys/values in F32; 0 (default): F16, as llama.cpp                    */
} leap_context_params;

/* Writes the defaults into *params (at most struct_size bytes) and sets params->struct_size. */
LEAP_API void leap_context_params_init(leap_context_params *params, size_t struct_size);

/* Creates an empty context (n_past = 0). params may be NULL. Errors: LEAP_ERR_INVALID_ARGUMENT,
 * LEAP_ERR_OUT_OF_MEMORY (the KV cache could not be allocated). */
LEAP_API leap_status leap_context_create(leap_model *model, const leap_context_params *params,
                                         leap_context **out_ctx);
LEAP_API void leap_context_free(leap_context *ctx);

/* Evaluates n_tokens token ids at positions n_past ... n_past + n_tokens - 1 (long inputs are processed
 * in batches internally) and keeps the logits of the last one. leap_context_eval_all_logits keeps the
 * logits of every token of this call (memory: n_tokens * n_vocab floats). Errors:
 * LEAP_ERR_PROMPT_EXCEEDS_CONTEXT (nothing is evaluated when the tokens do not fit),
 * LEAP_ERR_INVALID_ARGUMENT (n_tokens = 0, a token id outside 0..n_vocab-1). */
LEAP_API leap_status leap_context_eval(leap_context *ctx, const int32_t *tokens, size_t n_tokens);
LEAP_API leap_status leap_context_eval_all_logits(leap_context *ctx, const int32_t *tokens, size_t n_tokens);
/* A verification pass (speculative decoding: the last token and the guesses after it, see leap_speculator):
 * evaluates 1..15 tokens keeping the logits of every one, as leap_context_eval_all_logits does, but each
 * row goes through the weights as a token of its own, so that its logits are those of evaluating the
 * tokens one at a time (bit for bit on the weight types "Speculative decoding" lists; a batched prompt's
 * rows can differ from them), in one pass that reads the weights once. Errors as leap_context_eval, and
 * LEAP_ERR_INVALID_ARGUMENT for more than 15 tokens. */
LEAP_API leap_status leap_context_eval_verify(leap_context *ctx, const int32_t *tokens, size_t n_tokens);

/* Logits (n_vocab floats, borrowed: valid until the next eval / rewind / free of ctx) of token `index`
 * of the last eval call; -1 = its last token, negative values count from the end. Only the last token
 * is available unless leap_context_eval_all_logits or leap_context_eval_verify was used (else
 * LEAP_ERR_INVALID_ARGUMENT). */
LEAP_API leap_status leap_context_logits(leap_context *ctx, int32_t index, const float **out_logits,
                                         size_t *out_n_vocab);

/* Keeps the first n_keep positions (0 <= n_keep <= n_past) so that a shared prefix need not be
 * evaluated again. Free for attention models. LFM2's short-conv state keeps the last 576 positions
 * evaluated (the 512-token batch + 64): a rewind by up to 574 positions from the furthest one evaluated
 * is exact and free, a deeper one re-evaluates the kept prefix internally (exact, costs one prefill).
 * Clears the last logits. */
LEAP_API leap_status leap_context_rewind(leap_context *ctx, int32_t n_keep);
LEAP_API leap_status leap_context_n_past(const leap_context *ctx, int32_t *out_n_past);
LEAP_API leap_status leap_context_size(const leap_context *ctx, int32_t *out_positions);

/* Tokenizes UTF-8 text with the model's tokenizer. add_special: add BOS (etc.) as the model does;
 * parse_special: recognise special-token text such as "<|im_start|>". *out_tokens is owned
 * (leap_buffer_free); it is NULL when *out_n = 0. LEAP_ERR_INVALID_ARGUMENT for more than 256 MiB of
 * text (a conversation prompt above that gives LEAP_ERR_PROMPT_EXCEEDS_CONTEXT). */
LEAP_API leap_status leap_model_tokenize(const leap_model *model, const char *text, int32_t add_special,
                                         int32_t parse_special, int32_t **out_tokens, size_t *out_n);
/* Bytes of one token (special tokens as their text; not NUL-terminated, may be a partial UTF-8
 * character). *out_bytes is owned (leap_buffer_free); NULL when *out_n = 0. */
LEAP_API leap_status leap_model_token_piece(const leap_model *model, int32_t token, uint8_t **out_bytes,
                                            size_t *out_n);
/* 1 when the token ends a turn (EOS, <|im_end|>, <end_of_turn>, ...), else 0. */
LEAP_API leap_status leap_model_token_is_eog(const leap_model *model, int32_t token, int32_t *out_flag);

/* ---- Low-level evaluation: sampling ----------------------------------------------------------------
 * llama.cpp's chain and semantics: penalties -> top_k -> top_p -> min_p -> temperature -> draw.
 * top_k / top_p / min_p see the un-tempered logits; temperature <= 0 is greedy (first largest logit).
 * Draws use xoshiro256** seeded from `seed` (same seed + calls = same tokens). A sampler is used by one
 * thread at a time. */
typedef struct leap_sampler leap_sampler;

typedef struct leap_sampler_params {
    uint32_t struct_size;
    float temperature;        /* default 0.8; <= 0: greedy                                   */
    int32_t top_k;            /* default 40; <= 0: off                                       */
    float top_p;              /* default 0.95; >= 1: off                                     */
    float min_p;              /* default 0.05; <= 0: off                                     */
    float repetition_penalty; /* default 1 (off): positive logits / p, negative logits * p   */
    float frequency_penalty;  /* default 0: minus count * f for tokens in the window        */
    float presence_penalty;   /* default 0: minus p for tokens in the window                */
    int32_t penalty_last_n;   /* default 64: window of accepted tokens; 0: off; -1: all      */
    uint64_t seed;            /* default 0                                                   */
} leap_sampler_params;

LEAP_API void leap_sampler_params_init(leap_sampler_params *params, size_t struct_size);
/* params may be NULL (defaults). */
LEAP_API leap_status leap_sampler_create(const leap_sampler_params *params, leap_sampler **out_sampler);
LEAP_API void leap_sampler_free(leap_sampler *sampler);
/* Picks a token from n_vocab logits (not modified). Does not accept it: call leap_sampler_accept for
 * every token that becomes part of the sequence (prompt and generated) so the penalties see it. */
LEAP_API leap_status leap_sampler_sample(leap_sampler *sampler, const float *logits, size_t n_vocab,
                                         int32_t *out_token);
LEAP_API leap_status leap_sampler_accept(leap_sampler *sampler, int32_t token);
/* Forgets the accepted tokens and restarts the random sequence from the seed. */
LEAP_API leap_status leap_sampler_reset(leap_sampler *sampler);

/* ---- Low-level evaluation: speculative decoding -----------------------------------------------------
 * A leap_speculator drafts guesses of the next tokens for a verification loop of the caller's own (the
 * conversations speculate by themselves: see "Speculative decoding" below for the drafters and the
 * adaptive draft length, which this shares). Each step:
 *
 *     size_t n_guess;  int32_t guess[14];
 *     leap_speculator_draft(spec, seq, n_seq, max_new - 1, guess, &n_guess);  // seq: prompt + generated
 *     int32_t batch[15] = {seq[n_seq - 1], guess...};                          // the last token, then them
 *     leap_context_eval_verify(ctx, batch, 1 + n_guess);      // ctx holds seq but its last token
 *     size_t taken = 0;
 *     for (size_t i = 0; i <= n_guess; i++) {               // position i: the token after batch[0..i]
 *         leap_context_logits(ctx, (int32_t)i, &logits, &n_vocab);
 *         leap_sampler_sample(sampler, logits, n_vocab, &tok);  leap_sampler_accept(sampler, tok);
 *         seq[n_seq++] = tok;
 *         if (i == n_guess || tok != guess[i]) break;       // the first differing sample ends the pass
 *         taken++;
 *     }
 *     if (n_guess > 0) leap_speculator_accept(spec, taken);
 *     leap_context_rewind(ctx, n_seq - 1);                  // drop the rejected guesses' positions
 *
 * Guarantee: sampling every position in order and accepting a guess while the sample equals it gives
 * the tokens of evaluating one token at a time from the same context (greedy, and a seeded sampler's
 * output unchanged; the prompt's last token is evaluated alone in the first pass, and a batched prompt's
 * last row can differ from that in the last bits or more on some weight types): a guess is a point
 * mass proposal, for which the speculative-sampling rule is exactly that (the sampler's draws are the
 * same, one per token kept) -- given logits of each verified position equal to a one-token eval's, which
 * leap_context_eval_verify gives on the weight types "Speculative decoding" lists (on the others they can
 * differ from it in the last bits).
 *
 * Threading: a speculator is used by one thread at a time; any number may use one model. It keeps its
 * model alive. A draft model speculator keeps its own context of the draft model, following the history
 * it is given (the prefix it shares with the last one is kept, the rest evaluated). */
typedef struct leap_speculator leap_speculator;

typedef struct leap_speculator_params {
    uint32_t struct_size;
    int32_t drafter;          /* a leap_drafter; LEAP_DRAFTER_DEFAULT (default): the model's draft model
                                 when it was loaded with one, else prompt lookup (NGRAM). NONE is refused,
                                 DRAFT_MODEL without a draft model too (LEAP_ERR_INVALID_ARGUMENT)        */
    int32_t max_draft_tokens; /* the most guesses a pass: 1..14; <= 0 (default): 8                      */
    int32_t context_size;     /* positions of the draft model's context: 0 (default) = the model's
                                 context size (a longer history gets no guesses)                       */
} leap_speculator_params;

LEAP_API void leap_speculator_params_init(leap_speculator_params *params, size_t struct_size);
/* params may be NULL (defaults). Errors: LEAP_ERR_INVALID_ARGUMENT (see the fields), LEAP_ERR_UNSUPPORTED
 * (a model that speaks: its audio frames are not drafted), LEAP_ERR_OUT_OF_MEMORY (the draft context). */
LEAP_API leap_status leap_speculator_create(leap_model *model, const leap_speculator_params *params,
                                            leap_speculator **out_spec);
LEAP_API void leap_speculator_free(leap_speculator *spec);
/* Writes to out_guesses (room for max_guesses) the guesses for the tokens after history[0..n_history-1]
 * (prompt and generated tokens so far, n_history >= 1) and their count to *out_n: at most max_guesses
 * and max_draft_tokens, 0 when drafting does not pay now (the acceptance rate and the measured cost of a
 * pass decide; pass max_guesses = 0 near the end of a budget). A history that continues the last call's
 * (it starts with it) is one sequence: the tokens added teach the drafter; any other starts a new one.
 * Time is measured from this call to leap_speculator_accept (a pass) or, with no guesses, to the next
 * call (a one-token step): call it once per step. LEAP_ERR_INVALID_ARGUMENT for n_history = 0, a token
 * outside the vocabulary, NULL pointers (out_guesses may be NULL when max_guesses = 0). */
LEAP_API leap_status leap_speculator_draft(leap_speculator *spec, const int32_t *history, size_t n_history,
                                           size_t max_guesses, int32_t *out_guesses, size_t *out_n);
/* Reports that the first n_accepted (0..*out_n) of the last call's guesses were accepted; call it after
 * the verification pass of a draft that made guesses. LEAP_ERR_INVALID_ARGUMENT when there are none to
 * report (none made, or reported already) or n_accepted is more than they were. */
LEAP_API leap_status leap_speculator_accept(leap_speculator *spec, size_t n_accepted);
/* The most guesses one leap_speculator_draft call makes (params->max_draft_tokens, or the default when it
 * was <= 0): room enough for out_guesses. */
LEAP_API leap_status leap_speculator_max_draft_tokens(const leap_speculator *spec, int32_t *out_tokens);


/* ======================================================================================================
 * Conversations and generation
 *
 * A conversation is a chat history bound to a model (LEAP semantics): generating appends the user
 * message to the history first, streams the response, and appends the assistant message (text,
 * reasoning content, function calls, generated audio as an audio_pcm_f32 part) when it completes without
 * error -- also when it was stopped. The KV cache of the history is kept between turns, so each turn only
 * evaluates new tokens. One generation at a time per conversation (a second gets LEAP_ERR_BUSY);
 * different conversations of one model may generate concurrently from different threads.
 * A leap_conversation and its leap_generation are used by one thread at a time, except
 * leap_conversation_stop() and leap_conversation_is_generating(), which may be called from any thread at
 * any time (while the conversation handle is alive). Freeing the model while its conversations exist is
 * allowed: they keep it alive.
 *
 * Stop semantics: leap_conversation_stop() applies to the generation running at that moment, including
 * one that is still starting (leap_conversation_generate_begin has returned, or leap_conversation_generate
 * has been entered, and the prompt is not evaluated yet): that generation ends at its next token boundary
 * and completes with LEAP_FINISH_INTERRUPTED (also before its first token: 0 completion tokens; a long
 * prompt is evaluated in chunks of 512 tokens, and the part evaluated before the stop stays cached). A stop
 * while the conversation is idle does nothing and never carries over to a later generation. Starting,
 * stopping and ending a generation are serialized, so no stop is lost in between.
 *
 * Streaming comes in two forms over the same engine:
 *   - leap_conversation_generate(): blocking, with callbacks (return non-zero from one to stop);
 *   - leap_conversation_generate_begin() + leap_generation_next(): a pull iterator, one event per call.
 * Events arrive in order: text chunks, reasoning chunks (text inside <think>...</think>), function calls
 * (when a call's closing marker arrives), audio samples; COMPLETE is always last. Text is valid UTF-8 and
 * never splits a character; tool-call markup never appears in text chunks.
 *
 * Generated audio (models that speak; text models never produce any): each chunk the model generates is
 * one AUDIO_SAMPLE event / on_audio_sample call, right after the text of the token that produced it, as
 * float32 mono samples in [-1, 1] at a sample rate that is constant within the turn (24000 Hz for current
 * audio models). The turn's samples, concatenated, are also appended to the assistant message as an
 * audio_pcm_f32 part after its text part, so they are in the COMPLETE message and in the history (and its
 * JSON). When the history is replayed to a model, an assistant's generated audio counts as its text. A
 * chunk at another sample rate than the turn's first, or with non-finite samples, ends the generation
 * with LEAP_ERR_GENERATION ("generated audio: ..."), after the events that came before it. An error
 * always comes after the events produced before it, with no COMPLETE.
 * ====================================================================================================== */

typedef struct leap_conversation leap_conversation;
typedef struct leap_generation leap_generation;

typedef enum leap_finish_reason {
    LEAP_FINISH_STOP = 0,           /* the model ended its turn                                  */
    LEAP_FINISH_EXCEED_CONTEXT = 1, /* the context window filled up                              */
    LEAP_FINISH_INTERRUPTED = 2,    /* stopped by the caller                                     */
    LEAP_FINISH_CONSTRAINT = 3,     /* the JSON-schema constraint completed its value            */
    LEAP_FINISH_ERROR = 4,          /* generation failed (the message is not added to history)   */
    LEAP_FINISH_MAX_TOKENS = 5      /* max_tokens reached                                        */
} leap_finish_reason;

/* Options of one generation. Fields left at their "unset" value use the model's defaults. */
typedef struct leap_generation_options {
    uint32_t struct_size;
    float temperature;              /* < 0: model default; 0: greedy                                   */
    float top_p;                    /* < 0: model default; 1: off                                      */
    float min_p;                    /* < 0: model default; 0: off                                      */
    int32_t top_k;                  /* < 0: model default; 0: off                                      */
    float repetition_penalty;       /* < 0: model default; 1: off                                      */
    int32_t use_rng_seed;           /* 0 (default): a random seed per generation; 1: use rng_seed       */
    uint64_t rng_seed;              /* same seed + options + history = same output                    */
    int32_t max_tokens;             /* <= 0 (default): until the end of the turn or the context        */
    const char *json_schema_constraint; /* JSON Schema text; NULL (default): unconstrained              */
    int32_t inject_schema_into_prompt;  /* 1 (default): also describe the schema in the system prompt  */
    int32_t function_call_parser;   /* a leap_function_call_parser; default LEAP_FUNCTION_CALL_PARSER_LFM */
    int32_t inline_thinking_tags;   /* 1: reasoning arrives as text chunks with its tags; default 0     */
    int32_t enable_thinking;        /* 1: ask reasoning models to think (template variable); default 0 */
    /* Models that speak (leap_model_has_audio_output): how audio codes are sampled and what is produced.
     * Defaults are Liquid's runner's: temperature 0.8, top-k 4 (interleaved) or 64 (sequential); 0 / 1 is
     * greedy. max_tokens counts audio frames (80 ms each) as well as text tokens. */
    float audio_temperature;        /* < 0 (default): the runner's; 0: greedy                         */
    int32_t audio_top_k;            /* < 0 (default): the runner's; 1: greedy                         */
    int32_t audio_mode;             /* a leap_audio_mode; default LEAP_AUDIO_MODE_AUTO                 */
    /* OpenAI's penalties (default 0: off; finite, OpenAI allows -2..2): each token's logit is lowered by
     * count * frequency_penalty + presence_penalty for the tokens among the last 64 of the prompt and
     * the output (llama.cpp's window), before top-k / top-p / min-p. */
    float frequency_penalty;
    float presence_penalty;
    /* >= 0: a LEAP_EVENT_TOKEN (on_token) for each generated text token, before the text it makes, with
     * its log-probability and this many most likely alternatives (0..20); -1 (default): none. */
    int32_t top_logprobs;
    /* 1: a tool call that does not parse completes the turn with its text (markers removed) as content
     * and a warning in the log, as vLLM and llama.cpp's server do; 0 (default): the generation ends with
     * LEAP_ERR_FUNCTION_CALL_PARSING. Calls are repaired first where only one reading is possible (see
     * leap_function_calls_parse). */
    int32_t unparsed_function_calls_as_text;
    /* Speculative decoding (see "Speculative decoding" below): who drafts (a leap_drafter; default
     * LEAP_DRAFTER_DEFAULT) and the most tokens drafted for one verification pass (<= 0 (default): 8; at
     * most 14). */
    int32_t drafter;
    int32_t max_draft_tokens;
} leap_generation_options;

/*
 * Speculative decoding. A drafter guesses the tokens that follow; the model checks the last token and up
 * to max_draft_tokens guesses in one forward pass (about the cost of one token on a CPU, where decoding
 * streams every weight once per pass) and keeps the guesses that are the tokens it generates anyway, so a
 * pass can yield several tokens. The rejected guesses are rolled back (KV cache and LFM2's convolution
 * state). Guarantees:
 *   - the output does not change: every token is drawn from the same distribution as without speculation
 *     (penalties, JSON-schema constraint, top-k / top-p / min-p, temperature, tool calls, reasoning, stop
 *     conditions alike) with the same random draws, so greedy decoding gives the same tokens and a seeded
 *     run the same output (a deterministic drafter's guess is accepted exactly when it is the token drawn:
 *     the speculative-sampling rule for a proposal that is a point mass);
 *   - on weights whose few-token kernels keep the one-token summation order (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 *     Q6_K; the other K-quants on AVX2, Q4_K and Q5_K on AVX-512 VNNI up to 7 tokens a pass) each verified
 *     position's logits are the one-token decode's bit for bit; on other weight types they can differ from
 *     it in the last bits, as a batched prompt's do;
 *   - the draft length adapts to the recent acceptance rate and the measured cost of a pass (the model
 *     keeps both from one generation to the next; prompt lookup keeps a rate per length of the match its
 *     guesses continue, so that it drafts far after a long match and little or nothing after a
 *     one-token one), and drafting stops where it does not pay (with
 *     other conversations in the pass, where the guesses would slow them more than they gain); prompt
 *     lookup's guesses cost nothing, so they are still made and checked against the tokens generated while
 *     it does not draft, and drafting resumes as soon as they would pay; a draft model pauses and probes
 *     again later; models that speak never speculate (audio frames are not drafted);
 *   - conversations of one model generating at once share their passes: each one's token and guesses go
 *     through the weights together with the others' tokens and guesses (at most 15 tokens a pass; a
 *     conversation whose guesses do not fit waits for the next pass), each keeping its own output.
 * leap_generation_stats counts the drafted and accepted tokens.
 */
typedef enum leap_drafter {
    LEAP_DRAFTER_DEFAULT = 0,     /* the model's draft model when it was loaded with one, else none      */
    LEAP_DRAFTER_NONE = 1,        /* one token per forward pass                                         */
    LEAP_DRAFTER_NGRAM = 2,       /* prompt lookup: the tokens that followed the latest earlier occurrence
                                     of the longest suffix (1-6 tokens) found again in the prompt and
                                     the output (no second model; pays where the answer copies given
                                     text: summaries, extraction, edits)                                */
    LEAP_DRAFTER_DRAFT_MODEL = 3  /* the draft model's greedy tokens (leap_model_params.draft_model_path;
                                     LEAP_ERR_INVALID_ARGUMENT when the model has none)                 */
} leap_drafter;

/* What a model that speaks produces in a turn. AUTO chooses from the system prompt as Liquid's runner
 * does: "Perform ASR." text only, "Respond with interleaved text and audio." interleaved, "Perform TTS.
 * Use the {US,UK} {male,female} voice." sequential, anything else text only. */
typedef enum leap_audio_mode {
    LEAP_AUDIO_MODE_AUTO = 0,
    LEAP_AUDIO_MODE_TEXT_ONLY = 1,
    LEAP_AUDIO_MODE_SEQUENTIAL = 2,   /* text until <|audio_start|>, then audio until the end of audio   */
    LEAP_AUDIO_MODE_INTERLEAVED = 3   /* 6 text tokens, 12 audio frames, ...; <|text_end|> goes to audio */
} leap_audio_mode;

LEAP_API void leap_generation_options_init(leap_generation_options *options, size_t struct_size);

typedef struct leap_generation_stats {
    int64_t prompt_tokens;          /* prompt tokens evaluated this turn (cached ones excluded)       */
    int64_t completion_tokens;
    int64_t total_tokens;           /* prompt_tokens + completion_tokens                              */
    int64_t cached_prompt_tokens;   /* prompt positions reused from the previous turn or restored from
                                       the prompt cache (not evaluated again)                        */
    double tokens_per_second;       /* decoding speed                                                 */
    double time_to_first_token;     /* seconds from the call to the first generated token            */
    double prompt_tokens_per_second;
    int64_t drafted_tokens;         /* speculative decoding: tokens drafted and verified               */
    int64_t accepted_draft_tokens;  /* of those, the ones accepted (completion tokens without a pass) */
} leap_generation_stats;

typedef enum leap_event_kind {
    LEAP_EVENT_NONE = 0,            /* nothing: the generation is over                                */
    LEAP_EVENT_CHUNK = 1,           /* text, text_len                                                 */
    LEAP_EVENT_REASONING_CHUNK = 2, /* text, text_len                                                 */
    LEAP_EVENT_FUNCTION_CALLS = 3,  /* function_calls_json: [{"name":"f","arguments":{...}}, ...]     */
    LEAP_EVENT_AUDIO_SAMPLE = 4,    /* samples, n_samples, sample_rate (float32 mono)                 */
    LEAP_EVENT_COMPLETE = 5,        /* message, finish_reason, stats                                  */
    LEAP_EVENT_TOKEN = 6            /* token, top_logprobs, n_top_logprobs (options->top_logprobs >= 0) */
} leap_event_kind;

/* A token and its log-probability: log_softmax of the model's raw logits (before the JSON-schema mask,
 * the penalties, top-k / top-p / min-p and the temperature), as OpenAI's logprobs are. `bytes` is the
 * token's text, not NUL-terminated, and may be part of a UTF-8 character (a multi-byte character split
 * across tokens): join the bytes of consecutive tokens to decode them. */
typedef struct leap_token_logprob {
    int32_t token;
    float logprob;
    const char *bytes;
    size_t n_bytes;
} leap_token_logprob;

/* One streamed event. Pointers are borrowed: valid until the next leap_generation_next() or
 * leap_generation_free() on the same generation (copy what you keep; leap_message_copy for message). */
typedef struct leap_event {
    uint32_t struct_size;
    int32_t kind;                       /* leap_event_kind */
    const char *text;                   /* NUL-terminated UTF-8 */
    size_t text_len;
    const char *function_calls_json;
    const float *samples;
    size_t n_samples;
    int32_t sample_rate;
    int32_t finish_reason;              /* leap_finish_reason */
    const leap_message *message;        /* the complete assistant message */
    const leap_generation_stats *stats;
    leap_token_logprob token;           /* LEAP_EVENT_TOKEN: the generated token                        */
    const leap_token_logprob *top_logprobs; /* its most likely alternatives, most likely first          */
    size_t n_top_logprobs;
} leap_event;

/* Callbacks of leap_conversation_generate(). Any may be NULL. Returning non-zero from a callback stops
 * the generation after the current token: it completes with LEAP_FINISH_INTERRUPTED.
 * Calling back into the same conversation from a callback (other than on_complete):
 *   - leap_conversation_generate / _generate_begin / _append / _remove_last give LEAP_ERR_BUSY;
 *   - leap_conversation_stop, _is_generating and the history readers (_history_json, _message_count,
 *     _message) are allowed; the history then ends with the user message of the running turn;
 *   - leap_conversation_free is allowed: the running generation finishes on its own reference, and the
 *     handle must not be used after the free.
 * on_complete runs after the assistant message entered the history and the conversation became idle:
 * from there every call is allowed, including starting the next turn. on_error runs after the failed
 * generation ended (the conversation is idle too). */
typedef int32_t (*leap_text_callback)(const char *utf8, size_t n_bytes, void *user_data);
typedef int32_t (*leap_function_calls_callback)(const char *function_calls_json, void *user_data);
typedef void (*leap_complete_callback)(const leap_message *message, leap_finish_reason reason,
                                       const leap_generation_stats *stats, void *user_data);
typedef void (*leap_error_callback)(leap_status status, const char *message, void *user_data);
/* A generated token and its n_top most likely alternatives (see leap_token_logprob); pointers are valid
 * during the call only. */
typedef int32_t (*leap_token_callback)(const leap_token_logprob *token, const leap_token_logprob *top,
                                       size_t n_top, void *user_data);

typedef struct leap_generation_callbacks {
    uint32_t struct_size;
    leap_text_callback on_chunk;
    leap_text_callback on_reasoning_chunk;
    leap_function_calls_callback on_function_calls;
    leap_audio_callback on_audio_sample;  /* generated audio (see above and the audio section) */
    leap_complete_callback on_complete;
    leap_error_callback on_error;
    void *user_data;                    /* passed to every callback */
    leap_token_callback on_token;       /* generated tokens with log-probabilities (options->top_logprobs) */
} leap_generation_callbacks;

LEAP_API void leap_generation_callbacks_init(leap_generation_callbacks *callbacks, size_t struct_size);

/* A new conversation; system_prompt may be NULL or "" (no system message). */
LEAP_API leap_status leap_conversation_create(leap_model *model, const char *system_prompt,
                                              leap_conversation **out_conversation);
/* A conversation continuing `history_json` (a JSON array of messages, as leap_conversation_history_json
 * writes it). */
LEAP_API leap_status leap_conversation_create_from_history(leap_model *model, const char *history_json,
                                                           leap_conversation **out_conversation);
LEAP_API void leap_conversation_free(leap_conversation *conversation);

/* The history as a JSON array of messages. Release with leap_string_free(). */
LEAP_API leap_status leap_conversation_history_json(const leap_conversation *conversation, char **out_json);
LEAP_API leap_status leap_conversation_message_count(const leap_conversation *conversation, size_t *out_count);
/* A copy of message `index` of the history. Release with leap_message_free(). */
LEAP_API leap_status leap_conversation_message(const leap_conversation *conversation, size_t index,
                                               leap_message **out_message);
/* Adds a message without generating (e.g. a tool result). LEAP_ERR_BUSY while generating. */
LEAP_API leap_status leap_conversation_append(leap_conversation *conversation, const leap_message *message);
/* Removes the last message (no-op when empty). LEAP_ERR_BUSY while generating. */
LEAP_API leap_status leap_conversation_remove_last(leap_conversation *conversation);
/* Registers a function the model may call, as OpenAI tool JSON:
 *   {"type":"function","function":{"name":"get_weather","description":"...",
 *    "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}
 * (the bare {"name":...,"parameters":...} object is accepted too). It reaches the chat template as a tool. */
LEAP_API leap_status leap_conversation_register_function(leap_conversation *conversation,
                                                         const char *function_json);
/* 1 while a generation runs (from generate / generate_begin until it completes, fails or is freed), else
 * 0. Any thread. */
LEAP_API leap_status leap_conversation_is_generating(const leap_conversation *conversation, int32_t *out_flag);
/* Asks the running (or starting) generation to stop after the current token: it completes with
 * LEAP_FINISH_INTERRUPTED. Any thread; no-op when idle (see "Stop semantics" above). */
LEAP_API leap_status leap_conversation_stop(leap_conversation *conversation);

/* Generates the response to `message` (copied; appended to the history), blocking, delivering events
 * through `callbacks` (may be NULL). options may be NULL (model defaults). Returns LEAP_OK when the
 * generation completed (see the finish reason passed to on_complete), or the error that ended it (also
 * passed to on_error): e.g. LEAP_ERR_PROMPT_EXCEEDS_CONTEXT, LEAP_ERR_FUNCTION_CALL_PARSING, LEAP_ERR_BUSY. */
LEAP_API leap_status leap_conversation_generate(leap_conversation *conversation, const leap_message *message,
                                                const leap_generation_options *options,
                                                const leap_generation_callbacks *callbacks);

/* Pull form: starts a generation (the user message enters the history now; the prompt is evaluated on the
 * first leap_generation_next). Free the generation when done; freeing it early stops it (a started
 * generation then completes as interrupted and its partial answer enters the history). A generation
 * keeps its conversation alive: leap_conversation_free before leap_generation_free is allowed. */
LEAP_API leap_status leap_conversation_generate_begin(leap_conversation *conversation,
                                                      const leap_message *message,
                                                      const leap_generation_options *options,
                                                      leap_generation **out_generation);
/* The next event into *out_event (set out_event->struct_size = sizeof *out_event first). After the
 * COMPLETE event it returns LEAP_OK with kind LEAP_EVENT_NONE. A failure returns its status and ends the
 * generation. */
LEAP_API leap_status leap_generation_next(leap_generation *generation, leap_event *out_event);
LEAP_API void leap_generation_free(leap_generation *generation);

/* Saving and restoring a conversation's evaluated state, for apps that manage it themselves.
 * leap_conversation_save_state writes the positions the conversation has evaluated (its KV cache, LFM2's
 * convolution state, the positions' token ids and media keys, the model and kernel identity; the format of
 * the prompt cache's snapshots) to `path`, atomically (a temporary file next to it, renamed). The history
 * is not part of it. leap_conversation_load_state restores such a file into a conversation: its next turn
 * reuses the saved positions as far as its prompt starts with them (restore into a conversation whose
 * history renders to that prompt, e.g. one created from the exported history). Errors: LEAP_ERR_BUSY
 * while generating; save: LEAP_ERR_INVALID_ARGUMENT when nothing was evaluated yet, LEAP_ERR_IO when the
 * file cannot be written; load: LEAP_ERR_IO when it cannot be read or is not a regular file (a FIFO is
 * refused, not waited on), LEAP_ERR_FORMAT when it is not a state of this model and build (another model
 * or kernel build, damaged, truncated): the conversation is then unchanged. The state file is the
 * caller's: a link in `path` is followed; the temporary file of a save is always a new file. */
LEAP_API leap_status leap_conversation_save_state(leap_conversation *conversation, const char *path);
LEAP_API leap_status leap_conversation_load_state(leap_conversation *conversation, const char *path);

/* (section filled by the conversation work) */

/* ---- Function-call parsers (standalone) ------------------------------------------------------------
 * The parsers a conversation uses to cut function calls out of generated text, usable on their own.
 *   LFM (default for LFM2 / LFM2.5): <|tool_call_start|>[get_weather(city="Paris"), now()]<|tool_call_end|>
 *     Pythonic keyword calls (Python literals: strings with ' " or triple quotes and escapes, numbers,
 *     True/False/None and true/false/null, lists, tuples, dicts); also the JSON variant
 *     [{"name": "f", "arguments": {...}}] or a single such object.
 *   HERMES (Qwen, Hermes): <tool_call>{"name": "f", "arguments": {...}}</tool_call>, one call per block;
 *     "arguments" may also be a string holding JSON.
 * Calls as JSON: [{"name":"get_weather","arguments":{"city":"Paris"}}, ...]. Thread-safe (no state). */
typedef enum leap_function_call_parser {
    LEAP_FUNCTION_CALL_PARSER_NONE = 0,   /* no parsing: tool-call markup stays text (not valid below) */
    LEAP_FUNCTION_CALL_PARSER_LFM = 1,
    LEAP_FUNCTION_CALL_PARSER_HERMES = 2
} leap_function_call_parser;

/* Parse the function calls in `text` as a conversation reads a response: every marker-delimited block
 * outside the reasoning (text outside the blocks is ignored, a call written inside <think>...</think> is
 * reasoning, a </think> with no <think> before it ends reasoning the prompt opened, a last block without
 * its end marker runs to the end), or, when `text` has no start marker, what follows the reasoning as
 * one body. LFM also reads a Hermes <tool_call>{...}</tool_call> block. Repaired where only one reading
 * is possible, each repair logged as a warning: a Python set is read as a list; unescaped quotes inside
 * a string are taken as part of it when exactly one closing quote lets the call parse; a call that
 * does not parse but whose brackets and quotes balance is left out and the calls next to it kept.
 * *out_calls_json receives a compact JSON array (possibly "[]"); release it with leap_string_free(). A
 * malformed call gives LEAP_ERR_FUNCTION_CALL_PARSING with a message naming the byte offset in the
 * body, what was expected and found, and quoting the text. NONE or a value outside the enum gives
 * LEAP_ERR_INVALID_ARGUMENT. */
LEAP_API leap_status leap_function_calls_parse(leap_function_call_parser parser, const char *text,
                                               char **out_calls_json);
/* leap_function_calls_parse over n_bytes of UTF-8 `text` (need not be NUL-terminated and may hold NUL
 * bytes, as a string argument may; NULL only when n_bytes is 0). */
LEAP_API leap_status leap_function_calls_parse_n(leap_function_call_parser parser, const char *text, size_t n_bytes,
                                                 char **out_calls_json);
/* Write calls in the parser's format, markers included ("" for an empty array): LFM writes one block
 * with keyword arguments sorted by name and strings double-quoted and escaped; HERMES writes one block
 * per call, newline-separated, as Qwen templates render them. `calls_json` is a JSON array of
 * {"name", "arguments"} objects (or one such object; "arguments" an object, a JSON string or absent).
 * Errors: LEAP_ERR_SERIALIZATION for malformed calls_json. Release *out_text with leap_string_free(). */
LEAP_API leap_status leap_function_calls_dump(leap_function_call_parser parser, const char *calls_json,
                                              char **out_text);
/* ---- end of function-call parsers ---- */


#ifdef __cplusplus
}
#endif

#endif /* LEAP_H */
