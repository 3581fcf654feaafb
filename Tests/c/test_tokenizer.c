/* Every leap_tokenizer_* entry point, including NULL and misuse, on the tiny LFM2-style vocabulary
 * (Tests/Fixtures/tokenizer/lfm2-tiny-vocab.gguf); expected ids are llama.cpp's (from
 * Tests/Fixtures/tokenizer/goldens/lfm2-tiny.json, scripts/fixtures/make_tokenizer_goldens.py).
 * Run from the repository root. */
#include <stdlib.h>
#include "check.h"

#define VOCAB "Tests/Fixtures/tokenizer/lfm2-tiny-vocab.gguf"

static int same_ids(const int32_t *a, size_t n, const int32_t *b, size_t m) {
    if (n != m) return 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return 0;
    return 1;
}

static void test_load_errors(void) {
    leap_tokenizer *t = (leap_tokenizer *)1;
    CHECK_STATUS(leap_tokenizer_load(NULL, &t), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(t == NULL);
    CHECK_STATUS(leap_tokenizer_load(VOCAB, NULL), LEAP_ERR_INVALID_ARGUMENT);
    t = (leap_tokenizer *)1;
    CHECK_STATUS(leap_tokenizer_load("/nonexistent/vocab.gguf", &t), LEAP_ERR_IO);
    CHECK(t == NULL);
    /* A GGUF file without tokenizer metadata. */
    CHECK_STATUS(leap_tokenizer_load("Tests/Fixtures/gguf/random_types.gguf", &t), LEAP_ERR_FORMAT);
    CHECK_ERROR_MENTIONS("tokenizer.ggml.model");
    CHECK(t == NULL);
    leap_tokenizer_free(NULL);
}

static void test_tokenize(const leap_tokenizer *t) {
    int32_t *ids = NULL;
    size_t n = 0;
    static const int32_t hello[] = {87, 497, 126, 924};
    CHECK_OK(leap_tokenizer_tokenize(t, "Hello world", 11, 0, 0, &ids, &n));
    CHECK(same_ids(ids, n, hello, 4));
    leap_buffer_free(ids);

    static const int32_t hello_bos[] = {1, 87, 497, 126, 924};
    CHECK_OK(leap_tokenizer_tokenize(t, "Hello world", 11, 1, 0, &ids, &n));
    CHECK(same_ids(ids, n, hello_bos, 5));
    leap_buffer_free(ids);

    const char *chat = "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n";
    static const int32_t chat_special[] = {1, 6, 395, 278, 25, 87, 120, 684, 7, 25, 6, 539, 382, 422, 25};
    CHECK_OK(leap_tokenizer_tokenize(t, chat, strlen(chat), 1, 1, &ids, &n));
    CHECK(same_ids(ids, n, chat_special, 15));
    char *text = NULL;
    size_t len = 0;
    CHECK_OK(leap_tokenizer_detokenize(t, ids, n, 0, &text, &len));
    CHECK(text && strcmp(text, "user\nHi there\nassistant\n") == 0 && len == strlen(text));
    leap_string_free(text);
    CHECK_OK(leap_tokenizer_detokenize(t, ids, n, 1, &text, NULL));
    CHECK(text && strncmp(text, "<|startoftext|><|im_start|>user", 31) == 0);
    leap_string_free(text);
    leap_buffer_free(ids);

    /* Without parse_special the control tokens are plain text: 34 ids, none of them 6 or 7. */
    CHECK_OK(leap_tokenizer_tokenize(t, chat, strlen(chat), 0, 0, &ids, &n));
    CHECK(n == 34);
    for (size_t i = 0; i < n; i++) CHECK(ids[i] != 6 && ids[i] != 7);
    leap_buffer_free(ids);

    /* Invalid UTF-8 is tokenized as U+FFFD, like llama.cpp. */
    static const int32_t ff[] = {254, 206, 204};
    CHECK_OK(leap_tokenizer_tokenize(t, "\xff", 1, 0, 0, &ids, &n));
    CHECK(same_ids(ids, n, ff, 3));
    leap_buffer_free(ids);

    /* Empty text: no ids (BOS only with add_special); NULL text is fine when n_bytes is 0. */
    CHECK_OK(leap_tokenizer_tokenize(t, NULL, 0, 0, 0, &ids, &n));
    CHECK(ids != NULL && n == 0);
    leap_buffer_free(ids);
    CHECK_OK(leap_tokenizer_tokenize(t, "", 0, 1, 0, &ids, &n));
    CHECK(n == 1 && ids[0] == 1);
    leap_buffer_free(ids);

    ids = (int32_t *)1;
    CHECK_STATUS(leap_tokenizer_tokenize(t, NULL, 3, 0, 0, &ids, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(ids == NULL && n == 0);
    CHECK_STATUS(leap_tokenizer_tokenize(t, "a", (size_t)1 << 29, 0, 0, &ids, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("too long");
    CHECK_STATUS(leap_tokenizer_tokenize(NULL, "a", 1, 0, 0, &ids, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_tokenize(t, "a", 1, 0, 0, NULL, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_tokenize(t, "a", 1, 0, 0, &ids, NULL), LEAP_ERR_INVALID_ARGUMENT);
}

static void test_pieces_and_ids(const leap_tokenizer *t) {
    char *piece = NULL;
    size_t len = 99;
    /* 🦙 is four single-byte tokens in this vocabulary: each piece is one byte of it. */
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK_OK(leap_tokenizer_tokenize(t, "\xf0\x9f\xa6\x99", 4, 0, 0, &ids, &n));
    CHECK(n == 4);
    for (size_t i = 0; i < n && i < 4; i++) {
        CHECK_OK(leap_tokenizer_token_to_piece(t, ids[i], 0, &piece, &len));
        CHECK(len == 1 && (unsigned char)piece[0] == (unsigned char)"\xf0\x9f\xa6\x99"[i]);
        leap_string_free(piece);
    }
    leap_buffer_free(ids);
    CHECK_OK(leap_tokenizer_token_to_piece(t, 7, 0, &piece, &len));
    CHECK(piece && len == 0 && piece[0] == 0);
    leap_string_free(piece);
    CHECK_OK(leap_tokenizer_token_to_piece(t, 7, 1, &piece, NULL));
    CHECK(piece && strcmp(piece, "<|im_end|>") == 0);
    leap_string_free(piece);
    piece = (char *)1;
    CHECK_STATUS(leap_tokenizer_token_to_piece(t, 3275, 0, &piece, &len), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(piece == NULL);
    CHECK_STATUS(leap_tokenizer_token_to_piece(t, -1, 0, &piece, &len), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_token_to_piece(t, 1, 0, NULL, &len), LEAP_ERR_INVALID_ARGUMENT);

    char *text = (char *)1;
    static const int32_t bad[] = {1, 5000};
    CHECK_STATUS(leap_tokenizer_detokenize(t, bad, 2, 0, &text, &len), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(text == NULL);
    CHECK_ERROR_MENTIONS("5000");
    CHECK_STATUS(leap_tokenizer_detokenize(t, NULL, 2, 0, &text, &len), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_OK(leap_tokenizer_detokenize(t, NULL, 0, 0, &text, &len));
    CHECK(text && text[0] == 0 && len == 0);
    leap_string_free(text);
    CHECK_STATUS(leap_tokenizer_detokenize(t, bad, 1, 0, NULL, &len), LEAP_ERR_INVALID_ARGUMENT);

    size_t size = 0;
    int32_t id = 0, eog = -1;
    CHECK_OK(leap_tokenizer_vocab_size(t, &size));
    CHECK(size == 3275);
    CHECK_OK(leap_tokenizer_bos_id(t, &id));
    CHECK(id == 1);
    CHECK_OK(leap_tokenizer_eos_id(t, &id));
    CHECK(id == 7);
    CHECK_OK(leap_tokenizer_is_eog(t, 7, &eog));
    CHECK(eog == 1);
    CHECK_OK(leap_tokenizer_is_eog(t, 2, &eog));
    CHECK(eog == 1);
    CHECK_OK(leap_tokenizer_is_eog(t, 6, &eog));
    CHECK(eog == 0);
    CHECK_OK(leap_tokenizer_is_eog(t, -5, &eog));
    CHECK(eog == 0);
    CHECK_STATUS(leap_tokenizer_vocab_size(t, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_vocab_size(NULL, &size), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_bos_id(NULL, &id), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_eos_id(t, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_tokenizer_is_eog(t, 7, NULL), LEAP_ERR_INVALID_ARGUMENT);
}

static void test_wrong_handle(void) {
    leap_message *m = NULL;
    size_t size = 0;
    CHECK_OK(leap_message_create(LEAP_ROLE_USER, &m));
    CHECK_STATUS(leap_tokenizer_vocab_size((const leap_tokenizer *)m, &size), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("not a valid tokenizer handle");
    leap_tokenizer_free((leap_tokenizer *)m); /* another kind of handle: ignored */
    leap_message_free(m);
}

int main(void) {
    test_load_errors();
    leap_tokenizer *t = NULL;
    CHECK_OK(leap_tokenizer_load(VOCAB, &t));
    if (t) {
        test_tokenize(t);
        test_pieces_and_ids(t);
    }
    leap_tokenizer_free(t);
    test_wrong_handle();
    return CHECK_SUMMARY("test_tokenizer");
}
