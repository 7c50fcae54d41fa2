/* The C ABI of libgmlp_spm_shim.so, the only code that calls SentencePiece.
 *
 * Debian's libsentencepiece carries its own protobuf, which clashes with LibTorch's in one link
 * namespace (the process dies before main). The shim is therefore loaded with
 * dlmopen(LM_ID_NEWLM) into a namespace of its own (tokenizer/spm_library.h), and everything
 * that crosses the boundary is a plain C type. That namespace has its own copy of libc, so memory
 * never changes owner across the boundary: results come back through caller-supplied sinks
 * (callbacks that copy), or as pointers the caller only reads while the processor lives.
 */
#ifndef GMLP_TOKENIZER_SPM_SHIM_H_
#define GMLP_TOKENIZER_SPM_SHIM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a signature below changes; the loader refuses a shim of another version. */
#define GMLP_SPM_SHIM_ABI_VERSION 1

/* Piece types, as bits of gmlp_spm_piece_type(). */
#define GMLP_SPM_PIECE_CONTROL 1
#define GMLP_SPM_PIECE_UNKNOWN 2
#define GMLP_SPM_PIECE_BYTE 4
#define GMLP_SPM_PIECE_UNUSED 8

typedef struct GmlpSpmProcessor GmlpSpmProcessor;

/* Receives `n` ids (encode results); called once per call that produces ids. */
typedef void (*GmlpSpmIdSink)(void* user, const int32_t* ids, size_t n);
/* Receives `n` bytes (decode results). */
typedef void (*GmlpSpmByteSink)(void* user, const char* data, size_t n);
/* Supplies the next training sentence: returns 1 and sets (*data, *size), valid until the next
 * call; 0 at the end; -1 on an error the caller records itself (training then fails). */
typedef int (*GmlpSpmSentenceSource)(void* user, const char** data, size_t* size);

/* Returns GMLP_SPM_SHIM_ABI_VERSION of the built shim. */
int gmlp_spm_abi_version(void);

/* Loads a .model file; NULL on failure, with a message in err (NUL-terminated, truncated). */
GmlpSpmProcessor* gmlp_spm_load(const char* model_path, char* err, size_t err_size);
void gmlp_spm_free(GmlpSpmProcessor* processor);

/* Encodes `size` bytes of UTF-8 text to ids (no BOS/EOS) and passes them to `sink`.
 * Thread-safe for concurrent calls on one processor. Returns 0, or -1 with a message in err. */
int gmlp_spm_encode(const GmlpSpmProcessor* processor, const char* text, size_t size,
                    GmlpSpmIdSink sink, void* user, char* err, size_t err_size);

/* Decodes ids to text and passes it to `sink`. Returns 0, or -1 with a message in err. */
int gmlp_spm_decode(const GmlpSpmProcessor* processor, const int32_t* ids, size_t n,
                    GmlpSpmByteSink sink, void* user, char* err, size_t err_size);

/* Number of pieces (ids 0 .. size-1). */
int32_t gmlp_spm_piece_size(const GmlpSpmProcessor* processor);

/* The piece of `id` (not NUL-terminated; *size bytes), owned by the processor; NULL when id is
 * out of range. */
const char* gmlp_spm_id_to_piece(const GmlpSpmProcessor* processor, int32_t id, size_t* size);

/* GMLP_SPM_PIECE_* bits of `id`; 0 for a normal piece, -1 when id is out of range. */
int gmlp_spm_piece_type(const GmlpSpmProcessor* processor, int32_t id);

/* Loads a model from its serialized bytes (the contents of a .model file). */
GmlpSpmProcessor* gmlp_spm_load_serialized(const char* data, size_t size, char* err,
                                           size_t err_size);

/* The score of `id` (log probability for unigram, -rank for BPE); 0 when out of range. */
float gmlp_spm_piece_score(const GmlpSpmProcessor* processor, int32_t id);

/* Trains a model with SentencePiece's trainer. `keys`/`values` are `n` spm_train options
 * without the leading "--" (e.g. "model_prefix", "vocab_size"); the sentences come from
 * `source`. Nothing is written to disk: the serialized model (a .model file's bytes) goes to
 * `model_sink`. `seed` seeds SentencePiece's random generator; `min_log_level` 0 shows the
 * trainer's INFO log on stderr, 1 only warnings and errors. Returns 0, or -1 with a message. */
int gmlp_spm_train(const char* const* keys, const char* const* values, size_t n,
                   GmlpSpmSentenceSource source, void* source_user, GmlpSpmByteSink model_sink,
                   void* model_user, uint32_t seed, int min_log_level, char* err, size_t err_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GMLP_TOKENIZER_SPM_SHIM_H_ */
