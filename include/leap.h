/*
 * leap.h -- the C interface of libleap, an on-device LLM SDK for Linux.
 *
 * libleap loads GGUF models (Liquid LFM2 / LFM2.5, llama-architecture such as SmolLM2, Gemma 3) and runs
 * them in-process on the CPU. This header is the whole contract: a function that is not declared here is
 * not part of the API. C99; every name starts with leap_ / LEAP_.
 *
 * Errors
 *   Every fallible function returns a leap_status. LEAP_OK (0) is success. On failure,
 *   leap_last_error() returns a message for the calling thread that says what was wrong; it stays valid
 *   until the next leap_* call on the same thread. leap_status_string() names a status (static storage).
 *   Invalid arguments (NULL pointers, wrong sizes, out-of-range indices) give LEAP_ERR_INVALID_ARGUMENT;
 *   the library never aborts the host process on bad input.
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
 *   Structs whose first field is `uint32_t struct_size` are growable: obtain them from the matching
 *   *_default() function (which sets struct_size), change the fields you need and pass a pointer. The
 *   library reads only struct_size bytes, so programs built against an older header keep working.
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
/* WAV bytes: the RIFF/WAVE header is validated (mono PCM int16/24/32 or float32; any sample rate). */
LEAP_API leap_status leap_message_add_audio_wav(leap_message *message, const void *wav, size_t n_bytes);
/* Interleaved float samples, encoded as a float32 WAV part (the SDK's fromFloatSamples helper). */
LEAP_API leap_status leap_message_add_audio_samples(leap_message *message, const float *interleaved,
                                                    size_t n_frames, int32_t channel_count,
                                                    int32_t sample_rate);
/* Raw mono float PCM kept as such (an "audio_pcm_f32" part). */
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

/* (section filled by the tokenizer / template work) */


/* ======================================================================================================
 * Models and low-level evaluation
 * ====================================================================================================== */

/* (section filled by the model work) */


/* ======================================================================================================
 * Conversations and generation
 * ====================================================================================================== */

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

/* Parse the function calls in `text`: every marker-delimited block (text outside the blocks is ignored,
 * a last block without its end marker runs to the end), or, when `text` has no start marker, the whole
 * text as one body. *out_calls_json receives a compact JSON array (possibly "[]"); release it with
 * leap_string_free(). A malformed call gives LEAP_ERR_FUNCTION_CALL_PARSING with a message naming the
 * byte offset in the body, what was expected and found, and quoting the text. NONE or a value outside
 * the enum gives LEAP_ERR_INVALID_ARGUMENT. */
LEAP_API leap_status leap_function_calls_parse(leap_function_call_parser parser, const char *text,
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
