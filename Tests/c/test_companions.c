/* Companion files of multimodal models with a real text model (SmolLM2-135M-Instruct): a projector
 * next to the model is detected and reported, the model still chats, an image part is refused naming
 * the projector; explicit paths win; auto-detection can be turned off; bad companions fail the load. */
#define _XOPEN_SOURCE 700 /* mkdtemp, symlink, realpath under -std=c99 */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include "check.h"

/* A metadata-only GGUF v3 file whose general.architecture is `arch` (the GGUF spec's layout). */
static void write_gguf(const char *path, const char *arch) {
    static const char key[] = "general.architecture";
    uint32_t version = 3, type_string = 8;
    uint64_t n_tensors = 0, n_kv = 1, key_len = sizeof key - 1, arch_len = strlen(arch);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite("GGUF", 1, 4, f);
    fwrite(&version, 4, 1, f);
    fwrite(&n_tensors, 8, 1, f);
    fwrite(&n_kv, 8, 1, f);
    fwrite(&key_len, 8, 1, f);
    fwrite(key, 1, key_len, f);
    fwrite(&type_string, 4, 1, f);
    fwrite(&arch_len, 8, 1, f);
    fwrite(arch, 1, arch_len, f);
    fclose(f);
}

static char *companion(const leap_model *m, leap_companion_kind kind) {
    char *p = (char *)"unset";
    CHECK_OK(leap_model_companion_path(m, kind, &p));
    return p;
}

/* Collects the log's warnings while a model loads. */
static char logged[4096];
static int logged_count;

static void collect_log(leap_log_level level, const char *message, void *user_data) {
    size_t used = strlen(logged);
    CHECK(level == LEAP_LOG_WARNING && user_data == (void *)logged);
    snprintf(logged + used, sizeof logged - used, "%s\n", message);
    logged_count++;
}

