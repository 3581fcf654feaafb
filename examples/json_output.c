/* Constrained generation: the answer is a JSON object valid against a JSON Schema, whatever the model.
 *
 *   json_output MODEL.gguf ["Describe a fictional person."]
 *
 * The schema compiles to a grammar that masks the model's logits at every step, so the output always
 * parses and validates; the generation ends (LEAP_FINISH_CONSTRAINT) when the value is complete. With
 * inject_schema_into_prompt (the default) the model is also told about the schema in its system prompt. */
#include <stdio.h>
#include <leap.h>

static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\",\"maxLength\":40},"
    "\"age\":{\"type\":\"integer\"},"
    "\"languages\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"maxLength\":20},\"maxItems\":3},"
    "\"employed\":{\"type\":\"boolean\"}},"
    "\"required\":[\"name\",\"age\",\"languages\",\"employed\"]}";

static int32_t print_chunk(const char *text, size_t n, void *ud) {
    (void)ud;
    fwrite(text, 1, n, stdout);
    fflush(stdout);
    return 0;
}

static void done(const leap_message *m, leap_finish_reason reason, const leap_generation_stats *s, void *ud) {
    (void)m;
    (void)ud;
    fprintf(stderr, "\n[finish reason %d, %lld tokens]\n", (int)reason, (long long)s->completion_tokens);
}

int main(int argc, char **argv) {
    leap_model *model = NULL;
    leap_conversation *conv = NULL;
    leap_message *msg = NULL;
    leap_generation_options opts;
    leap_generation_callbacks cb;
    leap_status st;

    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [prompt]\n", argv[0]);
        return 2;
    }
    if (leap_model_load(argv[1], NULL, &model) != LEAP_OK || leap_conversation_create(model, NULL, &conv) != LEAP_OK ||
        leap_message_create(LEAP_ROLE_USER, &msg) != LEAP_OK ||
        leap_message_add_text(msg, argc > 2 ? argv[2] : "Describe a fictional software engineer as JSON.") != LEAP_OK) {
        fprintf(stderr, "error: %s\n", leap_last_error());
        return 1;
    }
    leap_generation_options_init(&opts, sizeof opts);
    opts.json_schema_constraint = SCHEMA;
    opts.temperature = 0.3f;
    opts.use_rng_seed = 1;
    opts.rng_seed = 7;
    opts.max_tokens = 200;
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = print_chunk;
    cb.on_complete = done;
    st = leap_conversation_generate(conv, msg, &opts, &cb);
    if (st != LEAP_OK) fprintf(stderr, "error: %s\n", leap_last_error());
    leap_message_free(msg);
    leap_conversation_free(conv);
    leap_model_free(model);
    return st == LEAP_OK ? 0 : 1;
}