int main(void) {
    char path[1024], abs_path[PATH_MAX], dir[] = "/tmp/leap-c-companions-XXXXXX";
    char model_link[1200], proj[1200], proj2[1200], missing[1200];
    const char *models = getenv("LEAP_MODELS_DIR");
    leap_model *m = NULL;
    leap_model_params mp;
    FILE *f;

    snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", models ? models : "models");
    if (!(f = fopen(path, "rb"))) {
        printf("test_companions: skipped (%s not found)\n", path);
        return CHECK_SUMMARY("test_companions");
    }
    fclose(f);
    CHECK(realpath(path, abs_path) != NULL);
    CHECK(mkdtemp(dir) != NULL);
    snprintf(model_link, sizeof model_link, "%s/model.gguf", dir);
    snprintf(proj, sizeof proj, "%s/mmproj-model-f16.gguf", dir);
    snprintf(proj2, sizeof proj2, "%s/mmproj-model-q8_0.gguf", dir);
    snprintf(missing, sizeof missing, "%s/missing.gguf", dir);
    CHECK(symlink(abs_path, model_link) == 0);
    write_gguf(proj2, "clip");
    write_gguf(proj, "clip");

    leap_model_params_init(&mp, sizeof mp);
    mp.context_size = 256;
    CHECK_STATUS(leap_set_log_callback(collect_log, (leap_log_level)0, logged), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_set_log_callback(collect_log, (leap_log_level)5, logged), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_OK(leap_set_log_callback(collect_log, LEAP_LOG_WARNING, logged));
    CHECK_OK(leap_model_load(model_link, &mp, &m));
    CHECK_OK(leap_set_log_callback(NULL, LEAP_LOG_WARNING, NULL));
    /* the detected placeholder projector is left out with a warning naming it and the cause */
    CHECK(logged_count == 1);
    CHECK(strstr(logged, proj) != NULL && strstr(logged, "has no clip.projector_type") != NULL);
    if (m) {
        leap_conversation *conv = NULL;
        leap_message *img = NULL, *hi = NULL;
        leap_generation_options o;
        static const unsigned char jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0, 0, 0, 0};
        char *p = companion(m, LEAP_COMPANION_MMPROJ);
        CHECK(p != NULL && strcmp(p, proj) == 0); /* the first by name */
        leap_string_free(p);
        CHECK(companion(m, LEAP_COMPANION_AUDIO_DECODER) == NULL);
        CHECK(companion(m, LEAP_COMPANION_AUDIO_TOKENIZER) == NULL);
        p = NULL;
        CHECK_STATUS(leap_model_companion_path(m, (leap_companion_kind)7, &p), LEAP_ERR_INVALID_ARGUMENT);
        CHECK(p == NULL);
        CHECK_STATUS(leap_model_companion_path(m, LEAP_COMPANION_MMPROJ, NULL), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_model_companion_path(NULL, LEAP_COMPANION_MMPROJ, &p), LEAP_ERR_INVALID_ARGUMENT);

        /* it chats as a text model, and refuses an image naming the part and the projector */
        leap_generation_options_init(&o, sizeof o);
        o.temperature = 0;
        o.max_tokens = 4;
        CHECK_OK(leap_conversation_create(m, NULL, &conv));
        CHECK_OK(leap_message_create(LEAP_ROLE_USER, &hi));
        CHECK_OK(leap_message_add_text(hi, "Hi"));
        CHECK_OK(leap_conversation_generate(conv, hi, &o, NULL));
        CHECK_OK(leap_message_create(LEAP_ROLE_USER, &img));
        CHECK_OK(leap_message_add_text(img, "What is this?"));
        CHECK_OK(leap_message_add_image_jpeg(img, jpeg, sizeof jpeg));
        CHECK_STATUS(leap_conversation_generate(conv, img, &o, NULL), LEAP_ERR_UNSUPPORTED);
        CHECK_ERROR_MENTIONS("history[2].content[1]: an image part needs a vision encoder");
        CHECK_ERROR_MENTIONS(proj);
        leap_message_free(hi);
        leap_message_free(img);
        leap_conversation_free(conv);
        leap_model_free(m);
        m = NULL;
    }
    /* an explicit path wins, and a given projector must be usable: this placeholder fails the load, named */
    mp.mmproj_path = proj2;
    CHECK_STATUS(leap_model_load(model_link, &mp, &m), LEAP_ERR_MODEL_LOADING);
    CHECK_ERROR_MENTIONS(proj2);
    CHECK_ERROR_MENTIONS("has no clip.projector_type");
    CHECK(m == NULL);
    mp.mmproj_path = NULL;
    mp.auto_detect_companion_files = 0;
    CHECK_OK(leap_model_load(model_link, &mp, &m));
    if (m) {
        CHECK(companion(m, LEAP_COMPANION_MMPROJ) == NULL);
        leap_model_free(m);
        m = NULL;
    }
    /* bad companions fail the load, naming the kind and the path */
    mp.mmproj_path = missing;
    CHECK_STATUS(leap_model_load(model_link, &mp, &m), LEAP_ERR_IO);
    CHECK_ERROR_MENTIONS("mmproj: cannot open GGUF file");
    CHECK_ERROR_MENTIONS(missing);
    CHECK(m == NULL);
    mp.mmproj_path = abs_path; /* a language model is not a projector */
    CHECK_STATUS(leap_model_load(model_link, &mp, &m), LEAP_ERR_MODEL_LOADING);
    CHECK_ERROR_MENTIONS("is not a multimodal projector (general.architecture is \"llama\", expected \"clip\")");
    mp.mmproj_path = NULL;
    mp.audio_decoder_path = missing;
    CHECK_STATUS(leap_model_load(model_link, &mp, &m), LEAP_ERR_IO);
    CHECK_ERROR_MENTIONS("audio decoder: cannot open GGUF file");
    /* an older caller whose struct ends before auto_detect_companion_files gets the default (on) */
    {
        leap_model_params old;
        leap_model_params_init(&old, sizeof old);
        old.struct_size = (uint32_t)offsetof(leap_model_params, auto_detect_companion_files);
        old.auto_detect_companion_files = 0; /* beyond the caller's struct: must be ignored */
        CHECK_OK(leap_model_load(model_link, &old, &m));
        if (m) {
            char *p = companion(m, LEAP_COMPANION_MMPROJ);
            CHECK(p != NULL && strcmp(p, proj) == 0);
            leap_string_free(p);
            leap_model_free(m);
        }
    }
    unlink(proj);
    unlink(proj2);
    unlink(model_link);
    rmdir(dir);
    return CHECK_SUMMARY("test_companions");
}
